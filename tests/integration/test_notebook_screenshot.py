"""A picture of the recompiles magics in a real notebook: the demo notebook of
``test_notebook.py`` is executed in a real kernel, each cell's source and outputs are laid out
as a page (as Jupyter shows them: the source, then the HTML report or the text), and headless
Chromium screenshots it into the tests' artifacts (``UPDATE_GOLDEN=1`` also refreshes
``docs/notebook.png``). Skips without Chromium."""

from __future__ import annotations

import html
import shutil
import subprocess

import pytest
from helpers import ROOT
from jax_support import requires_private_hooks
from notebook_kernel import execute
from test_notebook import demo_notebook
from test_reports import ARTIFACTS, UPDATE, _browser, _chromium


def _page(notebook) -> str:
    """The executed notebook as one HTML page: each code cell's source, then its outputs."""
    parts = ['<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
             "body{font:14px system-ui,sans-serif;margin:20px;max-width:1040px}"
             "pre.src{background:#f5f5f5;border:1px solid #ddd;padding:6px 8px;margin:14px 0 4px}"
             "pre.out{margin:4px 0}</style></head><body>"]
    for index, cell in enumerate(notebook.cells):
        if cell["cell_type"] != "code":
            continue
        parts.append(f'<pre class="src">In [{index}]: {html.escape(cell["source"])}</pre>')
        for output in cell["outputs"]:
            data = output.get("data", {})
            if "text/html" in data:
                parts.append(data["text/html"])
            elif "text/plain" in data:
                parts.append(f'<pre class="out">{html.escape(data["text/plain"])}</pre>')
            elif output.get("output_type") == "stream":
                parts.append(f'<pre class="out">{html.escape(output["text"])}</pre>')
            elif output.get("output_type") == "error":
                parts.append(f'<pre class="out">{html.escape(output["ename"])}: '
                             f'{html.escape(output["evalue"])}</pre>')
    return "".join(parts) + "</body></html>"


@requires_private_hooks
@pytest.mark.skipif(_chromium() is None, reason="needs the Debian package chromium")
def test_a_screenshot_of_the_magics_in_a_real_notebook(tmp_path, monkeypatch):
    notebook = execute(demo_notebook(str(tmp_path / "cell.json")), tmp_path)
    page = tmp_path / "notebook.html"
    page.write_text(_page(notebook))
    assert "Gate FAILED" in page.read_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "notebook.png"
    shot.unlink(missing_ok=True)
    subprocess.run([*_browser(tmp_path / "chromium-profile"), "--window-size=1100,1800",
                    f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, check=False, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if UPDATE:
        shutil.copy(shot, ROOT / "docs" / "notebook.png")
