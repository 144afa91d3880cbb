"""The ``diff`` command's output: a per-function change table and the causes new in NEW.

Function names, arguments, values and file names come from the two saved sessions; they are
shown with control characters escaped (``escape.terminal``)."""

from __future__ import annotations

from tabulate import tabulate

from recompile_cli.analysis.compare import FunctionChange, NewCause
from recompile_cli.render.escape import terminal as show

HEADERS = ["function", "traces", "trace change", "compiles", "compile change", "compile s"]


def render_diff(changes: list[FunctionChange], new_causes: list[NewCause], old: str,
                new: str) -> str:
    lines = [f"recompile-cli diff: {show(old)} -> {show(new)}", ""]
    rows = [[show(c.function), f"{c.traces[0]} -> {c.traces[1]}", _delta(*c.traces),
             f"{c.compiles[0]} -> {c.compiles[1]}", _delta(*c.compiles),
             f"{c.compile_seconds[0]:.3f} -> {c.compile_seconds[1]:.3f}"] for c in changes]
    lines.append(tabulate(rows, headers=HEADERS, disable_numparse=True) if rows
                 else "(no functions)")
    if new_causes:
        lines += ["", "Causes new in " + show(new)]
        lines += [f"- {show(c.function)}: {show(c.code)}"
                  + (f" at {show(c.argument)}" if c.argument else "")
                  + (f": {show(c.before)} -> {show(c.after)}" if c.before or c.after else "")
                  + (f" (x{c.count})" if c.count > 1 else "") for c in new_causes]
    return "\n".join(lines) + "\n"


def _delta(before: int, after: int) -> str:
    return "" if before == after else f"{after - before:+d}"
