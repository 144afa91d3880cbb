"""The "Compiles at your lines" section of each report format, from ``analysis.eager_lines``:
the lines of yours that compiled code not yours (JAX's eager operations, the functions JAX and
libraries jit themselves), most compiles first.

Terminal and Markdown (``text_section``, laid out by ``render.table``), HTML (``html_section``)
and the JSON report's ``eager_lines`` field (``json_section``); the CSV file and the DataFrame
are ``analysis.dataframes.eager_lines_frame``'s. Per line: its compiles, how many were again for
new inputs, their seconds, and its operations with their compiles; a line that storms is marked
(its fix is among the report's suggestions); with no storm the terminal and Markdown show one
summary line instead (``--all``: the table). The headline's storm line is ``storm_lines``.
Values from the session go through the format's escape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from recompile_cli.analysis.eager_lines import STORM, EagerLine, EagerReport, LineOp
from recompile_cli.analysis.report import Report, package_of, shown_name
from recompile_cli.analysis.shorten import counted
from recompile_cli.render.fit import Table
from recompile_cli.session.locations import display, relative
from recompile_cli.session.model import CauseCode

TITLE = "Compiles at your lines (eager operations, library functions)"
HEADERS = ["line", "compiles", "again", "seconds", "operations", "storm"]
LISTED = 10  # lines listed (every line with --all, up to MAX_ROWS)
MAX_ROWS = 30
_OPS_SHOWN = 3
_REPEAT: dict[CauseCode | None, str] = {CauseCode.SHAPE: "new sizes",
                                         CauseCode.NEW_FUNCTION: "a new function each call"}


def _op_label(op: LineOp) -> str:
    return shown_name(op.name, str(op.owner), package_of(op.owner, op.defined_at))


def operations(line: EagerLine) -> str:
    """``gather 17, add 17, +4 more`` (each operation with its compiles at the line)."""
    shown = [f"{_op_label(op)} {op.compiles}" for op in line.ops[:_OPS_SHOWN]]
    if len(line.ops) > _OPS_SHOWN:
        shown.append(f"+{len(line.ops) - _OPS_SHOWN} more")
    return ", ".join(shown)


def _listed(eager: EagerReport, show_all: bool) -> tuple[EagerLine, ...]:
    return eager.lines[:MAX_ROWS if show_all else LISTED]


def rows(report: Report, show_all: bool = False) -> Table:
    return HEADERS, [[display(line.line), line.compiles, line.again, line.seconds,
                      operations(line), "yes" if line.storm else ""]
                     for line in _listed(report.eager_lines, show_all)]


def storm_lines(eager: EagerReport, shown: int = 2) -> list[str]:
    """The headline's lines, one per line of yours that storms (the most compiling ``shown``):
    ``eager storm at storm.py:6 (log_episodes): 102 compiles of code not yours (1.812 s), 96
    of them again (gather, add: new sizes)``."""
    out = []
    for line in eager.storms[:shown]:
        storming = line.storming
        names = [op.name for op in storming[:2]]
        more = len(storming) - len(names)
        why = sorted({_REPEAT.get(op.code, "again") for op in storming})
        text = (f"eager storm at {relative(line.line)}: {counted(line.compiles, 'compile')} of "
                f"code not yours ({line.seconds:.3f} s), {line.storm_again} of them again ("
                + ", ".join(names) + (f", +{more} more" if more else "")
                + ": " + ", ".join(why) + ")")
        if line.host_callback:
            text += f", in {line.host_callback}"
        out.append(text)
    if len(eager.storms) > shown:
        rest = eager.storms[shown:]
        out.append(f"... {counted(len(rest), 'more line')} storm: "
                   f"{counted(sum(line.compiles for line in rest), 'compile')}")
    return out


def summary(eager: EagerReport) -> str | None:
    """``+ eager: 14 compiles of code not yours at 5 lines of yours (1.741 s to trace, lower
    and compile); the most at train.py:19 (init_params) with 4 (--all lists them)``: the
    section's one line when no line storms."""
    if not eager.lines:
        return None
    top = max(eager.lines, key=lambda line: line.compiles)  # the first of the most compiles
    return (f"+ eager: {counted(eager.compiles, 'compile')} of code not yours at "
            f"{counted(len(eager.lines), 'line')} of yours ({eager.seconds:.3f} s to trace, "
            f"lower and compile); the most at {relative(top.line)} with {top.compiles} "
            "(--all lists them)")


def shows_table(eager: EagerReport, show_all: bool) -> bool:
    """The table is shown when a line storms, or with ``--all``."""
    return bool(eager.lines) and (show_all or bool(eager.storms))


def _more(eager: EagerReport, show_all: bool) -> str | None:
    hidden = eager.lines[len(_listed(eager, show_all)):]
    if not hidden:
        return None
    return (f"+ {counted(len(hidden), 'more line')}: "
            f"{counted(sum(line.compiles for line in hidden), 'compile')}, "
            f"{sum(line.seconds for line in hidden):.3f} s"
            + ("" if show_all else " (--all lists them)"))


def _heading() -> str:
    return (f"{TITLE}; a line storms when one operation compiles {STORM} times or more there, "
            "for new sizes of the same inputs or for a new function each call")


def text_section(report: Report, show_all: bool, heading: str, text: Callable[[Any], str],
                 table: Callable[[Table], str], wrap: Callable[[list[str]], list[str]]
                 ) -> list[str]:
    """The section's lines for the terminal or Markdown (empty when no line of yours compiled
    code not yours); ``wrap`` fits sentences to the width."""
    eager = report.eager_lines
    if not shows_table(eager, show_all):
        return []  # its summary line is under the functions (``render.table``)
    lines = ["", heading.format(text(TITLE)), table(rows(report, show_all))]
    more = _more(report.eager_lines, show_all)
    if more is not None:
        lines += wrap([text(more)])
    return lines


def html_section(report: Report, show_all: bool, escape: Callable[[Any], str],
                 table: Callable[[Table, str], str]) -> list[str]:
    """The section as HTML: the table of lines."""
    found = rows(report, show_all)
    if not found[1]:
        return []
    out = [f"<h2>{escape(TITLE)}</h2>", f'<p class="hidden">{escape(_heading())}</p>',
           table(found, "eager-lines")]
    more = _more(report.eager_lines, show_all)
    if more is not None:
        out.append(f'<p class="hidden">{escape(more)}</p>')
    return out


def json_section(report: Report) -> dict[str, Any]:
    """The JSON report's ``eager_lines``: the totals, the storm threshold, and every line with
    its operations (``EagerLine``, ``storm`` included)."""
    eager = report.eager_lines
    return {"compiles": eager.compiles, "seconds": eager.seconds, "storm_compiles": STORM,
            "lines": [{**dataclasses.asdict(line), "storm": line.storm,
                       "again_seconds": line.again_seconds} for line in eager.lines]}
