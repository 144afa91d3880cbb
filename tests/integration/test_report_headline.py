"""What the reports count and show first, on real JAX: a trace that raised is no re-compile, a
library's function that did not compile is in no count of re-compilations, the headline names
your functions before JAX's, and paths below the working folder are relative."""

from __future__ import annotations

import re
import sys

from helpers import on_python_path, user_events
from jax_support import requires_private_hooks


def _run(cli, program, tmp_path, source, *options):
    return cli.json("run", *options, program("prog", source), tmp_path=tmp_path)


@requires_private_hooks
def test_a_trace_that_raised_is_listed_as_an_error_not_as_a_shape_recompile(
        cli, program, tmp_path):
    result, report = _run(cli, program, tmp_path, """
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x):
            return x.reshape(4)
        f(jnp.ones(4))
        try:
            f(jnp.ones(5))  # cannot reshape 5 values into 4: the trace raises
        except TypeError:
            pass
    """)
    assert [e["error"]["type"] if e["error"] else None for e in user_events(report, "f")] == [
        None, "TypeError"]
    assert report["cause_table"] == []
    assert "Re-compilations by cost" not in result.stdout
    assert "f: 1 compile, 1 trace raised (TypeError)" in result.stdout.splitlines()
    user = report["totals"]["by_owner"]["user"]
    assert (user["compiles"], user["recompiles"], user["errors"]) == (1, 0, 1)


@requires_private_hooks
def test_re_traces_that_compiled_nothing_claim_no_executable(cli, program, tmp_path):
    """``.trace()`` and ``jax.eval_shape`` trace and compile nothing: no executable was made,
    let alone reused; the headline says the re-traces compiled nothing."""
    result, report = _run(cli, program, tmp_path, """
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x):
            return x * 2
        for n in (2, 3, 4):
            f.trace(jax.ShapeDtypeStruct((n,), jnp.float32))
        jax.eval_shape(f, jax.ShapeDtypeStruct((5,), jnp.float32))
    """)
    assert [(e["compiled"], e["cause"]["code"]) for e in user_events(report, "f")] == [
        (False, "first_compile"), (False, "shape"), (False, "shape"), (False, "shape")]
    assert "f: 0 compiles, 3 re-traces that compiled nothing (shape)" in result.stdout.splitlines()
    assert "executable" not in result.stdout


@requires_private_hooks
def test_a_library_function_that_did_not_compile_is_in_no_count(
        cli, program, tmp_path, monkeypatch):
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(
        "import jax\n"
        "@jax.jit\n"
        "def helper(x):\n"
        "    return x * 2\n"
        "def warm(x):\n"
        "    return helper.trace(x)  # traced, nothing compiled\n")
    on_python_path(monkeypatch, str(lib.parent))
    monkeypatch.delitem(sys.modules, "fakelib", raising=False)  # another test's fakelib
    result, report = _run(cli, program, tmp_path, """
        import jax, jax.numpy as jnp, fakelib
        @jax.jit
        def step(x):
            return x + 1
        fakelib.helper(jnp.ones(3))
        fakelib.warm(jnp.ones(4))
        step(jnp.ones(3))
    """)
    helper = [e for e in report["events"] if e["function"] == "helper"]
    assert [(e["compiled"], e["cause"]["code"]) for e in helper] == [
        (True, "first_compile"), (False, "shape")]
    assert report["cause_table"] == []  # helper's re-trace compiled nothing
    lines = result.stdout.splitlines()
    assert "step: 1 compile, no re-compile" in lines
    others = next(line for line in lines if line.startswith("not yours: "))
    assert "fakelib 1 compile of 1 function" in others
    assert "+ fakelib: 1 internal function (1 compiled): 2 traces, 1 compile" in result.stdout
    assert report["totals"]["by_owner"]["library"]["compiles"] == 1


@requires_private_hooks
def test_advice_and_locations_name_paths_relative_to_the_working_folder(
        cli, program, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, report = _run(cli, program, tmp_path, """
        import jax, jax.numpy as jnp
        @jax.jit
        def step(x):
            return x * 2
        for n in (3, 4, 5):
            step(jnp.ones(n))
    """)
    assert report["suggestions"]
    for fmt in ("table", "markdown", "html"):
        shown = cli("report", tmp_path / "report-0.json", "--format", fmt).stdout
        assert str(tmp_path) not in shown, fmt
        assert re.search(r"prog\.py:\d+", shown), fmt
