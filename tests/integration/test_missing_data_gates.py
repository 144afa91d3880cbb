"""Missing data fails a gate that needs it (issue 29), on real programs: a program of 250,000
lowered operations (past the compile-cost walk's bound, where an exception raised inside MLIR's
C++ walk callback used to drop the whole cost record and let ``max_equations: 1000`` pass on
125,000 equations) is gated on its equations and shown with "at least 200,000 lowered
operations" in every format and after the events-log round trip; a real baseline of 0
equations is compared, not skipped; a baseline value out of range is exit 2 naming the field,
not a traceback."""

from __future__ import annotations

import json
import textwrap

import pandas as pd
from helpers import budget
from jax_support import requires_private_hooks

from recompile_cli.capture.jax.programs.cost import MODULE_OP_LIMIT

# Each lax.add of a scalar lowers to 2 operations (the add and its constant): 250,000 in all.
# ``* 0`` lets XLA fold the chain away, so the compile stays short (the lowering is the work).
BIG = """
import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def chain(x):
    one = jnp.ones((), x.dtype)
    for _ in range(125_000):
        x = lax.add(x, one)
    return x * 0


chain(jnp.ones((), jnp.int32))
"""


@requires_private_hooks
def test_a_program_past_the_walks_bound_is_gated_on_its_equations(cli, tmp_path):
    (tmp_path / "big.py").write_text(BIG)
    log, tables = tmp_path / "big.jsonl", tmp_path / "tables"
    tables.mkdir()
    result = cli("run", "--events-log", log, "-f", "csv", "-o", tables, tmp_path / "big.py")
    assert result.exit_code == 0, result.output
    shown = f"largest program 125,001 equations, at least {MODULE_OP_LIMIT:,} lowered operations"
    assert shown in result.output
    events = pd.read_csv(tables / "events.csv")
    row = events[(events["function"] == "chain") & events["compiled"]].iloc[0]
    assert (row["equations"], row["module_ops"], row["module_ops_bounded"]) == (
        125_001, MODULE_OP_LIMIT, True)
    again = cli("report", log)  # the events log keeps the bound
    assert again.exit_code == 0 and shown in again.output
    report = json.loads(cli("report", "-f", "json", log).stdout)
    (chain,) = [f for f in report["compile_cost"]["functions"] if f["function"] == "chain"]
    assert (chain["module_ops"], chain["module_ops_bounded"]) == (MODULE_OP_LIMIT, True)
    path = budget(tmp_path, "targets:\n  - script: big.py\n    budgets:\n"
                            "      chain: {max_equations: 1000}\n")
    check = cli("check", path)
    assert check.exit_code == 1, check.output
    assert "chain: a compiled program of 125,001 jaxpr equations, budget 1,000" in check.output
    assert "produced at least 50,000 of them" in check.output  # attribution's own bound
    assert "125,001 / 1000" in check.output and "FAIL" in check.output


STEP = """
import os
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    for _ in range(int(os.environ.get("STEP_OPS", "0"))):
        x = jnp.sin(x)
    return x


step(jnp.ones(3))
"""


@requires_private_hooks
def test_a_zero_equation_baseline_fails_a_run_of_forty(cli, tmp_path, monkeypatch):
    """An identity function has 0 equations: its baseline says so, and a run of 40 is a
    regression of more than any percent, not a comparison skipped because 0 is falsy."""
    program, base = tmp_path / "prog.py", tmp_path / "base.json"
    program.write_text(STEP)
    monkeypatch.setenv("STEP_OPS", "0")
    assert cli("run", "--save-baseline", base, program).exit_code == 0
    assert json.loads(base.read_text())["functions"]["prog.py:step"]["equations"] == 0
    monkeypatch.setenv("STEP_OPS", "40")
    result = cli("run", "--baseline", base, "--fail-on-compile-regression", "10", program)
    assert result.exit_code == 1, result.output
    assert "prog.py:step: 40 equations, baseline 0 (from 0, more than 10%)" in result.output
    monkeypatch.setenv("STEP_OPS", "0")
    same = cli("run", "--baseline", base, "--fail-on-compile-regression", "10", program)
    assert same.exit_code == 0, same.output


def test_a_baseline_value_out_of_range_is_exit_2_naming_the_field(cli, program, tmp_path):
    prog = program("prog", "from pathlib import Path\nPath(__file__).with_name('ran').touch()\n")
    base = tmp_path / "base.json"
    counts = '{"traces": 1, "compiles": 1, "compile_seconds": 0.1, "equations": %s}'
    for value, words in ((str(10 ** 400), "expected `int` <= 1000000000000"),
                         ("-3", "expected `int` >= 0")):
        base.write_text(textwrap.dedent(f"""
            {{"kind": "recompile-cli-baseline", "schema_version": 1,
              "environment": {{"jax_version": "0.10.2", "backend": "cpu"}},
              "functions": {{"prog.py:step": {counts % value}}}}}"""))
        result = cli("run", "--baseline", base, "--fail-on-compile-regression", "10", prog)
        assert result.exit_code == 2, result.output
        assert "field functions[...].equations" in result.output and words in result.output
        assert "Traceback" not in result.output and not prog.with_name("ran").exists()
    base.write_text('{"kind": "recompile-cli-baseline", "schema_version": 1, '
                    '"environment": {}, "functions": {"prog.py:step": {"traces": 1}}}')
    result = cli("run", "--baseline", base, prog)
    assert result.exit_code == 2 and "missing required field `compiles`" in result.output
