"""The human report, as terminal text or GitHub-flavoured Markdown (same tables, same order):
cost-ranked causes, per-function table, events, suggestions, warnings."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from recompile_cli.analysis.report import FunctionRow, Report
from recompile_cli.render import escape
from recompile_cli.session.locations import display as location
from recompile_cli.session.model import CauseCode, Event, Owner

_MAX_ROWS = 30


@dataclass(frozen=True)
class Style:
    tablefmt: str
    heading: str  # format string for section titles
    bullet: str
    code: str  # wraps the title line
    text: Callable[[Any], str]  # makes a value from the session inert in this format
    prose: Callable[[Any], str]  # the same for recompile-cli's sentences quoting such values


TERMINAL = Style("simple", "{}", "- ", "{}", escape.terminal, escape.terminal)
MARKDOWN = Style("github", "### {}", "- ", "**{}**", escape.markdown, escape.markdown_prose)


def render(report: Report, show_all: bool = False, style: Style = TERMINAL) -> str:
    session, totals = report.session, report.totals
    env = session.environment
    show = style.text
    lines = [
        style.code.format(f"recompile-cli: {show(session.target)}") + f"  (jax "
        f"{show(env.jax_version)}, {show(env.backend)}, hook mode {show(env.hook_mode)})",
        (f"{totals.traces} traces, {totals.compiles} compiles, {totals.errors} errors; "
         f"trace {totals.trace_seconds:.3f} s, lower {totals.lower_seconds:.3f} s, "
         f"compile {totals.compile_seconds:.3f} s of {totals.wall_seconds:.3f} s wall"),
        (f"misses outside JAX's internals: {totals.retraced_and_compiled} re-traced and "
         f"re-compiled, {totals.retraced_executable_reused} re-traced with the executable "
         f"reused, {totals.compiled_without_retrace} compiled without a re-trace"),
    ]
    if style is MARKDOWN:
        lines = [line + "  " for line in lines]  # Markdown line breaks
    if env.compilation_cache_dir:
        lines.append(f"persistent cache {show(env.compilation_cache_dir)}: "
                     f"{totals.persistent_cache_hits} hits, "
                     f"{totals.persistent_cache_saved_seconds:.3f} s saved")
    lines += _cause_table(report, style)
    lines += ["", *_functions(report, show_all, style)]
    lines += _events(report, show_all, style)
    if report.suggestions:
        lines += ["", style.heading.format("Suggestions")]
        lines += [f"{style.bullet}{show(s.function)}: {style.prose(s.message)}"
                  for s in report.suggestions]
    if session.target_exception:
        lines += ["", f"The target raised: {show(session.target_exception)}"]
    notes = warnings(report)
    if notes:
        lines += ["", style.heading.format("Warnings")]
        lines += [f"{style.bullet}{show(w)}" for w in notes]
    return "\n".join(lines) + "\n"


def warnings(report: Report) -> list[str]:
    """The session's warnings, then advice on each stale capture (kept as data in the session)."""
    return list(report.session.warnings) + [
        f"stale capture: {s.function} reads {s.scope} `{s.variable}`, traced as "
        f"{s.traced_value} but now {s.current_value}; the compiled {s.function} still uses "
        f"{s.traced_value}. Pass it as an argument (static if it changes the program)."
        for s in report.session.stale_captures]


Table = tuple[list[str], list[list[Any]]]

# Rows hold the session's values as they are (``""`` where missing); each format makes them
# inert as it writes them (``escape``).


def cause_rows(report: Report) -> Table:
    """The cost-ranked causes; a library's function is named with its package, so that, e.g.,
    flax's internal ``<lambda>`` never reads as one of yours."""
    package = {f.name: f.package for f in report.functions if f.owner == Owner.LIBRARY}
    rows = [[f"x{r.count}", r.code,
             r.function if r.owner != Owner.LIBRARY
             else f"{r.function} ({package.get(r.function, r.owner)})",
             r.argument, r.values, location(r.call_site), r.seconds]
            for r in report.cause_table[:_MAX_ROWS]]
    return ["count", "cause", "function", "argument", "values", "call", "seconds"], rows


def function_rows(report: Report, show_all: bool) -> Table:
    rows = [[r.name, location(r.defined_at), "" if r.calls is None else r.calls,
             r.traces, r.compiles, r.errors, r.trace_seconds, r.lower_seconds,
             r.compile_seconds, _top_causes(r.causes)] + ([r.package] if show_all else [])
            for r in report.functions if show_all or r.owner == Owner.USER]
    headers = ["function", "defined at", "calls", "traces", "compiles", "errors", "trace s",
               "lower s", "compile s", "top causes"] + (["owner"] if show_all else [])
    return headers, rows


def hidden_functions(report: Report) -> list[str]:
    """One line per package whose functions are not listed (JAX's, libraries')."""
    hidden: dict[str, list[FunctionRow]] = {}
    for f in report.functions:
        if f.owner != Owner.USER:
            hidden.setdefault(f.package, []).append(f)
    return [f"+ {package}: {len(group)} internal functions, {sum(f.traces for f in group)} "
            f"traces, {sum(f.compiles for f in group)} compiles, "
            f"{sum(f.compile_seconds for f in group):.3f} s compile (--all lists them)"
            for package, group in sorted(hidden.items(), key=lambda item: item[0])]


def shown_events(report: Report, show_all: bool) -> Iterator[Event]:
    """The events the report lists: the user's top-level re-compilations and failed traces, or
    every event with ``show_all``."""
    if show_all:
        yield from report.session.events
        return
    causes = report.causes
    for event in report.session.events:
        if event.owner == Owner.USER and event.depth <= 0 and (
                event.error is not None
                or causes[event.seq][0].code != CauseCode.FIRST_COMPILE):
            yield event


def event_rows(report: Report, show_all: bool, limit: int | None = None) -> Table:
    """The events table; only its first ``limit`` rows when given (``count_events`` says how
    many there are in all), so that a long run costs no more than the rows shown."""
    rows = []
    for event in itertools.islice(shown_events(report, show_all), limit):
        cause = report.primary(event)
        before, after = escape.text(cause.before), escape.text(cause.after)
        change = f"{before} -> {after}" if before or after else ""
        what = "trace+compile" if event.traced and event.compiled else (
            "trace" if event.traced else "compile")
        if event.persistent_cache:
            what += f" ({escape.text(event.persistent_cache).replace('_', ' ')})"
        rows.append([event.seq, event.function, location(event.call_site), what,
                     escape.text(cause.argument), change,
                     f"error: {event.error.type}" if event.error else cause.code])
    return ["#", "function", "call", "stage", "argument", "before -> after", "cause"], rows


def count_events(report: Report, show_all: bool) -> int:
    """How many rows ``event_rows`` has without a limit."""
    if show_all:
        return len(report.session.events)
    return sum(1 for _ in shown_events(report, show_all))


# Columns of text (never parsed as numbers: a function may be called ``inf``) and, for the
# terminal, the widths at which a column wraps (at spaces only, so names stay whole).
_CAUSE_TEXT, _CAUSE_WRAP = range(6), {3: 24, 4: 44}
_FUNCTION_TEXT = (0, 1, 9, 10)
_EVENT_TEXT, _EVENT_WRAP = range(1, 7), {4: 24, 5: 50}


def _cause_table(report: Report, style: Style) -> list[str]:
    if not report.cause_table:
        return []
    headers, rows = cause_rows(report)
    lines = ["", style.heading.format("Re-compilations by cost"),
             _tabulate(rows, headers, style, _CAUSE_TEXT, _CAUSE_WRAP)]
    if len(report.cause_table) > _MAX_ROWS:
        lines.append(f"... {len(report.cause_table) - _MAX_ROWS} more (see --format json)")
    return lines


def _functions(report: Report, show_all: bool, style: Style) -> list[str]:
    headers, rows = function_rows(report, show_all)
    lines = [style.heading.format("Functions")]
    lines.append(_tabulate(rows, headers, style, _FUNCTION_TEXT) if rows
                 else "(no user function was traced or compiled)")
    if not show_all:
        hidden = hidden_functions(report)
        if hidden and style is MARKDOWN:
            lines.append("")
        lines += [style.text(line) for line in hidden]
    return lines


def _events(report: Report, show_all: bool, style: Style) -> list[str]:
    headers, rows = event_rows(report, show_all, _MAX_ROWS)
    if not rows:
        return []
    lines = ["", style.heading.format("Recompilation events"),
             _tabulate(rows, headers, style, _EVENT_TEXT, _EVENT_WRAP)]
    total = count_events(report, show_all)
    if total > _MAX_ROWS:
        lines.append(f"... {total - _MAX_ROWS} more (see --format json)")
    return lines


def _tabulate(rows: list[list[Any]], headers: list[str], style: Style,
              text_columns: Iterable[int] = (), wrap: dict[int, int] | None = None) -> str:
    """Every cell made inert for the style; on the terminal, the ``wrap`` columns are wrapped
    at spaces (so at `` -> ``), never inside a word. Markdown cells are never wrapped: a line
    break would end the row."""
    cells = [[escape.cell(value, style.text) for value in row] for row in rows]
    if style is not MARKDOWN:
        for row in cells:
            for column, width in (wrap or {}).items():
                row[column] = _wrap(row[column], width)
    return tabulate(cells, headers=headers, tablefmt=style.tablefmt, floatfmt=".3f",
                    disable_numparse=[i for i in text_columns if i < len(headers)])


def _wrap(value: Any, width: int) -> Any:
    if not isinstance(value, str) or len(value) <= width:
        return value
    return "\n".join(textwrap.wrap(value, width, break_long_words=False,
                                    break_on_hyphens=False)) or value


def _top_causes(causes: dict[CauseCode, int], limit: int = 3) -> str:
    return ", ".join(f"{code} {n}" for code, n in list(causes.items())[:limit])


def render_markdown(report: Report, show_all: bool = False) -> str:
    return render(report, show_all, MARKDOWN)
