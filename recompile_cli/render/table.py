"""The human report, as terminal text or GitHub-flavoured Markdown (same tables, same order):
cost-ranked causes, per-function table, events, suggestions, warnings."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from tabulate import tabulate

from recompile_cli.analysis.report import (COMPILED_WITHOUT_RETRACE, RETRACED_AND_COMPILED, RETRACED_REUSED,
                        Report)
from recompile_cli.capture.frames import relative

_MAX_ROWS = 30


@dataclass(frozen=True)
class Style:
    tablefmt: str
    heading: str  # format string for section titles
    bullet: str
    code: str  # wraps the title line


TERMINAL = Style("simple", "{}", "- ", "{}")
MARKDOWN = Style("github", "### {}", "- ", "**{}**")


def render(report: Report, show_all: bool = False, style: Style = TERMINAL) -> str:
    session, totals = report.session, report.totals
    env = session.environment
    lines = [
        style.code.format(f"recompile-cli: {session.target}") + f"  (jax {env.jax_version}, "
        f"{env.backend}, hook mode {env.hook_mode})",
        f"{totals['traces']} traces, {totals['compiles']} compiles, {totals['errors']} errors; "
        f"trace {totals['trace_seconds']:.3f} s, lower {totals['lower_seconds']:.3f} s, "
        f"compile {totals['compile_seconds']:.3f} s of {totals['wall_seconds']:.3f} s wall",
        f"misses outside JAX's internals: {totals[RETRACED_AND_COMPILED]} re-traced and "
        f"re-compiled, {totals[RETRACED_REUSED]} re-traced with the executable reused, "
        f"{totals[COMPILED_WITHOUT_RETRACE]} compiled without a re-trace",
    ]
    if style is MARKDOWN:
        lines = [line + "  " for line in lines]  # Markdown line breaks
    if env.compilation_cache_dir:
        lines.append(f"persistent cache {env.compilation_cache_dir}: "
                     f"{totals['persistent_cache_hits']} hits, "
                     f"{totals['persistent_cache_saved_seconds']:.3f} s saved")
    lines += _cause_table(report, style)
    lines += [""] + _functions(report, show_all, style)
    lines += _events(report, show_all, style)
    if report.suggestions:
        lines += ["", style.heading.format("Suggestions")]
        lines += [f"{style.bullet}{s.function}: {s.message}" for s in report.suggestions]
    if session.target_exception:
        lines += ["", f"The target raised: {session.target_exception}"]
    if session.warnings:
        lines += ["", style.heading.format("Warnings")]
        lines += [f"{style.bullet}{w}" for w in session.warnings]
    return "\n".join(lines) + "\n"


Table = tuple[list[str], list[list]]


def cause_rows(report: Report) -> Table:
    rows = [[f"x{r.count}", r.code, r.function, r.argument, r.values, relative(r.call_site),
             r.seconds] for r in report.cause_table.head(_MAX_ROWS).itertuples()]
    return ["count", "cause", "function", "argument", "values", "call", "seconds"], rows


def function_rows(report: Report, show_all: bool) -> Table:
    frame = report.functions
    shown = frame if show_all else frame[frame["owner"] == "user"]
    rows = [[r.name, relative(r.defined_at), "" if pd.isna(r.calls) else int(r.calls), r.traces, r.compiles, r.errors, r.trace_seconds, r.lower_seconds,
             r.compile_seconds, _top_causes(r.causes)] + ([r.package] if show_all else [])
            for r in shown.itertuples()]
    headers = ["function", "defined at", "calls", "traces", "compiles", "errors", "trace s",
               "lower s", "compile s", "top causes"] + (["owner"] if show_all else [])
    return headers, rows


def hidden_functions(report: Report) -> list[str]:
    """One line per package whose functions are not listed (JAX's, libraries')."""
    frame = report.functions
    hidden = frame[frame["owner"] != "user"]
    return [f"+ {package}: {len(group)} internal functions, {int(group['traces'].sum())} "
            f"traces, {int(group['compiles'].sum())} compiles, "
            f"{group['compile_seconds'].sum():.3f} s compile (--all lists them)"
            for package, group in hidden.groupby("package", sort=True)]


def event_rows(report: Report, show_all: bool) -> Table:
    rows = []
    for event in report.session.events:
        cause = report.primary(event)
        if not show_all and (event.owner != "user" or event.depth > 0
                             or (cause.code == "first_compile" and event.error is None)):
            continue
        change = (f"{cause.before} -> {cause.after}" if cause.before or cause.after else "")
        what = "trace+compile" if event.traced and event.compiled else (
            "trace" if event.traced else "compile")
        if event.persistent_cache:
            what += f" ({event.persistent_cache.replace('_', ' ')})"
        rows.append([event.seq, event.function, relative(event.call_site) or "", what,
                     cause.argument or "", change,
                     f"error: {event.error.type}" if event.error else cause.code])
    return ["#", "function", "call", "stage", "argument", "before -> after", "cause"], rows


def _cause_table(report: Report, style: Style) -> list[str]:
    if report.cause_table.empty:
        return []
    headers, rows = cause_rows(report)
    lines = ["", style.heading.format("Re-compilations by cost"),
             _tabulate(rows, headers, style, [None, None, 24, 24, 44, None, None])]
    if len(report.cause_table) > _MAX_ROWS:
        lines.append(f"... {len(report.cause_table) - _MAX_ROWS} more (see --format json)")
    return lines


def _functions(report: Report, show_all: bool, style: Style) -> list[str]:
    headers, rows = function_rows(report, show_all)
    lines = [style.heading.format("Functions")]
    lines.append(_tabulate(rows, headers, style) if rows
                 else "(no user function was traced or compiled)")
    if not show_all:
        hidden = hidden_functions(report)
        if hidden and style is MARKDOWN:
            lines.append("")
        lines += hidden
    return lines


def _events(report: Report, show_all: bool, style: Style) -> list[str]:
    headers, rows = event_rows(report, show_all)
    if not rows:
        return []
    lines = ["", style.heading.format("Recompilation events"),
             _tabulate(rows[:_MAX_ROWS], headers, style, [None, 24, None, None, 24, 50, None])]
    if len(rows) > _MAX_ROWS:
        lines.append(f"... {len(rows) - _MAX_ROWS} more (see --format json)")
    return lines


def _tabulate(rows: list, headers: list[str], style: Style, widths: list | None = None) -> str:
    if style is MARKDOWN:  # wrapped cells would break Markdown rows
        return tabulate(rows, headers=headers, tablefmt=style.tablefmt, floatfmt=".3f")
    return tabulate(rows, headers=headers, tablefmt=style.tablefmt, floatfmt=".3f",
                    maxcolwidths=widths)


def _top_causes(causes: dict[str, int], limit: int = 3) -> str:
    return ", ".join(f"{code} {n}" for code, n in list(causes.items())[:limit])


def render_markdown(report: Report, show_all: bool = False) -> str:
    return render(report, show_all, MARKDOWN)
