"""The notebook's rough edges (issue 24), in a real kernel: a raising ``%%recompiles`` cell's
traceback shows the cell's frames and not the magic's, ``to_pandas()`` names cells ``In[n]``
like the inline report, and ``--keep-caches`` after a real re-compile does not claim "No
re-compilation"."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest
from jax_support import requires_private_hooks
from notebook_kernel import execute

SETUP = "%load_ext recompile_cli\nimport jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2)"


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    v4 = nbformat.v4
    notebook = v4.new_notebook(cells=[
        v4.new_code_cell(SETUP),
        v4.new_code_cell("%%recompiles\nf(jnp.ones(2))\nraise ValueError('boom')",
                         metadata={"tags": ["raises-exception"]}),
        v4.new_code_cell("list(_recompiles.to_pandas().events['call_site'])"),
        v4.new_code_cell("f(jnp.ones(3))"),
        v4.new_code_cell("%%recompiles --keep-caches\nf(jnp.ones(7))"),
        v4.new_code_cell("%%recompiles\nf(jnp.ones(11))\nf(jnp.ones(12))"),
        v4.new_code_cell("[(v.call_site, v.message) for v in "
                         "_recompiles.check(max_compiles=1).violations]"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}})
    return execute(notebook, tmp_path_factory.mktemp("polish")).cells


def _output(cell, kind: str) -> str:
    for output in cell["outputs"]:
        if kind == "error" and output.get("output_type") == "error":
            return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output["traceback"]))
        if kind in output.get("data", {}):
            return output["data"][kind]
    return ""


@requires_private_hooks
def test_a_raising_cell_shows_its_own_frames_not_the_magics(cells):
    traceback = _output(cells[1], "error")
    assert "Cell In[2], line 3" in traceback and "ValueError: boom" in traceback
    assert "notebook.py" not in traceback and "_run_recorded" not in traceback
    assert "recompile-cli" in _output(cells[1], "text/html")  # the report came first


@requires_private_hooks
def test_to_pandas_names_cells_as_the_inline_report_does(cells):
    sites = _output(cells[2], "text/plain")
    assert "In[2], line 2 (<module>)" in sites and "ipykernel_" not in sites


@requires_private_hooks
def test_keep_caches_after_a_real_recompile_does_not_say_no_recompilation(cells):
    html = _output(cells[4], "text/html")
    assert "No re-compilation of your functions.</p>" not in html.replace(
        "No re-compilation of your functions inside", "")
    assert "JAX&#x27;s caches were kept" in html or "JAX's caches were kept" in html
    assert "keep_caches" in html  # the warning says why a first compile may be a re-compile


@requires_private_hooks
def test_a_violation_in_a_notebook_names_the_cell_as_ipython_does(cells):
    """``Violation.call_site`` and its message say ``In[6], line 3``, not the kernel's
    temporary file (issue 33)."""
    [(site, message)] = ast.literal_eval(_output(cells[6], "text/plain"))
    assert site == "In[6], line 3 (<module>)"
    assert "(In[6], line 3 (<module>))" in message and "ipykernel_" not in message
