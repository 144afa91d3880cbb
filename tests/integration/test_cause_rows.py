"""The cost-ranked cause table shows every change of a compile: a static value and a weak type
changed in one call are one row naming both (``CauseRow.also``), in the terminal table, JSON and
CSV; compiles whose other changes differ are rows of their own."""

from __future__ import annotations

import pandas as pd
import pytest
from jax_support import requires_private_hooks

# `mode` is static; `s` is a jnp.float32 in the first call and a Python float (weakly typed) in
# the second, which also changes `mode`; the third changes `mode` alone.
STATIC_AND_WEAK = """
    import functools, jax, jax.numpy as jnp

    @functools.partial(jax.jit, static_argnames=("mode",))
    def scale(x, s, mode):
        return x * s * (2 if mode == "a" else 3)

    scale(jnp.ones(3), jnp.float32(1.0), mode="a")
    scale(jnp.ones(3), 2.0, mode="b")
    scale(jnp.ones(3), 2.0, mode="c")
"""


@pytest.fixture
def script(program):
    return program("static_and_weak", STATIC_AND_WEAK)


@requires_private_hooks
def test_a_static_and_a_weak_type_change_in_one_call_are_both_in_the_json(cli, script, tmp_path):
    result, report = cli.json("run", "--format", "json", script, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    rows = sorted((r for r in report["cause_table"] if r["function"] == "scale"),
                  key=lambda r: r["first_event"])  # ranked by seconds: either may lead
    assert [(r["code"], r["argument"], r["values"], r["also"]) for r in rows] == [
        ("static_value", "mode", "'a' -> 'b'",
         [{"code": "weak_type", "argument": "s", "values": "f32[] -> ~f32[]"}]),
        ("static_value", "mode", "'b' -> 'c'", []),
    ], rows
    assert sum(r["count"] for r in rows) == 2  # two re-compiles, neither counted twice


@requires_private_hooks
def test_the_terminal_table_lists_the_weak_type_under_the_static_value(cli, script, monkeypatch):
    monkeypatch.chdir(script.parent)
    monkeypatch.setenv("COLUMNS", "100")
    result = cli("run", script)
    assert result.exit_code == 0, result.output
    table = result.stdout.split("Re-compilations by cost\n", 1)[1].split("\n\n", 1)[0]
    lines = table.splitlines()[2:]
    first = next(i for i, line in enumerate(lines) if "'a' -> 'b'" in line)
    assert lines[first].split()[:4] == ["x1", "static_value", "scale", "mode"], table
    assert lines[first + 1].split() == ["+", "weak_type", "s", "f32[]", "->", "~f32[]"], table
    assert sum(line.split()[0].startswith("x") for line in lines) == 2, table


@requires_private_hooks
def test_causes_csv_has_the_other_changes(cli, script, tmp_path):
    out = tmp_path / "csv"
    result = cli("run", "--format", "csv", "--output", f"{out}/", script)
    assert result.exit_code == 0, result.output
    causes = pd.read_csv(out / "causes.csv", keep_default_na=False)
    both = causes[causes["values"] == "'a' -> 'b'"].iloc[0]
    assert (both["code"], both["argument"], both["also"]) == (
        "static_value", "mode", "weak_type s: f32[] -> ~f32[]")
    assert causes[causes["values"] == "'b' -> 'c'"].iloc[0]["also"] == ""
