"""From a frozen ``Session`` to a ``Report``: causes, per-function totals (``FunctionRow``), the
cost-ranked cause table (``CauseRow``: re-compilations, and the slow calls of
``analysis.slow_calls`` ranked among them by the seconds they cost), the run's ``Totals``,
event kinds and suggestions; and, computed once on first read, the compile cost, the
warm-up's coverage, the shape sweeps and the wasted compiles. Renderers and gates only read a
report: none of them runs an analysis of its own.

Pure: no printing, no JAX and no pandas; every table is built in one pass over the events, so
that it stays linear in their number. The DataFrames of the Python API and the CSV files are
made from these rows by ``analysis.dataframes``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property

from recompile_cli.analysis.advice import eager as eager_advice
from recompile_cli.analysis.advice.suggest import Suggestion, SuggestionCode, suggest
from recompile_cli.analysis.cache.outcomes import CacheOutcomes
from recompile_cli.analysis.cache.outcomes import outcomes as cache_outcomes
from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.explain import public_only
from recompile_cli.analysis.compile_cost import CompileCostReport, analyse_cost
from recompile_cli.analysis.eager_lines import EagerReport, analyse_eager_lines
from recompile_cli.analysis.hosts.merge import explain_by_process
from recompile_cli.analysis.slow_calls import SlowCallReport, analyse_slow_calls
from recompile_cli.analysis.sweeps import Sweep, sweeps
from recompile_cli.analysis.warmup.coverage import Coverage, coverage
from recompile_cli.analysis.wasted_compiles import WastedReport, wasted_compiles
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import (
    CacheOutcome,
    CauseCode,
    Event,
    EventKind,
    HookMode,
    Owner,
    Session,
    SlowReason,
    function_key,
)


@dataclass(frozen=True, slots=True)
class Totals:
    """Counts and seconds over the whole session; the JSON report's ``totals`` (its keys are
    these fields, in this order). The five event kinds count top-level events that are not
    JAX's own (``EventKind``)."""

    traces: int
    compiles: int
    errors: int
    trace_seconds: float  # top-level traces only: nested ones run inside their parent's
    lower_seconds: float
    compile_seconds: float
    wall_seconds: float
    retraced_and_compiled: int
    retraced_executable_reused: int
    compiled_without_retrace: int
    trace_failed: int
    nested_trace: int
    persistent_cache_hits: int
    persistent_cache_saved_seconds: float
    # Added in 0.2: compiles split into first compiles and re-compiles, and by owner.
    first_compiles: int = 0
    recompiles: int = 0
    by_owner: dict[Owner, OwnerTotals] = field(default_factory=dict)  # owners with events
    # Added in 0.3: persistent-cache misses written, and not written by reason.
    persistent_cache_misses_written: int = 0
    persistent_cache_misses_not_written: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OwnerTotals:
    """One owner's share of the run (``Totals.by_owner``): how many of its functions compiled,
    and their traces, compiles (first compiles and re-compiles), errors and compile seconds
    (``Tally``)."""

    functions: int
    traces: int
    compiles: int
    first_compiles: int
    recompiles: int
    errors: int
    compile_seconds: float


@dataclass(frozen=True, slots=True)
class FunctionRow:
    """One function (all its function objects with the same name and ``file:line``) and its
    totals; ``causes`` counts the primary cause codes of its events, most frequent first."""

    key: str  # name@file:line (``function_key``)
    name: str
    defined_at: str | None
    owner: Owner
    package: str  # the library's top-level package, else the owner (``package_of``)
    calls: int | None  # None where calls were not counted
    traces: int
    compiles: int
    errors: int
    trace_seconds: float
    lower_seconds: float
    compile_seconds: float
    causes: dict[CauseCode, int]

    @property
    def label(self) -> str:
        """The name as reports show it (``shown_name``): ``update_fn (optax)``."""
        return shown_name(self.name, self.owner, self.package)


class RowKind(StrEnum):
    """What a row of the cost-ranked table counts: re-compilations, or slow calls."""

    RECOMPILE = "recompile"
    SLOW_CALLS = "slow_calls"


@dataclass(frozen=True, slots=True)
class AlsoChanged:
    """A change of another cause code that a cause-table row's compiles made besides their
    primary cause (a weak type that changed in the same call as a static value): its code, the
    first argument it names, and its values."""

    code: CauseCode
    argument: str
    values: str  # as ``CauseRow.values``


@dataclass(frozen=True, slots=True)
class CauseRow:
    """The re-compilations of one function with the same cause, argument and call site
    (``""`` where there is none): how many, what they cost, and the values they went through.
    Every other cause code of those compiles is in ``also``, at the first argument it names
    (compiles whose other changes differ are rows of their own), so that no kind of change is
    hidden behind the primary cause; changes of the primary's own code at other arguments (the
    rest of a batch that changed shape) are each event's ``causes``.

    A ``slow_calls`` row (``kind``) is a group of slow calls instead: ``code`` is its
    ``SlowReason``, ``count`` its calls, ``seconds`` what they cost above the fast path,
    ``values`` what keeps it off the fast path, and ``first_event`` -1 (no event)."""

    function: str
    owner: Owner
    code: CauseCode | SlowReason
    argument: str
    call_site: str
    count: int
    seconds: float
    values: str  # ``f32[3] -> f32[4]``, or the first and last of many (``_value_range``)
    first_event: int  # the smallest seq
    kind: RowKind = RowKind.RECOMPILE
    also: tuple[AlsoChanged, ...] = ()  # the other cause codes of the same compiles, in order


FUNCTION_COLUMNS = [f.name for f in fields(FunctionRow)]
# The warning of a recording that kept JAX's in-memory caches (``record(keep_caches=True)``,
# ``%%recompiles --keep-caches``): its first compiles may be re-compiles of earlier ones.
KEPT_CACHES = ("JAX's in-memory caches were kept (keep_caches): a function that compiled before "
               "the recording counts its compiles in it from its first, so a compile called a "
               "first compile here may re-compile an earlier one")
CAUSE_COLUMNS = [f.name for f in fields(CauseRow)]


@dataclass(frozen=True)
class Report:
    """Everything the renderers and gates read."""

    session: Session
    causes: dict[int, tuple[Cause, ...]]  # event seq -> causes, primary first
    functions: tuple[FunctionRow, ...]  # user functions first, then by compile seconds
    cause_table: tuple[CauseRow, ...]  # most expensive first
    totals: Totals
    suggestions: tuple[Suggestion, ...]
    slow_calls: SlowCallReport = field(default_factory=SlowCallReport)
    eager_lines: EagerReport = field(default_factory=EagerReport)  # code not yours, by line
    cache_outcomes: CacheOutcomes = field(
        default_factory=lambda: CacheOutcomes(0, 0.0, True, 0, {}))  # the persistent cache

    def primary(self, event: Event) -> Cause:
        return self.causes[event.seq][0]

    # Computed on first read, once: a format or gate that shows none of them pays nothing.
    @cached_property
    def compile_cost(self) -> CompileCostReport:
        """The compile cost of the user's functions (``analysis.compile_cost``)."""
        return analyse_cost(self.session)

    @cached_property
    def warmup_coverage(self) -> Coverage | None:
        """What the run's warm-up plan did not cover (None: no plan ran)."""
        return coverage(self.session, self.causes)

    @cached_property
    def sweeps(self) -> tuple[Sweep, ...]:
        """The shape sweeps of the user's functions, largest first (``analysis.sweeps``)."""
        return tuple(sweeps(self.session))

    @cached_property
    def cost_stages(self) -> str:
        """What the cause table's seconds add up (``event_cost``): ``trace+lower+compile``, or
        in a session whose compiles were predicted, not measured (a forecast compiles nothing:
        ``forecast_session``), ``trace``, or ``trace+lower`` where lowerings were measured."""
        events = self.session.events
        if any(e.compiled and (e.compile_seconds or e.compile_start_seconds is not None)
               for e in events) or not any(e.compiled for e in events):
            return "trace+lower+compile"
        if any(e.lower_seconds or e.lower_start_seconds is not None for e in events):
            return "trace+lower"
        return "trace"

    @cached_property
    def wasted_compiles(self) -> WastedReport:
        """The compiles that repeated a program their function had compiled
        (``analysis.wasted_compiles``)."""
        return wasted_compiles(self.session, self.causes)


def event_kind(event: Event) -> EventKind:
    """What happened in one event (nested traces are part of their parent's)."""
    if event.depth > 0:
        return EventKind.NESTED_TRACE
    if event.error is not None:
        return EventKind.TRACE_FAILED
    if event.traced:
        return (EventKind.RETRACED_AND_COMPILED if event.compiled
                else EventKind.RETRACED_REUSED)
    return EventKind.COMPILED_WITHOUT_RETRACE


def event_cost(event: Event) -> float:
    """Seconds a miss cost: its trace (top level only: nested traces run inside their parent's),
    lowering and backend compile."""
    trace = event.trace_seconds if event.depth == 0 else 0.0
    return trace + event.lower_seconds + event.compile_seconds


def build_report(session: Session) -> Report:
    """The session analysed: each event's causes, the function rows, the cause table, the
    totals and the suggestions."""
    causes = explain_by_process(session.events, session.base_context)
    if session.environment.hook_mode == HookMode.PUBLIC_ONLY:
        causes = public_only(causes)
    slow = analyse_slow_calls(session)
    eager = analyse_eager_lines(session, causes)
    cache = cache_outcomes(session.events)
    totals = _totals(session, causes, cache)
    return Report(session, causes, _functions(session, causes),
                  _cause_table(session, causes, slow), totals,
                  (*suggest(session.events, causes, session.calls, session.target_exception),
                   *_eager_suggestions(eager, totals.compile_seconds)),
                  slow, eager, cache)


def _eager_suggestions(eager: EagerReport, compile_seconds: float) -> list[Suggestion]:
    """One suggestion per line of yours whose compiles of code not yours have a fix."""
    out = []
    grouped = eager_advice.callback_storms(eager.lines)
    for lines in grouped:
        again = sum(line.storm_again for line in lines)
        out.append(Suggestion(
            lines[0].line, SuggestionCode.EAGER_COMPILES,
            eager_advice.callback_storm_text(lines) + ".",
            predicted_compiles=sum(line.compiles for line in lines) - again))
    advised = {line.line for lines in grouped for line in lines}
    for line in eager.lines:
        fix = eager_advice.fix(line, compile_seconds)
        if fix is not None and line.line not in advised:
            out.append(Suggestion(
                line.line, SuggestionCode.EAGER_COMPILES,
                f"{eager_advice.why(line)}. Fix: {fix}.",
                predicted_compiles=line.compiles - line.storm_again if line.storm else None))
    for lines in eager_advice.model_builds(eager.lines, compile_seconds):
        out.append(Suggestion(lines[0].line, SuggestionCode.EAGER_COMPILES,
                              eager_advice.model_build_text(lines) + "."))
    return out


def _totals(session: Session, causes: dict[int, tuple[Cause, ...]],
            cache: CacheOutcomes) -> Totals:
    events = session.events
    kinds = Counter(event_kind(e) for e in events if e.owner != Owner.JAX)
    owners = {owner: tally((e for e in events if e.owner == owner), causes)
              for owner in dict.fromkeys(e.owner for e in events)}
    return Totals(
        traces=sum(e.traced for e in events),
        compiles=sum(e.compiled for e in events),
        errors=sum(e.error is not None for e in events),
        trace_seconds=sum(e.trace_seconds for e in events if e.depth == 0),
        lower_seconds=sum(e.lower_seconds for e in events),
        compile_seconds=sum(e.compile_seconds for e in events),
        wall_seconds=session.wall_seconds,
        retraced_and_compiled=kinds[EventKind.RETRACED_AND_COMPILED],
        retraced_executable_reused=kinds[EventKind.RETRACED_REUSED],
        compiled_without_retrace=kinds[EventKind.COMPILED_WITHOUT_RETRACE],
        trace_failed=kinds[EventKind.TRACE_FAILED],
        nested_trace=kinds[EventKind.NESTED_TRACE],
        persistent_cache_hits=sum(e.persistent_cache == CacheOutcome.HIT for e in events),
        persistent_cache_saved_seconds=sum(e.cache_saved_seconds for e in events),
        first_compiles=sum(t.first_compiles for t in owners.values()),
        recompiles=sum(t.recompile_count for t in owners.values()),
        by_owner={owner: _owner_totals(t) for owner, t in owners.items()},
        persistent_cache_misses_written=cache.written,
        persistent_cache_misses_not_written=cache.not_written,
    )


def _owner_totals(found: Tally) -> OwnerTotals:
    return OwnerTotals(functions=len(found.functions), traces=found.traces,
                       compiles=found.compiles, first_compiles=found.first_compiles,
                       recompiles=found.recompile_count,
                       errors=found.error_count + sum(found.refused.values()),  # all that raised
                       compile_seconds=_seconds(found.compile_seconds))


def package_of(owner: str, defined_at: str | None) -> str:
    """The top-level installed package that defines a function (``flax``, ``jax``), whoever
    owns it (a library's function that the user jitted is the user's, defined in ``optax``),
    else the owner."""
    path = path_of(defined_at) or ""
    match = re.search(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)", path)
    if match:
        return match.group(1).removesuffix(".py")
    return owner


def shown_name(name: str, owner: str, package: str) -> str:
    """A function's name as reports show it: with its package where that is not its owner, so
    that flax's internal ``<lambda>`` never reads as one of yours (``<lambda> (flax)``), and a
    library's function that you jitted keeps its library's name (``update_fn (optax)``)."""
    return name if package == owner else f"{name} ({package})"


def _functions(session: Session, causes: dict[int, tuple[Cause, ...]]
               ) -> tuple[FunctionRow, ...]:
    """One row per function, user functions first, then by compile seconds (NaN last; stable).

    One pass puts each event in its function's group (found by name and ``defined_at``, so
    that each function's key text is made once), then each group is summed."""
    known: dict[tuple[str, str | None], list[Event]] = {}
    groups: dict[str, list[Event]] = {}  # function key -> its events; in the order first seen
    for e in session.events:
        members = known.get((e.function, e.defined_at))
        if members is None:
            members = groups.setdefault(function_key(e.function, e.defined_at), [])
            known[e.function, e.defined_at] = members
        members.append(e)
    rows = [_function_row(key, members, session.calls.get(key), causes)
            for key, members in groups.items()]
    rows.sort(key=lambda r: (r.owner != Owner.USER, _descending(r.compile_seconds)))
    return tuple(rows)


def _function_row(key: str, members: list[Event], calls: int | None,
                  causes: dict[int, tuple[Cause, ...]]) -> FunctionRow:
    first = members[0]
    codes = Counter(causes[e.seq][0].code for e in members)
    # the user's once any of its events is (the user jitted a library's function)
    owner = Owner.USER if any(e.owner == Owner.USER for e in members) else first.owner
    return FunctionRow(
        key=key, name=first.function,
        defined_at=next((e.defined_at for e in members if e.defined_at is not None), None),
        owner=owner, package=package_of(owner, first.defined_at), calls=calls,
        traces=sum(e.traced for e in members), compiles=sum(e.compiled for e in members),
        errors=sum(e.error is not None for e in members),
        trace_seconds=_seconds(e.trace_seconds for e in members),
        lower_seconds=_seconds(e.lower_seconds for e in members),
        compile_seconds=_seconds(e.compile_seconds for e in members),
        causes=dict(codes.most_common()))


@dataclass(slots=True)
class _CauseGroup:
    """The events of one cause-table row, gathered in the pass over the events."""

    first_event: int
    costs: list[float]
    values: dict[str, None]  # an ordered set (``_add_value``)
    also: dict[tuple[CauseCode, str], dict[str, None]]  # the other changes' values


def _cause_table(session: Session, causes: dict[int, tuple[Cause, ...]],
                 slow: SlowCallReport) -> tuple[CauseRow, ...]:
    """One row per (function, cause, argument, call site, other changes) of top-level
    re-compilations that are not JAX's own, with the seconds they cost; repeated events collapse
    into one row; and one per group of slow calls that is not JAX's own. Most expensive first
    (NaN last), then the most frequent; stable."""
    groups: dict[tuple[tuple[str, Owner, CauseCode, str, str],
                       tuple[tuple[CauseCode, str], ...]], _CauseGroup] = {}
    for e in session.events:
        cause, *rest = causes[e.seq]
        if (e.depth > 0 or e.owner == Owner.JAX or cause.code == CauseCode.FIRST_COMPILE
                or e.error is not None or (e.owner != Owner.USER and not e.compiled)):
            continue  # a trace that raised is no re-compile, nor a library's re-trace
        others = _other_codes(cause, rest)
        also = tuple((c.code, c.argument or "") for c in others)
        key = ((e.function, e.owner, cause.code, cause.argument or "", e.call_site or ""), also)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _CauseGroup(e.seq, [], {}, {change: {} for change in also})
            _add_value(group.values, cause.before)
            for change, other in zip(also, others, strict=True):
                _add_value(group.also[change], other.before)
        _add_value(group.values, cause.after)
        for change, other in zip(also, others, strict=True):
            _add_value(group.also[change], other.after)
        group.costs.append(event_cost(e))
        group.first_event = min(group.first_event, e.seq)
    rows = [CauseRow(*key, count=len(g.costs), seconds=_seconds(g.costs),
                     values=_value_range(g.values), first_event=g.first_event,
                     also=tuple(AlsoChanged(code, argument, _value_range(values))
                                for (code, argument), values in g.also.items()))
            for (key, _), g in groups.items()]
    rows += [CauseRow(g.function, g.owner, g.reason, "", g.call_site or "", g.calls,
                      g.avoidable_seconds, g.detail, -1, RowKind.SLOW_CALLS)
             for g in slow.groups if g.owner != Owner.JAX]
    rows.sort(key=lambda r: (_descending(r.seconds), -r.count))
    return tuple(rows)


def _other_codes(primary: Cause, rest: Iterable[Cause]) -> list[Cause]:
    """The first cause of each code other than the primary's, in order."""
    seen = {primary.code}
    out = []
    for cause in rest:
        if cause.code not in seen:
            seen.add(cause.code)
            out.append(cause)
    return out


def _seconds(values: Iterable[float]) -> float:
    """The sum of a group's seconds, correctly rounded (``math.fsum``), so that it does not
    depend on the order of the events; NaN when infinities of both signs meet."""
    try:
        return math.fsum(values)
    except ValueError:  # inf + -inf
        return math.nan


def _descending(seconds: float) -> tuple[bool, float]:
    """A sort key: the most seconds first, NaN after every number."""
    return (seconds != seconds, -seconds)


def _add_value(values: dict[str, None], value: str | None) -> None:
    """Keep each distinct value once, in the order first seen (a dictionary as an ordered set:
    a row of 100,000 distinct shapes costs one lookup per value, not a scan of the list)."""
    if value is not None and value == value:
        values.setdefault(str(value))


def _value_range(values: dict[str, None]) -> str:
    """``f32[100,100] -> f32[150,150]`` for one event; ``f32[1] ... f32[40] (40 values)`` for
    many: the first value seen before and the values seen after, in order."""
    if len(values) <= 3:
        return " -> ".join(values)
    return f"{next(iter(values))} ... {next(reversed(values))} ({len(values)} values)"


# -- the tally of a run's misses ---------------------------------------------------------------
# Counting a run's misses the way a user reads them: first compiles, re-compiles (by cause),
# re-traces that reused the executable, and traces that raised.
#
# A *first compile* is a compile whose primary cause is ``first_compile``; every other compile is a
# *re-compile*. Nested traces (inside another function's trace) are part of their parent's and
# count as traces only. ``Tally`` adds events up; the report's totals split by owner
# (``Totals.by_owner``) and the headline of the human reports (one line per function of yours,
# ``render.sections.headline``) are both made of it, so that they always agree. Pure: no JAX.
@dataclass(slots=True)
class Tally:
    """The misses of a group of events (one function's, or one owner's)."""

    traces: int = 0
    compiles: int = 0
    first_compiles: int = 0
    recompiles: Counter[CauseCode] = field(default_factory=Counter)  # by primary cause
    retraces: Counter[CauseCode] = field(default_factory=Counter)  # that compiled nothing
    errors: Counter[str] = field(default_factory=Counter)  # by exception type
    refused: Counter[str] = field(default_factory=Counter)  # calls JAX refused, by argument
    compile_seconds: list[float] = field(default_factory=list)
    functions: set[tuple[str, str | None]] = field(default_factory=set)  # that compiled

    def add(self, event: Event, cause: Cause) -> None:
        """Count one event, explained by its primary ``cause``."""
        self.traces += event.traced
        self.compile_seconds.append(event.compile_seconds)
        if event.error is not None and event.error.refused:
            argument = event.error.argument
            self.refused[f"static `{argument}`" if argument else "static data"] += 1
        elif event.error is not None:
            self.errors[event.error.type] += 1
        elif event.compiled:
            self.compiles += 1
            self.functions.add((event.function, event.defined_at))
            if cause.code == CauseCode.FIRST_COMPILE:
                self.first_compiles += 1
            else:
                self.recompiles[cause.code] += 1
        elif event.traced and event.depth <= 0 and cause.code != CauseCode.FIRST_COMPILE:
            self.retraces[cause.code] += 1

    @property
    def recompile_count(self) -> int:
        return sum(self.recompiles.values())

    @property
    def retrace_count(self) -> int:
        return sum(self.retraces.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def tally(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]]) -> Tally:
    """The misses of ``events`` (``causes``: event seq -> its causes, primary first)."""
    found = Tally()
    for event in events:
        found.add(event, causes[event.seq][0])
    return found
