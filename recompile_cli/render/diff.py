"""The ``diff`` command's output: a note when the two sessions recorded different targets, a
per-function change table (with the equations of each function's largest program where a run
recorded them; ``-`` where it did not), the causes new in NEW, and which functions regressed.

As a terminal table or as GitHub-flavoured Markdown for a pull-request comment. Function names,
arguments, values and file names come from the two saved sessions; they are shown with control
characters escaped (``escape.terminal``) or Markdown-escaped (``escape.markdown``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recompile_cli.analysis.compare import FunctionChange, NewCause
from recompile_cli.analysis.shorten import counted
from recompile_cli.render import fit
from recompile_cli.render.escape import markdown as md
from recompile_cli.render.escape import terminal

HEADERS = ["function", "traces", "trace change", "compiles", "compile change", "compile s"]


def render_diff(changes: list[FunctionChange], new_causes: list[NewCause], old: str,
                new: str, targets: tuple[str, str] | None = None,
                markdown: bool = False, width: int | None = None) -> str:
    """The comparison of OLD and NEW; ``targets`` are the two sessions' targets. On the
    terminal the table fits ``width`` columns (default: ``fit.terminal_width``)."""
    show: Callable[[Any], str] = md if markdown else terminal
    code = (lambda text: f"`{text}`") if markdown else (lambda text: text)
    title = f"recompile-cli diff: {show(old)} -> {show(new)}"
    lines = [f"### {title}" if markdown else title, ""]
    note = target_note(*targets) if targets else None
    if note:
        lines += [f"> {show(note)}" if markdown else f"note: {note}", ""]
    yours = [c for c in changes if c.library is None]
    rows: list[list[Any]] = [
        [c.function, f"{c.traces[0]} -> {c.traces[1]}", _delta(*c.traces),
         f"{c.compiles[0]} -> {c.compiles[1]}", _delta(*c.compiles),
         f"{c.compile_seconds[0]:.3f} -> {c.compile_seconds[1]:.3f}"] for c in yours]
    headers = HEADERS
    if any(n is not None for c in yours for n in c.equations):  # private hooks, JAX >= 0.9
        headers = [*HEADERS, "equations"]
        for row, c in zip(rows, yours, strict=True):
            row.append(_equations(*c.equations))
    lines.append(fit.table((headers, rows), None if markdown else width or fit.terminal_width(),
                           show, markdown) if rows else "(no functions of yours)")
    libraries = [c for c in changes if c.library is not None]
    if libraries:
        packages = ", ".join(sorted({str(c.library) for c in libraries}))
        compiles = [sum(c.compiles[i] for c in libraries) for i in (0, 1)]
        grew = [c.function for c in libraries if c.regressed]
        lines.append(f"+ libraries ({show(packages)}): {counted(len(libraries), 'function')}, "
                     f"{compiles[0]} -> {compiles[1]} compiles"
                     + (f"; more in {show(', '.join(grew[:3]))}" + (" ..." if len(grew) > 3
                                                                      else "") if grew else ""))
    if new_causes:
        lines += ["", ("#### " if markdown else "") + "Causes new in " + show(new)]
        lines += [f"- {show(c.function)}: {code(show(c.code))}"
                  + (f" at {code(show(c.argument))}" if c.argument else "")
                  + (f": {show(c.before)} -> {show(c.after)}" if c.before or c.after else "")
                  + (f" (x{c.count})" if c.count > 1 else "") for c in new_causes]
    return "\n".join(lines) + "\n"


def target_note(old: str, new: str) -> str | None:
    """A note when OLD and NEW recorded different programs (``merge`` refuses such reports;
    ``diff`` compares them by function name, which may be what is wanted)."""
    if old.partition(" ")[0] == new.partition(" ")[0]:
        return None
    return (f"the sessions recorded different targets ({old!r} and {new!r}): functions are "
            "matched by file and name only")


def regressions(changes: list[FunctionChange]) -> list[str]:
    """``diff --fail-on-regression``'s reason: each function that compiles more often in NEW."""
    return [f"{c.function}: {counted(c.compiles[0], 'compile')} -> {c.compiles[1]}"
            f" ({c.compiles[1] - c.compiles[0]:+d})" for c in changes if c.regressed]


def regression_text(changes: list[FunctionChange]) -> str:
    """The one paragraph printed when ``--fail-on-regression`` fails (exit 1)."""
    found = regressions(changes)
    return (f"recompile-cli diff: FAILED (--fail-on-regression): "
            f"{counted(len(found), 'function')} {'compiles' if len(found) == 1 else 'compile'} "
            "more often in NEW: "
            + "; ".join(terminal(line) for line in found) + "\n")


def _equations(before: int | None, after: int | None) -> str:
    """``1,200 -> 1,500 (+25%)``; ``-`` for a run that did not record them (an older
    recompile-cli, public-only hooks)."""
    text = f"{'-' if before is None else f'{before:,}'} -> {'-' if after is None else f'{after:,}'}"
    if before and after is not None and after != before:
        text += f" ({(after - before) / before:+.0%})"
    return text


def _delta(before: int, after: int) -> str:
    return "" if before == after else f"{after - before:+d}"
