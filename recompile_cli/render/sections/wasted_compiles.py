"""The "Wasted compiles" section of each report format, and its headline verdict, from
``analysis.wasted_compiles``.

Terminal and Markdown (``text_section``, laid out by ``render.table``), HTML
(``html_section``) and the JSON report's ``wasted_compiles`` field (``json_section``); the
headline's line (``verdict``). Per function of yours and component of JAX's cache key that
changed without changing the program: the compiles that bought nothing, what they cost, the
compile whose program they repeat, then each group's reason and fix; JAX's and libraries'
summed up in one line. Values from the session go through the format's escape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from recompile_cli.analysis.report import Report, package_of, shown_name
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.wasted_compiles import WastedGroup, WastedReport
from recompile_cli.render.fit import Table
from recompile_cli.session.model import CauseCode, Owner

TITLE = "Wasted compiles (the same program compiled again)"
HEADERS = ["function", "wasted", "changed", "argument", "same program as", "seconds"]
MAX_ROWS = 30
YOURS = (Owner.USER,)


def _label(g: WastedGroup) -> str:
    return shown_name(g.function, g.owner, package_of(g.owner, g.defined_at))


def _listed(wasted: WastedReport, show_all: bool) -> list[WastedGroup]:
    return list(wasted.groups) if show_all else wasted.of(YOURS)


def verdict(report: Report) -> str | None:
    """The headline's line, when a function of yours compiled a program it already had:
    ``wasted compiles: 3 compiles of your functions bought nothing (0.210 s): step 2
    (static cfg.log_every), <lambda> 1 (new_function)``."""
    wasted = report.wasted_compiles
    groups = wasted.of(YOURS)
    if not groups:
        return None
    parts = [f"{_label(g)} {g.compiles} ({_component(g)})" for g in groups[:3]]
    if len(groups) > 3:
        parts.append(f"... {len(groups) - 3} more")
    return (f"wasted compiles: {counted(wasted.compiles(YOURS), 'compile')} of your functions "
            f"bought nothing, the same program again ({wasted.seconds(YOURS):.3f} s): "
            + ", ".join(parts))


def _component(g: WastedGroup) -> str:
    if g.argument and g.code == CauseCode.STATIC_VALUE:
        return f"static {g.argument}"
    return f"{g.code} {g.argument}" if g.argument else str(g.code)


def rows(report: Report, show_all: bool = False) -> Table:
    """The groups of your functions (every group with ``show_all``), most seconds first."""
    return HEADERS, [[_label(g), g.compiles, g.code, g.argument or "",
                      f"event {g.same_program_as}", g.seconds]
                     for g in _listed(report.wasted_compiles, show_all)[:MAX_ROWS]]


def advice(report: Report, show_all: bool = False) -> list[str]:
    """One sentence per listed group: why its compiles bought nothing, then the fix."""
    out = []
    for g in _listed(report.wasted_compiles, show_all)[:MAX_ROWS]:
        text = f"{g.function}: {g.why}."
        if g.fix:
            text += f" Fix: {g.fix}."
        out.append(text)
    return out


def _others(wasted: WastedReport) -> list[str]:
    """One line per package whose wasted compiles are not listed (JAX's, libraries')."""
    hidden: dict[str, list[WastedGroup]] = {}
    for g in wasted.groups:
        if g.owner != Owner.USER:
            hidden.setdefault(package_of(g.owner, g.defined_at), []).append(g)
    return [f"+ {package}: {counted(sum(g.compiles for g in groups), 'wasted compile')} of "
            f"{counted(len({g.key for g in groups}), 'function')} (--all lists them)"
            for package, groups in sorted(hidden.items())]


def text_section(report: Report, show_all: bool, heading: str, bullet: str,
                 text: Callable[[Any], str], prose: Callable[[Any], str],
                 table: Callable[[Table], str], wrap: Callable[[list[str]], list[str]]
                 ) -> list[str]:
    """The section's lines for the terminal or Markdown (empty when there is nothing to say);
    ``wrap`` fits sentences to the width."""
    wasted = report.wasted_compiles
    found = rows(report, show_all)
    lines: list[str] = []
    if found[1]:
        lines += ["", heading.format(TITLE), table(found)]
        listed = _listed(wasted, show_all)
        if len(listed) > MAX_ROWS:
            lines.append(f"... {len(listed) - MAX_ROWS} more (see --format json)")
        lines += ["", *wrap([f"{bullet}{prose(line)}" for line in advice(report, show_all)])]
    if not show_all and _others(wasted):
        lines += ([] if lines else ["", heading.format(TITLE)])
        lines += wrap([text(line) for line in _others(wasted)])
    return lines


def html_section(report: Report, show_all: bool, escape: Callable[[Any], str],
                 prose: Callable[[str], str], table: Callable[[Table, str], str]) -> list[str]:
    """The section as HTML: the table of groups, then their reasons and fixes."""
    wasted = report.wasted_compiles
    found = rows(report, show_all)
    out: list[str] = []
    if found[1]:
        out += [f"<h2>{escape(TITLE)}</h2>", table(found, "wasted-compiles"),
                '<ul class="wasted-compiles">' + "".join(
                    f"<li>{prose(line)}</li>" for line in advice(report, show_all)) + "</ul>"]
    if not show_all:
        out += [f'<p class="hidden">{escape(line)}</p>' for line in _others(wasted)]
    return out


def json_section(report: Report) -> dict[str, Any]:
    """The JSON report's ``wasted_compiles``: the totals (yours and all), the compiles whose
    program was known and not, per function and per group, and why none could be told."""
    wasted = report.wasted_compiles
    every = tuple(Owner)
    return {"compiles": wasted.compiles(every), "seconds": wasted.seconds(every),
            "yours": {"compiles": wasted.compiles(YOURS), "seconds": wasted.seconds(YOURS)},
            "fingerprinted": wasted.fingerprinted, "unknown": wasted.unknown,
            "note": wasted.note,
            "functions": [dataclasses.asdict(f) for f in wasted.functions],
            "groups": [dataclasses.asdict(g) for g in wasted.groups]}
