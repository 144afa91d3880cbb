"""The "Compile cost" section of each report format, from ``analysis.compile_cost``.

Terminal and Markdown (``text_section``, laid out by ``render.table``), HTML with a CSS bar per
line (``html_section``: no script, no network), and the JSON report's ``compile_cost`` field
(``json_section``). Per function of yours: its largest compile's equations, lowered operations
and constants, its top lines by equations with the compile seconds apportioned to them, then
the patterns with their fix and saving. Values from the session go through the format's escape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from recompile_cli.analysis.compile_cost import CompileCostReport, size_text
from recompile_cli.analysis.report import Report
from recompile_cli.analysis.shorten import counted
from recompile_cli.render.fit import Table
from recompile_cli.session.locations import display

TITLE = "Compile cost"
HEADERS = ["function", "line", "equations", "share", "est. compile s", "repeats"]


def section(report: Report) -> CompileCostReport:
    return report.compile_cost


def summary(cost: CompileCostReport) -> list[str]:
    """One sentence per function: its compiles, seconds, equations, operations, constants."""
    out = []
    for f in cost.functions:
        ops = (f", {'at least ' if f.module_ops_bounded else ''}{f.module_ops:,} lowered "
               "operations" if f.module_ops is not None else "")
        consts = (f", {counted(f.constants, 'constant')} of {size_text(f.constants_bytes)}"
                  if f.constants else "")
        capped = (f"; lines attributed for the first {f.walked:,} equations only (a bound on "
                  "the work for huge programs)" if f.capped else "")
        bodies = (f" ({f.in_bodies:,} in loop or branch bodies, each body counted once)"
                  if f.in_bodies else "")
        out.append(f"{f.function}: {counted(f.compiles, 'compile')}, "
                   f"{f.compile_seconds:.3f} s; largest program {f.equations:,} "
                   f"equations{bodies}{ops}{consts}{capped}")
    return out


def line_table(cost: CompileCostReport) -> Table:
    rows: list[list[Any]] = []
    for f in cost.functions:
        for line in f.lines:
            rows.append([f.function, display(line.location), line.equations,
                         f"{line.share:.0%}", line.seconds, line.repeats or ""])
    return HEADERS, rows


def text_section(report: Report, heading: str, bullet: str, text: Callable[[Any], str],
                 prose: Callable[[Any], str], table: Callable[[Table], str],
                 wrap: Callable[[list[str]], list[str]]) -> list[str]:
    """The section's lines for the terminal or Markdown (empty when there is nothing to say);
    ``wrap`` fits sentences to the width."""
    cost = section(report)
    if cost.note:
        return ["", heading.format(TITLE), *wrap([prose(cost.note)])]
    if not cost.functions:
        return []
    lines = ["", heading.format(TITLE)]
    lines += wrap([f"{bullet}{text(line)}" for line in summary(cost)])
    lines += ["", table(line_table(cost))]
    if cost.patterns:
        lines += ["", *wrap([f"{bullet}{prose(p.message)}" for p in cost.patterns])]
    return lines


def html_section(report: Report, escape: Callable[[Any], str],
                 prose: Callable[[str], str]) -> list[str]:
    """The section as HTML: a table per function with a bar per line (CSS widths)."""
    cost = section(report)
    if cost.note:
        return [f"<h2>{TITLE}</h2>", f'<p class="hidden">{prose(cost.note)}</p>']
    if not cost.functions:
        return []
    out = [f"<h2>{TITLE}</h2>", '<ul class="cost-summary">' + "".join(
        f"<li>{escape(line)}</li>" for line in summary(cost)) + "</ul>"]
    for f in cost.functions:
        rows = "".join(
            f"<tr><td>{escape(display(line.location))}</td>"
            f'<td class="num">{line.equations:,}</td>'
            f'<td class="bar"><span style="display:inline-block;height:0.8em;'
            f'background:#c0392b;width:{max(line.share * 100, 0.5):.1f}%"></span> '
            f"{line.share:.0%}</td>"
            f'<td class="num">{line.seconds:.3f}</td>'
            f'<td class="num">{line.repeats or ""}</td></tr>'
            for line in f.lines)
        out.append(f'<table class="cost" id="cost-{escape(f.function)}"><caption>'
                   f'{escape(f.function)}</caption><thead><tr><th scope="col">line</th>'
                   '<th scope="col" class="num">equations</th>'
                   '<th scope="col" style="width:40%">share</th>'
                   '<th scope="col" class="num">est. compile s</th>'
                   '<th scope="col" class="num">repeats</th>'
                   f"</tr></thead><tbody>{rows}</tbody></table>")
    if cost.patterns:
        out.append('<ul class="cost-patterns">' + "".join(
            f"<li>{prose(p.message)}</li>" for p in cost.patterns) + "</ul>")
    return out


def json_section(report: Report) -> dict[str, Any]:
    """The JSON report's ``compile_cost``: functions (with lines), patterns, note."""
    cost = section(report)
    return {"functions": [dataclasses.asdict(f) for f in cost.functions],
            "patterns": [dataclasses.asdict(p) for p in cost.patterns], "note": cost.note}
