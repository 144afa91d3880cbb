"""The terminal report: cost-ranked causes, per-function table, events, suggestions, warnings."""

from __future__ import annotations

import os

from tabulate import tabulate

from ..analysis import (COMPILED_WITHOUT_RETRACE, RETRACED_AND_COMPILED, RETRACED_REUSED,
                        Report)

_MAX_ROWS = 30


def render(report: Report, show_all: bool = False) -> str:
    session, totals = report.session, report.totals
    env = session.environment
    lines = [
        f"recompile-cli: {session.target}  (jax {env.jax_version}, {env.backend}, "
        f"hook mode {env.hook_mode})",
        f"{totals['traces']} traces, {totals['compiles']} compiles, {totals['errors']} errors; "
        f"trace {totals['trace_seconds']:.3f} s, lower {totals['lower_seconds']:.3f} s, "
        f"compile {totals['compile_seconds']:.3f} s of {totals['wall_seconds']:.3f} s wall",
        f"misses outside JAX's internals: {totals[RETRACED_AND_COMPILED]} re-traced and re-compiled, "
        f"{totals[RETRACED_REUSED]} re-traced with the executable reused, "
        f"{totals[COMPILED_WITHOUT_RETRACE]} compiled without a re-trace",
    ]
    if env.compilation_cache_dir:
        lines.append(f"persistent cache {env.compilation_cache_dir}: "
                     f"{totals['persistent_cache_hits']} hits, "
                     f"{totals['persistent_cache_saved_seconds']:.3f} s saved")
    lines += _cause_table(report)
    lines += [""] + _functions(report, show_all)
    lines += _events(report, show_all)
    if report.suggestions:
        lines += ["", "Suggestions"]
        lines += [f"- {s.function}: {s.message}" for s in report.suggestions]
    if session.target_exception:
        lines += ["", f"The target raised: {session.target_exception}"]
    if session.warnings:
        lines += ["", "Warnings"] + [f"- {w}" for w in session.warnings]
    return "\n".join(lines) + "\n"


def _cause_table(report: Report) -> list[str]:
    table = report.cause_table
    if table.empty:
        return []
    rows = [[f"x{r.count}", r.code, r.function, r.argument, r.values, _short(r.call_site),
             r.seconds] for r in table.head(_MAX_ROWS).itertuples()]
    lines = ["", "Re-compilations by cost"]
    lines.append(tabulate(rows, headers=["count", "cause", "function", "argument", "values",
                                         "call", "seconds"], floatfmt=".3f",
                          maxcolwidths=[None, None, 24, 20, 44, 40, None]))
    if len(table) > _MAX_ROWS:
        lines.append(f"... {len(table) - _MAX_ROWS} more (see --format json)")
    return lines


def _functions(report: Report, show_all: bool) -> list[str]:
    frame = report.functions
    shown = frame if show_all else frame[frame["owner"] == "user"]
    rows = [[r.name, _short(r.defined_at), "" if r.calls is None or r.calls != r.calls else
             int(r.calls), r.traces, r.compiles, r.errors, r.trace_seconds, r.lower_seconds,
             r.compile_seconds, _top_causes(r.causes)] + ([r.package] if show_all else [])
            for r in shown.itertuples()]
    headers = ["function", "defined at", "calls", "traces", "compiles", "errors", "trace s",
               "lower s", "compile s", "top causes"] + (["owner"] if show_all else [])
    lines = ["Functions"]
    if rows:
        lines.append(tabulate(rows, headers=headers, floatfmt=".3f"))
    else:
        lines.append("(no user function was traced or compiled)")
    if not show_all:
        hidden = frame[frame["owner"] != "user"]
        for package, group in hidden.groupby("package", sort=True):
            lines.append(
                f"+ {package}: {len(group)} internal functions, {int(group['traces'].sum())} "
                f"traces, {int(group['compiles'].sum())} compiles, "
                f"{group['compile_seconds'].sum():.3f} s compile (--all lists them)")
    return lines


def _events(report: Report, show_all: bool) -> list[str]:
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
        rows.append([event.seq, event.function, _short(event.call_site) or "", what,
                     cause.argument or "", change,
                     f"error: {event.error.type}" if event.error else cause.code])
    if not rows:
        return []
    lines = ["", "Recompilation events"]
    headers = ["#", "function", "call", "stage", "argument", "before -> after", "cause"]
    lines.append(tabulate(rows[:_MAX_ROWS], headers=headers,
                          maxcolwidths=[None, 24, 40, None, 20, 50, None]))
    if len(rows) > _MAX_ROWS:
        lines.append(f"... {len(rows) - _MAX_ROWS} more (see --format json)")
    return lines


def _top_causes(causes: dict[str, int], limit: int = 3) -> str:
    return ", ".join(f"{code} {n}" for code, n in list(causes.items())[:limit])


def _short(location: str | None) -> str | None:
    """Paths below the current folder are shown relative to it."""
    if not location:
        return location
    cwd = os.getcwd() + os.sep
    return location[len(cwd):] if location.startswith(cwd) else location
