"""The HTML report: ``render`` writes a self-contained page (``--format html``), ``fragment``
the same sections for a notebook (``RecompileReport._repr_html_``), in the order a person acts:
summary, what to fix, pictures, then the reference tables (long ones folded in ``<details>``).

It must never load anything from the network nor let a session value become markup: every
value goes through ``escape.html``; the fragment has no script; the size is bounded however long
the run (``MAX_EVENT_ROWS`` events listed; the timeline bounds its own rows and marks).

Map: this module (the page and its sections), ``charts.py`` (inline SVG pictures),
``timeline.py`` (the compile timeline), ``assets/`` (``report.css``, ``report.js``, inlined).
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from recompile_cli.analysis.report import KEPT_CACHES, OwnerTotals, Report
from recompile_cli.render import merged
from recompile_cli.render.escape import html as escape_html
from recompile_cli.render.escape import html_prose, is_missing
from recompile_cli.render.fit import drop_empty
from recompile_cli.render.html import charts
from recompile_cli.render.html.timeline import timeline
from recompile_cli.render.sections import compile_cost, eager_lines, slow_calls, wasted_compiles
from recompile_cli.render.sections.headline import headline
from recompile_cli.render.table import (
    SAY_NOTHING_AT_ZERO,
    Table,
    cause_rows,
    cause_table_title,
    count_events,
    event_rows,
    function_rows,
    hidden_functions,
    warnings,
)
from recompile_cli.session.locations import relative_in
from recompile_cli.session.model import Owner

if TYPE_CHECKING:
    from recompile_cli.gate.evaluate import Violation

# The events table lists this many rows at most, so that the page stays quick to open and sort
# however long the run; the page says how many there are and where to find them all.
MAX_EVENT_ROWS = 1_000
# A table of more rows than this starts folded (its heading and row count show; a click opens
# it), so that the suggestions and pictures stay near the top.
FOLD_ROWS = 10
MAX_SWEEPS = 3  # shape-sweep pictures, the most sizes first

Escape = Callable[[Any], str]


def render(report: Report, show_all: bool = False) -> str:
    """The report as a whole page: the report's sections (as ``fragment``), its style, and the
    script that sorts the tables."""
    title = escape_html(f"recompile-cli: {relative_in(report.session.target)}")
    body = _report(report, show_all, (), _same, fold_events=False)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}'
            f"</title>\n<style>\n{asset('report.css')}</style></head>\n"
            f'<body class="rc-page">\n{body}\n<script>\n{asset("report.js")}</script>\n'
            "</body></html>\n")


def fragment(report: Report, show_all: bool = False, violations: Sequence[Violation] = (),
             relabel: Callable[[str], str] | None = None) -> str:
    """The report as an HTML fragment for a notebook's output: one ``<div>`` with the page's
    sections and style (scoped to it), no script; the events are folded.

    Args:
        report: the analysed session.
        show_all: also list JAX's and libraries' internal functions.
        violations: gate violations, shown first.
        relabel: applied to every text from the session before it is escaped (the notebook
            writes its cells' temporary files as ``In[n]``).
    """
    style = f"<style>\n{asset('report.css')}</style>"
    return _report(report, show_all, violations, relabel or _same, fold_events=True,
                   style=style)


def _same(text: str) -> str:
    return text


@functools.cache
def asset(name: str) -> str:
    """The text of a file of ``render/assets`` (shipped as package data)."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def _report(report: Report, show_all: bool, violations: Sequence[Violation],
            relabel: Callable[[str], str], fold_events: bool, style: str = "") -> str:
    """The sections; every text from the session goes through ``relabel`` (the notebook's cell
    names), then ``escape.html`` (``escape.html_prose`` for advice quoting values)."""
    def escape(value: Any) -> str:
        return escape_html(relabel(value) if isinstance(value, str) else value)

    def prose(value: str) -> str:
        return html_prose(relabel(relative_in(value)))

    session = report.session
    env = session.environment
    top = headline(report)
    sections = [
        f'<div class="recompile-cli">{style}',
        f"<h1>recompile-cli: {escape(relative_in(session.target))}</h1>",
        (f'<p class="env">jax {escape(env.jax_version)}, {escape(env.backend)}, hook mode '
         f"{escape(env.hook_mode)}</p>"),
        *([f'<p class="mode">{escape(top.mode)}</p>'] if top.mode else []),
        _cards(report),
        '<ul class="headline">' + "".join(
            f"<li>{escape(line)}</li>" for line in [
                *top.functions, *([top.yours] if top.yours else []),
                *([top.wasted] if top.wasted else []),
                *([top.slow] if top.slow else []), *top.storms]) + "</ul>",
        f'<p class="env">{escape(top.others + "; " if top.others else "")}'
        f"{escape(top.overall)}</p>",
    ]
    sections += _fix_first(report, violations, escape, prose)
    sections += slow_calls.html_section(report, show_all, escape, prose,
                                        lambda table, name: _table(table, name, escape))
    sections += eager_lines.html_section(report, show_all, escape,
                                         lambda table, name: _table(table, name, escape))
    sections += wasted_compiles.html_section(report, show_all, escape, prose,
                                             lambda table, name: _table(table, name, escape))
    sections += merged.html_sections(session, escape)  # a merged session: per process
    sections += _pictures(report)
    sections.append(_folded("Timeline", timeline(report, show_all), None, "timeline-section"))
    functions = function_rows(report, show_all)
    if functions[1]:
        sections.append(_folded("Functions", _table(functions, "functions", escape),
                                len(functions[1]), "functions-section",
                                unfolded=len(functions[1]) <= FOLD_ROWS))
    else:
        sections += ["<h2>Functions</h2>",
                     '<p class="hidden">(no user function was traced or compiled)</p>']
    if not show_all:
        sections += [f'<p class="hidden">{escape(line)}</p>' for line in hidden_functions(report)]
    sections += compile_cost.html_section(report, escape, prose)
    sections += _events(report, show_all, escape, fold_events)
    notes = warnings(report)
    if notes:
        sections += ["<h2>Warnings</h2>", "<ul>" + "".join(
            f"<li>{prose(w) if ours else escape(w)}</li>" for w, ours in notes) + "</ul>"]
    return "\n".join([*sections, "</div>"])


def _fix_first(report: Report, violations: Sequence[Violation], escape: Escape,
               prose: Callable[[str], str]) -> list[str]:
    """What to act on, right under the summary: the gate violations, the failure of the
    recorded code, the suggestions, then the re-compilations ranked by cost."""
    session = report.session
    sections = []
    if violations:
        items = "".join(f"<li>{escape(relative_in(v.message))}</li>" for v in violations)
        sections.append(f'<div class="fail"><b>Gate FAILED</b> ({len(violations)} '
                        f"violation{'s' if len(violations) != 1 else ''})<ul>{items}</ul></div>")
    if session.target_exception:
        sections.append(f'<p class="error">The recorded code raised: '
                        f"{escape(relative_in(session.target_exception))}</p>")
    if report.suggestions:
        sections += ["<h2>Suggestions</h2>", '<ul class="suggestions">' + "".join(
            f"<li><b>{escape(s.function)}</b>: {prose(s.message)}</li>"
            for s in report.suggestions) + "</ul>"]
    if report.cause_table:
        rows = cause_rows(report)
        sections.append(_folded(cause_table_title(report), _table(rows, "causes", escape),
                                len(rows[1]), "causes-section",
                                unfolded=len(rows[1]) <= FOLD_ROWS))
    elif not violations and KEPT_CACHES in session.warnings:
        sections.append('<p class="hidden">No re-compilation of your functions inside the '
                        "recording; JAX's caches were kept, so a compile of a function that "
                        "compiled before it is counted as a first compile here.</p>")
    elif not violations:
        sections.append('<p class="ok">No re-compilation of your functions.</p>')
    return sections


def _pictures(report: Report) -> list[str]:
    """Compile seconds per function by cause, and each shape sweep's sizes and buckets."""
    out = []
    chart = charts.compile_seconds_chart(report)
    if chart:
        out += ["<h2>Compile seconds by cause</h2>", chart]
    found = report.sweeps[:MAX_SWEEPS]
    if found:
        out += ["<h2>Shape sweeps</h2>", *(charts.sweep_chart(s) for s in found)]
    return out


def _folded(title: str, body: str, count: int | None, section_id: str,
            unfolded: bool = False) -> str:
    """A section whose body opens on a click (``<details>``), its heading in the summary."""
    shown = f' <span class="count">({count:,})</span>' if count is not None else ""
    return (f'<details class="section" id="{section_id}"{" open" if unfolded else ""}>'
            f"<summary><h2>{title}</h2>{shown}</summary>\n{body}</details>")


def _cards(report: Report) -> str:
    """The summary cards: your functions' compiles first, then JAX's and libraries' and the
    run's (set apart, class ``other``)."""
    totals = report.totals
    user = totals.by_owner.get(Owner.USER, OwnerTotals(0, 0, 0, 0, 0, 0, 0.0))
    slow = sum(g.calls for g in report.slow_calls.of((Owner.USER,)))
    cards = [("your compiles", user.compiles, ""), ("re-compiles", user.recompiles, ""),
             ("first compiles", user.first_compiles, ""), ("traces raised", user.errors, ""),
             ("your compile s", f"{user.compile_seconds:.3f}", ""),
             *([("slow calls", f"{slow:,}", "")] if slow else []),
             ("compiles not yours", totals.compiles - user.compiles, " other"),
             ("compiles in all", totals.compiles, " other"),
             ("wall s", f"{totals.wall_seconds:.3f}", " other")]
    return '<div class="summary" id="summary">' + "".join(
        f'<div class="stat{kind}"><b>{escape_html(value)}</b><span>{escape_html(label)}</span>'
        "</div>" for label, value, kind in cards) + "</div>"


def _events(report: Report, show_all: bool, escape: Escape, fold: bool) -> list[str]:
    """The events table (its first ``MAX_EVENT_ROWS`` rows), folded in a ``<details>`` when
    ``fold``."""
    events = event_rows(report, show_all, MAX_EVENT_ROWS)
    rows = events[1]
    if not rows:
        return []
    total = count_events(report, show_all)
    table = _table(events, "events", escape)
    more = (f'<p class="hidden" id="events-more">The first {len(rows):,} of {total:,} events '
            "shown; <code>recompile-cli report SESSION --format csv</code> or <code>--format "
            "json</code> lists them all.</p>"
            if total > len(rows) else "")
    return [_folded("Recompilation events", table + more, total, "events-section",
                    unfolded=not fold and total <= FOLD_ROWS)]


def _table(table: Table, name: str, escape: Escape) -> str:
    """A sortable table, without the columns that say nothing (``fit.drop_empty``); the
    ``cause`` column stands out."""
    headers, rows = drop_empty(table, SAY_NOTHING_AT_ZERO)
    cause_column = headers.index("cause") if "cause" in headers else None
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "\n".join("<tr>" + "".join(_cell(value, escape, i == cause_column)
                                      for i, value in enumerate(row)) + "</tr>" for row in rows)
    return (f'<table class="sortable" id="{escape(name)}">\n<thead>\n<tr>{head}</tr>\n'
            f"</thead>\n<tbody>\n{body}\n</tbody>\n</table>")


def _cell(value: object, escape: Escape, cause: bool = False) -> str:
    if is_missing(value):
        return "<td></td>"
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        text = f"{value:.3f}" if isinstance(value, float) else str(value)
        return f'<td class="num">{escape(text)}</td>'
    return f'<td class="cause">{escape(value)}</td>' if cause else f"<td>{escape(value)}</td>"
