"""The IPython extension, for real: a notebook executed by a Jupyter kernel (nbclient +
ipykernel, kernel ``python3`` of this interpreter) shows the report inline."""

from __future__ import annotations

import json
import os
import re

import pytest
from jax_support import requires_private_hooks
from notebook_kernel import execute, setup

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")

SETUP = setup()

CELL_MAGIC = """\
%%recompiles --max-compiles 1
train_step(jnp.ones((32, 8)))
train_step(jnp.ones((4, 8)))   # the last, smaller batch"""

LINE_MAGIC = "%recompiles --all train_step(jnp.ones(3)); train_step(jnp.ones(6))"


def demo_notebook(save_path: str) -> object:
    """The notebook of the test (and of docs/notebook.png)."""
    v4 = nbformat.v4
    return v4.new_notebook(cells=[
        v4.new_markdown_cell("# recompile-cli in a notebook"),
        v4.new_code_cell(SETUP),
        v4.new_code_cell(CELL_MAGIC),
        v4.new_code_cell(LINE_MAGIC),
        v4.new_code_cell(f"%%recompiles --save {save_path}\ntrain_step(jnp.ones(2))\n"
                         "train_step(jnp.ones(2, dtype=jnp.int32))"),
        v4.new_code_cell("_recompiles.causes('train_step')"),
        v4.new_code_cell("%%recompiles\ntrain_step(jnp.ones(2))\nraise ValueError('boom')",
                         metadata={"tags": ["raises-exception"]}),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}})


def outputs(cell: object, mime: str) -> str:
    found = []
    for output in cell["outputs"]:  # type: ignore[index]
        data = output.get("data", {})
        if mime in data:
            found.append(data[mime])
        elif mime == "text/plain" and output.get("output_type") == "stream":
            found.append(output["text"])
    return "\n".join(found)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebook")
    saved = folder / "cell.json"
    notebook = execute(demo_notebook(str(saved)), folder)
    if os.environ.get("RECOMPILE_CLI_KEEP_NOTEBOOK"):  # for docs/notebook.png
        nbformat.write(notebook, os.environ["RECOMPILE_CLI_KEEP_NOTEBOOK"])
    return notebook, saved


@requires_private_hooks
def test_cell_magic_shows_the_report_and_the_gate_inline(executed):
    notebook, _ = executed
    cell = notebook.cells[2]
    html = outputs(cell, "text/html")
    assert "train_step" in html and "shape" in html
    assert "f32[32,8] -&gt; f32[4,8]" in html
    assert "Gate FAILED" in html and "2 compiles, budget 1" in html
    assert "Suggestions" in html and "drop_last" in html
    assert "In[2], line 3" in html  # the cell's own line, as IPython labels it
    # the summary leads with your function: its compiles, then first compiles and re-compiles
    assert re.search(r'<div class="stat"><b>2</b><span>your compiles</span></div><div '
                     r'class="stat"><b>1</b><span>re-compiles</span></div>', html)
    assert "<li>train_step: 2 compiles, 1 re-compile (shape)</li>" in html
    text = outputs(cell, "text/plain")
    assert "Re-compilations by cost" in text and "shape" in text
    assert "train_step: 2 compiles, 1 re-compile (shape)" in text.splitlines()


@requires_private_hooks
def test_line_magic_records_one_statement(executed):
    notebook, _ = executed
    html = outputs(notebook.cells[3], "text/html")
    assert "train_step" in html and "shape" in html and "f32[3] -&gt; f32[6]" in html
    assert "Gate FAILED" not in html
    assert "owner" in html  # --all lists JAX's functions with their owner


@requires_private_hooks
def test_save_and_last_report(executed):
    notebook, saved = executed
    html = outputs(notebook.cells[4], "text/html")
    assert "dtype" in html
    data = json.loads(saved.read_text())
    assert any(e["function"] == "train_step" for e in data["events"])
    assert outputs(notebook.cells[5], "text/plain") == "['first_compile', 'dtype']"


def test_an_exception_in_the_cell_is_reported_then_raised(executed):
    notebook, _ = executed
    cell = notebook.cells[6]
    assert "The recorded code raised" in outputs(cell, "text/html")
    errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] == "ValueError"
