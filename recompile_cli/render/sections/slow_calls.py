"""The "Slow calls" section of each report format, from ``analysis.slow_calls``.

Terminal and Markdown (``text_section``, laid out by ``render.table``), HTML (``html_section``)
and the JSON report's ``slow_calls`` field (``json_section``); the CSV file and the DataFrame
are ``analysis.dataframes.slow_calls_frame``'s. Per group of your functions' slow calls (one
per function, line responsible and reason, whatever its signatures): the calls, the reason
code, the line responsible, the call site, the seconds per call and the seconds avoidable;
then each group's reason in words with its fix, JAX's and libraries' groups
summed up in one line, and the functions whose arguments are slow to flatten. What a recording
could not see is said instead of a zero. Values from the session go through the format's escape.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from recompile_cli.analysis.report import Report, package_of, shown_name
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.slow_calls import SlowCallReport, SlowGroup
from recompile_cli.render.fit import Table
from recompile_cli.session.locations import display
from recompile_cli.session.model import Owner

TITLE = "Slow calls"
HEADERS = ["function", "calls", "reason", "line", "call", "us/call", "avoidable s"]
MAX_ROWS = 30


def _label(g: SlowGroup) -> str:
    return shown_name(g.function, g.owner, package_of(g.owner, g.defined_at))


def rows(report: Report, show_all: bool = False) -> Table:
    """The groups of your functions (every group with ``show_all``), most avoidable first."""
    slow = report.slow_calls
    shown = slow.groups if show_all else slow.of((Owner.USER,))
    return HEADERS, [[_label(g), g.calls, g.reason, display(g.line), display(g.call_site),
                      g.per_call_seconds * 1e6, g.avoidable_seconds]
                     for g in shown[:MAX_ROWS]]


def _heading(slow: SlowCallReport) -> str:
    if slow.fast_call_seconds is None:
        return (f"{TITLE} (nothing compiled; us/call and avoidable s: the Python dispatch "
                "outside the program's execution)")
    return (f"{TITLE} (nothing compiled; avoidable s above a "
            f"{slow.fast_call_seconds * 1e6:.1f} us fast-path call)")


def _others(slow: SlowCallReport) -> list[str]:
    """One line per owner whose groups are not listed (JAX's, libraries')."""
    hidden: dict[str, list[SlowGroup]] = {}
    for g in slow.groups:
        if g.owner != Owner.USER:
            hidden.setdefault(package_of(g.owner, g.defined_at), []).append(g)
    return [f"+ {package}: {counted(sum(g.calls for g in groups), 'slow call')} of "
            f"{counted(len({g.key for g in groups}), 'function')} (--all lists them)"
            for package, groups in sorted(hidden.items())]


def advice(slow: SlowCallReport, show_all: bool = False) -> list[str]:
    """One sentence per listed group: its reason in words, then its fix."""
    out = []
    for g in (slow.groups if show_all else slow.of((Owner.USER,)))[:MAX_ROWS]:
        signatures = (f" ({counted(len(g.signatures), 'signature')})"
                      if len(g.signatures) > 1 else "")
        text = f"{g.function}: {counted(g.calls, 'call')}{signatures}: {g.why}."
        if g.fix:
            text += f" Fix: {g.fix}."
        out.append(text)
    return out


def flatten_lines(slow: SlowCallReport) -> list[str]:
    return [f"{f.function}: {f.fix}." for f in slow.flatten]


def text_section(report: Report, show_all: bool, heading: str, bullet: str,
                 text: Callable[[Any], str], prose: Callable[[Any], str],
                 table: Callable[[Table], str], wrap: Callable[[list[str]], list[str]]
                 ) -> list[str]:
    """The section's lines for the terminal or Markdown (empty when there is nothing to say);
    ``wrap`` fits sentences to the width."""
    slow = report.slow_calls
    found = rows(report, show_all)
    lines: list[str] = []
    if found[1]:
        lines += ["", heading.format(text(_heading(slow))), table(found)]
        listed = slow.groups if show_all else slow.of((Owner.USER,))
        if len(listed) > MAX_ROWS:
            lines.append(f"... {len(listed) - MAX_ROWS} more (see --format json)")
        lines += ["", *wrap([f"{bullet}{prose(line)}" for line in advice(slow, show_all)])]
    if not show_all and _others(slow):
        lines += ([] if lines else ["", heading.format(TITLE)])
        lines += wrap([text(line) for line in _others(slow)])
    if slow.flatten:
        lines += ["", heading.format("Dispatch cost of the arguments")]
        lines += wrap([f"{bullet}{prose(line)}" for line in flatten_lines(slow)])
    return lines


def html_section(report: Report, show_all: bool, escape: Callable[[Any], str],
                 prose: Callable[[str], str], table: Callable[[Table, str], str]) -> list[str]:
    """The section as HTML: the table of groups, their reasons and fixes, the flatten
    findings."""
    slow = report.slow_calls
    found = rows(report, show_all)
    out: list[str] = []
    if found[1]:
        out += [f"<h2>{escape(TITLE)}</h2>", f'<p class="hidden">{escape(_heading(slow))}</p>',
                table(found, "slow-calls"),
                '<ul class="slow-calls">' + "".join(
                    f"<li>{prose(line)}</li>" for line in advice(slow, show_all)) + "</ul>"]
    if not show_all:
        out += [f'<p class="hidden">{escape(line)}</p>' for line in _others(slow)]
    if slow.flatten:
        out += ["<h2>Dispatch cost of the arguments</h2>", '<ul class="flatten">' + "".join(
            f"<li>{prose(line)}</li>" for line in flatten_lines(slow)) + "</ul>"]
    return out


def json_section(report: Report) -> dict[str, Any]:
    """The JSON report's ``slow_calls``: whether they were observable (and why not), the
    baseline, the totals, per function and per group (count, reason code, line, seconds), and
    the flatten findings."""
    slow = report.slow_calls
    return {"observable": slow.observable, "note": slow.note,
            "fast_call_seconds": slow.fast_call_seconds, "baseline": slow.baseline,
            "calls": sum(g.calls for g in slow.groups),
            "avoidable_seconds": math.fsum(g.avoidable_seconds for g in slow.groups),
            "functions": [dataclasses.asdict(f) for f in slow.functions],
            "groups": [dataclasses.asdict(g) for g in slow.groups],
            "flatten": [dataclasses.asdict(f) for f in slow.flatten]}
