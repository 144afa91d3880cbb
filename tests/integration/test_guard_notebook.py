"""The runtime guard in a real Jupyter kernel: a warning names the cell's line as IPython names
cells (``In[2]:3``) and shows that line of code; an exception shows the cell's call and none of
the frames of JAX or recompile_cli below it, where the guard raised."""

from __future__ import annotations

import re

import pytest
from notebook_kernel import execute

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")

SETUP = """\
import warnings
warnings.simplefilter("always")
import jax, jax.numpy as jnp
import recompile_cli

@jax.jit
def step(x):
    return x * 2
"""
WARN = """\
with recompile_cli.guard(max_compiles=1):
    step(jnp.ones(3))
    step(jnp.ones(4))
"""
RAISE = """\
with recompile_cli.guard(max_compiles=1, on="raise"):
    step(jnp.ones(5))
    step(jnp.ones(6))
"""
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guard_notebook")
    v4 = nbformat.v4
    notebook = v4.new_notebook(cells=[v4.new_code_cell(c) for c in (SETUP, WARN, RAISE)])
    execute(notebook, folder, allow_errors=True)
    return notebook.cells


def test_a_warning_names_the_cell_and_shows_its_line(cells):
    stderr = "".join(o["text"] for o in cells[1]["outputs"]
                     if o["output_type"] == "stream" and o["name"] == "stderr")
    lines = stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if "RecompileWarning" in line)
    assert lines[at].startswith("In[2]:3: RecompileWarning: recompile-cli guard: step compiled "
                                "2 times, limit 1."), stderr
    assert lines[at + 1].strip() == "step(jnp.ones(4))", stderr  # the cell's line of code
    assert "ipykernel_" not in stderr


def test_an_exception_shows_the_cell_call_and_none_of_the_tool_s_frames(cells):
    [error] = [o for o in cells[2]["outputs"] if o["output_type"] == "error"]
    assert error["ename"] == "RecompileLimitExceeded"
    shown = _COLOUR.sub("", "\n".join(error["traceback"]))
    assert "Cell In[3], line 3" in shown, shown
    assert "----> 3     step(jnp.ones(6))" in shown, shown
    frames = [line for line in shown.splitlines() if line.startswith(("File ", "Cell "))]
    assert frames == ["Cell In[3], line 3"], shown  # no frame of JAX or recompile_cli
    assert "recompile_cli" not in shown.replace("recompile_cli.guard(", ""), shown
    assert shown.rstrip().splitlines()[-1].startswith(
        "RecompileLimitExceeded: recompile-cli guard: step compiled 2 times, limit 1."), shown
