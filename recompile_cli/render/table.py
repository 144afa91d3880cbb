"""The human report, as terminal text or GitHub-flavoured Markdown (same sections, same order):
the headline (your functions first, ``render.sections.headline``), the cost-ranked causes, the
functions, the events, suggestions and warnings.

Columns that say nothing (``calls`` when calls were not counted) are left out of both. On the
terminal everything fits its width (``render.fit``): tables give way column by column and
sentences wrap. Paths below the working folder are shown relative to it, in sentences too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from recompile_cli.analysis.report import FunctionRow, Report, RowKind
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.stale_statics import stale_static_text
from recompile_cli.render import escape, fit
from recompile_cli.render.sections import (
    cache_keys,
    compile_cost,
    eager_lines,
    slow_calls,
    warmup_coverage,
    wasted_compiles,
)
from recompile_cli.render.sections.headline import headline
from recompile_cli.session.locations import display as location
from recompile_cli.session.locations import relative, relative_in
from recompile_cli.session.model import CauseCode, Event, Owner

_MAX_ROWS = 30
_ALSO_SHOWN = 3  # the other changes of a cause-table row listed under it


@dataclass(frozen=True)
class Style:
    tablefmt: str
    heading: str  # format string for section titles
    bullet: str
    code: str  # wraps the title line
    text: Callable[[Any], str]  # makes a value from the session inert in this format
    prose: Callable[[Any], str]  # the same for recompile-cli's sentences quoting such values
    fits: bool  # bound to the terminal's width


TERMINAL = Style("simple", "{}", "- ", "{}", escape.terminal, escape.terminal, True)
MARKDOWN = Style("github", "### {}", "- ", "**{}**", escape.markdown, escape.markdown_prose,
                 False)


def render(report: Report, show_all: bool = False, style: Style = TERMINAL,
           width: int | None = None) -> str:
    """The report; on the terminal ``width`` columns wide (default: ``fit.terminal_width``,
    which has no limit where the output is no terminal)."""
    session = report.session
    env = session.environment
    show = style.text
    fits = (width or fit.terminal_width()) if style.fits else None
    head = [style.code.format(f"recompile-cli: {show(relative_in(session.target))}") + f"  (jax "
            f"{show(env.jax_version)}, {show(env.backend)}, hook mode {show(env.hook_mode)})",
            *(show(line) for line in headline(report).lines)]
    if env.compilation_cache_dir:
        found = report.cache_outcomes
        head.append(f"persistent cache {show(relative(env.compilation_cache_dir))}: "
                    + show(cache_keys.outcome_line(found)))
        missed = cache_keys.missed_line(found)
        if missed is not None:
            head.append(show(missed))
    head += [show(line) for line in warmup_coverage.text_lines(report)]
    if style is MARKDOWN:
        head = [line + "  " for line in head]  # Markdown line breaks
    lines = _prose(head, fits)
    lines += warmup_coverage.text_section(report, style.heading, style.text,
                                          lambda table: _table(table, style, fits),
                                          lambda text: _prose(text, fits))
    lines += _cause_table(report, style, fits)
    lines += wasted_compiles.text_section(
        report, show_all, style.heading, style.bullet, style.text, style.prose,
        lambda table: _table(table, style, fits), lambda text: _prose(text, fits))
    lines += slow_calls.text_section(
        report, show_all, style.heading, style.bullet, style.text, style.prose,
        lambda table: _table(table, style, fits), lambda text: _prose(text, fits))
    lines += eager_lines.text_section(report, show_all, style.heading, style.text,
                                      lambda table: _table(table, style, fits),
                                      lambda text: _prose(text, fits))
    lines += ["", *_functions(report, show_all, style, fits)]
    lines += compile_cost.text_section(
        report, style.heading, style.bullet, style.text, style.prose,
        lambda table: _table(table, style, fits), lambda text: _prose(text, fits))
    lines += _events(report, show_all, style, fits)
    if report.suggestions:
        lines += ["", style.heading.format("Suggestions")]
        lines += _prose([f"{style.bullet}{show(relative_in(s.function))}: "
                         f"{style.prose(relative_in(s.message))}"
                         for s in report.suggestions], fits)
    if session.target_exception:
        lines += ["", *_prose([f"The target raised: {show(relative_in(session.target_exception))}"],
                              fits)]
    notes = warnings(report)
    if notes:
        lines += ["", style.heading.format("Warnings")]
        lines += _prose([f"{style.bullet}{(style.prose if ours else show)(w)}"
                         for w, ours in notes], fits)
    return "\n".join(lines) + "\n"


def warnings(report: Report) -> list[tuple[str, bool]]:
    """The session's warnings, then advice on each stale capture (kept as data in the session),
    each with whether it is a sentence of recompile-cli's own that quotes values in `code spans`
    (shown as code where a format has code), with paths relative to the working folder."""
    return [(relative_in(w), False) for w in report.session.warnings] + [
        (f"stale capture: {s.function} reads {s.scope} `{s.variable}`, traced as "
         f"{s.traced_value} but now {s.current_value}; the compiled {s.function} still uses "
         f"{s.traced_value}. Pass it as an argument (static if it changes the program).", True)
        for s in report.session.stale_captures] + [
        (stale_static_text(s), True) for s in report.session.stale_statics]


def _prose(lines: list[str], width: int | None) -> list[str]:
    """Sentences wrapped to ``width`` on the terminal (later lines indented), else as they are."""
    if width is None:
        return lines
    return [part for line in lines for part in fit.wrap(line, width)]


Table = fit.Table

# Rows hold the session's values as they are (``""`` where missing); each format makes them
# inert as it writes them (``escape``).


def cause_rows(report: Report) -> Table:
    """The cost-ranked causes; a function is named with its package where that is not its owner
    (``FunctionRow.label``), so that, e.g., flax's internal ``<lambda>`` never reads as one of
    yours and a library's function that you jitted keeps its library's name. The other changes
    of a row's compiles (``CauseRow.also``) follow it, one row each (``+ weak_type``), with no
    count or seconds of their own: the same compiles made them."""
    label = {(f.name, f.owner): f.label for f in report.functions}
    rows = []
    for r in report.cause_table[:_MAX_ROWS]:
        rows.append([f"x{r.count}", f"slow:{r.code}" if r.kind == RowKind.SLOW_CALLS else r.code,
                     label.get((r.function, r.owner), r.function),
                     r.argument, r.values, location(r.call_site), r.seconds])
        rows += [["", f"+ {a.code}", "", a.argument, a.values, "", ""]
                 for a in r.also[:_ALSO_SHOWN]]
        if len(r.also) > _ALSO_SHOWN:
            rows.append(["", f"+ {len(r.also) - _ALSO_SHOWN} more changes (see --format json)",
                         "", "", "", "", ""])
    return ["count", "cause", "function", "argument", "values", "call",
            cost_header(report)], rows


def cost_header(report: Report) -> str:
    """The cause table's seconds column: ``seconds`` (trace, lowering and compile), or what a
    forecast measured, ``trace s`` (``trace+lower s`` with ``--lower``): the same name means the
    same seconds in every command."""
    stages = report.cost_stages
    return "seconds" if stages == "trace+lower+compile" else f"{stages} s"


def cause_table_title(report: Report) -> str:
    """"Re-compilations by cost", naming the slow calls ranked in it when there are any."""
    if any(r.kind == RowKind.SLOW_CALLS for r in report.cause_table):
        return "Re-compilations and slow calls by cost"
    return "Re-compilations by cost"


def function_rows(report: Report, show_all: bool) -> Table:
    rows = [[r.label, location(r.defined_at), "" if r.calls is None else r.calls,
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
    return [f"+ {package}: {counted(len(group), 'internal function')} "
            f"({sum(f.compiles > 0 for f in group)} compiled): "
            f"{counted(sum(f.traces for f in group), 'trace')}, "
            f"{counted(sum(f.compiles for f in group), 'compile')}, "
            f"{sum(f.compile_seconds for f in group):.3f} s (--all lists them)"
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
            "trace" if event.traced else "refused" if event.error and event.error.refused
            else "compile")
        if event.persistent_cache:
            reason = event.cache_key.reason if event.cache_key is not None else None
            what += f" ({escape.text(event.persistent_cache).replace('_', ' ')}" + (
                f": {escape.text(reason).replace('_', ' ')})" if reason else ")")
        rows.append([event.seq, event.function, location(event.call_site), what,
                     escape.text(cause.argument), change,
                     f"error: {event.error.type}" if event.error else cause.code])
    return ["#", "function", "call", "stage", "argument", "before -> after", "cause"], rows


def count_events(report: Report, show_all: bool) -> int:
    """How many rows ``event_rows`` has without a limit."""
    if show_all:
        return len(report.session.events)
    return sum(1 for _ in shown_events(report, show_all))


SAY_NOTHING_AT_ZERO = ("errors",)  # columns left out when every value is 0, as when empty


def _cause_table(report: Report, style: Style, width: int | None) -> list[str]:
    if not report.cause_table:
        return []
    lines = ["", style.heading.format(cause_table_title(report)),
             _table(cause_rows(report), style, width, last=("call", cost_header(report)))]
    if len(report.cause_table) > _MAX_ROWS:
        lines.append(f"... {len(report.cause_table) - _MAX_ROWS} more (see --format json)")
    return lines


def _functions(report: Report, show_all: bool, style: Style, width: int | None) -> list[str]:
    table = function_rows(report, show_all)
    lines = [style.heading.format("Functions")]
    lines.append(_table(table, style, width) if table[1]
                 else "(no user function was traced or compiled)")
    if not show_all:
        hidden = hidden_functions(report)
        if not eager_lines.shows_table(report.eager_lines, show_all):
            hidden += [line for line in [eager_lines.summary(report.eager_lines)] if line]
        if hidden and style is MARKDOWN:
            lines.append("")
        # ``+ jax: ...``: the marker is recompile-cli's (a list in Markdown), the rest data
        lines += _prose([f"+ {style.text(line.removeprefix('+ '))}" for line in hidden], width)
    return lines


def _events(report: Report, show_all: bool, style: Style, width: int | None) -> list[str]:
    table = event_rows(report, show_all, _MAX_ROWS)
    if not table[1]:
        return []
    lines = ["", style.heading.format("Recompilation events"),
             _table(table, style, width)]
    total = count_events(report, show_all)
    if total > _MAX_ROWS:
        lines.append(f"... {total - _MAX_ROWS} more (see --format json)")
    return lines


def _table(table: Table, style: Style, width: int | None, last: tuple[str, ...] = ()) -> str:
    """The table in the style: the one layout of every table (``fit.table``; ``last``: the
    columns it leaves out last)."""
    return fit.table(table, width, style.text, markdown=not style.fits,
                     zero=SAY_NOTHING_AT_ZERO, last=last)


def _top_causes(causes: dict[CauseCode, int], limit: int = 3) -> str:
    return ", ".join(f"{code} {n}" for code, n in list(causes.items())[:limit])


def render_markdown(report: Report, show_all: bool = False) -> str:
    return render(report, show_all, MARKDOWN)
