"""The ``diff`` command's output: a per-function change table and the causes new in NEW."""

from __future__ import annotations

from tabulate import tabulate

from recompile_cli.gate.diff import FunctionChange, NewCause


def render_diff(changes: list[FunctionChange], new_causes: list[NewCause], old: str,
                new: str) -> str:
    lines = [f"recompile-cli diff: {old} -> {new}", ""]
    rows = [[c.function, f"{c.traces[0]} -> {c.traces[1]}", _delta(*c.traces),
             f"{c.compiles[0]} -> {c.compiles[1]}", _delta(*c.compiles),
             f"{c.compile_seconds[0]:.3f} -> {c.compile_seconds[1]:.3f}"] for c in changes]
    lines.append(tabulate(rows, headers=["function", "traces", "", "compiles", "",
                                         "compile s"]) if rows else "(no functions)")
    if new_causes:
        lines += ["", "Causes new in " + new]
        lines += [f"- {c.function}: {c.code}" + (f" at {c.argument}" if c.argument else "")
                  + (f": {c.before} -> {c.after}" if c.before or c.after else "")
                  + (f" (x{c.count})" if c.count > 1 else "") for c in new_causes]
    return "\n".join(lines) + "\n"


def _delta(before: int, after: int) -> str:
    return "" if before == after else f"{after - before:+d}"
