"""Renderers: each turns a ``Report`` into text. Pick one by name or by output file extension."""

from __future__ import annotations

import json
from collections.abc import Callable

from recompile_cli.analysis.report import Report
from recompile_cli.render import chrome_trace, csv, html, json_report, table
from recompile_cli.render.escape import finite


def _strict_json(report: Report, show_all: bool = False) -> str:
    """The JSON report with any NaN or infinity (a location pandas left missing, a time from an
    edited session) written as ``null``: ``NaN`` is not JSON, and strict readers reject it."""
    text = json_report.render(report, show_all=show_all)
    if "NaN" not in text and "Infinity" not in text:
        return text
    return json.dumps(finite(json.loads(text)), indent=2, allow_nan=False) + "\n"


RENDERERS: dict[str, Callable[..., str]] = {
    "table": table.render,
    "json": _strict_json,
    "markdown": table.render_markdown,
    "csv": csv.render,
    "chrome-trace": chrome_trace.render,
    "html": html.render,
}
_EXTENSIONS = {".trace.json": "chrome-trace", ".json": "json", ".txt": "table",
               ".md": "markdown", ".csv": "csv", ".html": "html", ".htm": "html"}


def guess_format(path: str | None) -> str | None:
    """The format implied by an output file's extension, if any."""
    if not path:
        return None
    for extension, name in _EXTENSIONS.items():
        if str(path).lower().endswith(extension):
            return name
    return None


def render(report: Report, fmt: str, show_all: bool = False) -> str:
    return RENDERERS[fmt](report, show_all=show_all)
