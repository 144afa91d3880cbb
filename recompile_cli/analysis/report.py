"""From a frozen ``Session`` to a ``Report``: causes, per-function totals, the cost-ranked cause
table, event kinds and suggestions.

Pure: no printing and no JAX. Aggregation is done with pandas.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from recompile_cli.analysis.causes import FIRST_COMPILE, Cause
from recompile_cli.analysis.merge import explain_by_process
from recompile_cli.analysis.suggest import Suggestion, suggest
from recompile_cli.capture.frames import path_of
from recompile_cli.session.model import Event, EventKind, Owner, Session, function_key

FUNCTION_COLUMNS = ["key", "name", "defined_at", "owner", "package", "calls", "traces",
                    "compiles", "errors", "trace_seconds", "lower_seconds", "compile_seconds",
                    "causes"]
EVENT_COLUMNS = ["seq", "function", "defined_at", "owner", "call_site", "call_index", "depth",
                 "kind", "traced", "compiled", "start_seconds", "trace_seconds", "lower_seconds",
                 "compile_seconds", "cause", "argument", "before", "after", "detail",
                 "error_type", "error_argument", "persistent_cache"]
CAUSE_COLUMNS = ["function", "owner", "code", "argument", "call_site", "count", "seconds",
                 "values", "first_event"]

# What happened in one top-level event (``EventKind``, defined with the model; nested traces are
# part of their parent's). The names stay importable from here for the renderers.
RETRACED_AND_COMPILED = EventKind.RETRACED_AND_COMPILED
RETRACED_REUSED = EventKind.RETRACED_REUSED
COMPILED_WITHOUT_RETRACE = EventKind.COMPILED_WITHOUT_RETRACE
TRACE_FAILED = EventKind.TRACE_FAILED
NESTED_TRACE = EventKind.NESTED_TRACE
EVENT_KINDS = tuple(EventKind)


@dataclass(frozen=True)
class Report:
    """Everything the renderers and gates read."""

    session: Session
    causes: dict[int, tuple[Cause, ...]]  # event seq -> causes, primary first
    functions: pd.DataFrame  # FUNCTION_COLUMNS, user functions first, then by compile time
    cause_table: pd.DataFrame  # CAUSE_COLUMNS, most expensive first
    totals: dict[str, float | int]
    suggestions: tuple[Suggestion, ...]

    def primary(self, event: Event) -> Cause:
        return self.causes[event.seq][0]


def event_kind(event: Event) -> EventKind:
    if event.depth > 0:
        return NESTED_TRACE
    if event.error is not None:
        return TRACE_FAILED
    if event.traced:
        return RETRACED_AND_COMPILED if event.compiled else RETRACED_REUSED
    return COMPILED_WITHOUT_RETRACE


def event_cost(event: Event) -> float:
    """Seconds a miss cost: its trace (top level only: nested traces run inside their parent's),
    lowering and backend compile."""
    trace = event.trace_seconds if event.depth == 0 else 0.0
    return trace + event.lower_seconds + event.compile_seconds


def analyse(session: Session) -> Report:
    causes = explain_by_process(session.events, session.base_context)
    kinds = Counter(event_kind(e) for e in session.events if e.owner != Owner.JAX)
    totals: dict[str, float | int] = {
        "traces": sum(e.traced for e in session.events),
        "compiles": sum(e.compiled for e in session.events),
        "errors": sum(e.error is not None for e in session.events),
        "trace_seconds": sum(e.trace_seconds for e in session.events if e.depth == 0),
        "lower_seconds": sum(e.lower_seconds for e in session.events),
        "compile_seconds": sum(e.compile_seconds for e in session.events),
        "wall_seconds": session.wall_seconds,
        **{kind: kinds.get(kind, 0) for kind in EVENT_KINDS},
        "persistent_cache_hits": sum(e.persistent_cache == "hit" for e in session.events),
        "persistent_cache_saved_seconds": sum(e.cache_saved_seconds for e in session.events),
    }
    return Report(session, causes, _functions(session, causes), _cause_table(session, causes),
                  totals, tuple(suggest(session.events, causes)))


def package_of(owner: str, defined_at: str | None) -> str:
    """The top-level package that defines a library function (``flax``), else the owner."""
    path = path_of(defined_at) or ""
    match = re.search(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)", path)
    if owner == Owner.LIBRARY and match:
        return match.group(1).removesuffix(".py")
    return owner


def _functions(session: Session, causes: dict[int, tuple[Cause, ...]]) -> pd.DataFrame:
    """One row per function; built from columns in one pass over the events (no per-event
    dictionaries, no per-group lookups), so it stays linear in the number of events.

    Each event's function gets a group number, in the order first seen, and pandas sums the
    numeric columns per number (a grouping by text would first factorize 100,000 texts)."""
    events = session.events
    if not events:
        return pd.DataFrame(columns=FUNCTION_COLUMNS)
    known: dict[tuple[str, str | None], int] = {}  # (name, defined_at) -> group number
    numbers: dict[str, int] = {}  # function key -> group number
    groups: list[int] = []
    firsts: list[Event] = []  # each group's first event
    located: list[str | None] = []  # each group's first defined_at that is not None
    counts: list[Counter[str]] = []
    for e in events:
        number = known.get((e.function, e.defined_at))
        if number is None:
            key = function_key(e.function, e.defined_at)
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = len(firsts)
                firsts.append(e)
                located.append(None)
                counts.append(Counter())
            known[e.function, e.defined_at] = number
        groups.append(number)
        if located[number] is None:
            located[number] = e.defined_at
        counts[number][causes[e.seq][0].code] += 1
    frame = pd.DataFrame({
        "group": groups,
        "traces": [int(e.traced) for e in events], "compiles": [int(e.compiled) for e in events],
        "errors": [int(e.error is not None) for e in events],
        "trace_seconds": [e.trace_seconds for e in events],
        "lower_seconds": [e.lower_seconds for e in events],
        "compile_seconds": [e.compile_seconds for e in events],
    })
    sums = frame.groupby("group", sort=True).sum().reset_index(drop=True)
    keys = list(numbers)
    table = pd.DataFrame({"key": keys, "name": [e.function for e in firsts],
                          "defined_at": located, "owner": [e.owner for e in firsts]})
    table = pd.concat([table, sums], axis=1)
    table["package"] = [package_of(e.owner, e.defined_at) for e in firsts]
    table["causes"] = pd.Series([dict(c.most_common()) for c in counts], index=table.index,
                                dtype=object)
    table["calls"] = pd.array([session.calls.get(k) for k in keys], dtype="Int64")
    table["not_user"] = table["owner"] != Owner.USER
    table = table.sort_values(["not_user", "compile_seconds"], ascending=[True, False],
                              kind="stable")
    return table[FUNCTION_COLUMNS].reset_index(drop=True)


_CauseKey = tuple[str, str, str, str, str]
_CAUSE_KEY = ["function", "owner", "code", "argument", "call_site"]


def _cause_table(session: Session, causes: dict[int, tuple[Cause, ...]]) -> pd.DataFrame:
    """One row per (function, cause, argument, call site) of top-level re-compilations that are
    not JAX's own, with the seconds they cost; repeated events collapse into one row.

    Each row's key gets a number, in the order first seen, and its values are gathered in the
    same pass (a dictionary per key); pandas then sums the seconds per number."""
    numbers: dict[_CauseKey, int] = {}
    groups: list[int] = []
    seconds: list[float] = []
    seqs: list[int] = []
    values: list[dict[str, None]] = []
    for e in session.events:
        cause = causes[e.seq][0]
        if e.depth > 0 or e.owner == Owner.JAX or cause.code == FIRST_COMPILE:
            continue
        key = (e.function, e.owner, cause.code, cause.argument or "", e.call_site or "")
        number = numbers.get(key)
        if number is None:
            number = numbers[key] = len(values)
            values.append({})
            _add_value(values[number], cause.before)
        _add_value(values[number], cause.after)
        groups.append(number)
        seconds.append(event_cost(e))
        seqs.append(e.seq)
    if not groups:
        return pd.DataFrame(columns=CAUSE_COLUMNS)
    frame = pd.DataFrame({"group": groups, "seconds": seconds, "seq": seqs})
    sums = frame.groupby("group", sort=True).agg(
        count=("seq", "size"), seconds=("seconds", "sum"), first_event=("seq", "min"),
    ).reset_index(drop=True)
    table = pd.concat([pd.DataFrame(list(numbers), columns=_CAUSE_KEY), sums], axis=1)
    table["values"] = [_value_range(found) for found in values]
    table = table.sort_values(["seconds", "count"], ascending=False, kind="stable")
    return table[CAUSE_COLUMNS].reset_index(drop=True)


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


def events_frame(report: Report) -> pd.DataFrame:
    """One flat row per event (EVENT_COLUMNS), its primary cause spelled out; built column by
    column."""
    events = report.session.events
    primary = [report.causes[e.seq][0] for e in events]
    columns: dict[str, list[object]] = {
        "seq": [e.seq for e in events], "function": [e.function for e in events],
        "defined_at": [e.defined_at for e in events], "owner": [e.owner for e in events],
        "call_site": [e.call_site for e in events],
        "call_index": [e.call_index for e in events], "depth": [e.depth for e in events],
        "kind": [event_kind(e) for e in events], "traced": [e.traced for e in events],
        "compiled": [e.compiled for e in events],
        "start_seconds": [e.start_seconds for e in events],
        "trace_seconds": [e.trace_seconds for e in events],
        "lower_seconds": [e.lower_seconds for e in events],
        "compile_seconds": [e.compile_seconds for e in events],
        "cause": [c.code for c in primary], "argument": [c.argument for c in primary],
        "before": [c.before for c in primary], "after": [c.after for c in primary],
        "detail": [c.detail for c in primary],
        "error_type": [e.error.type if e.error else None for e in events],
        "error_argument": [e.error.argument if e.error else None for e in events],
        "persistent_cache": [e.persistent_cache for e in events],
    }
    assert list(columns) == EVENT_COLUMNS
    return pd.DataFrame(columns, columns=EVENT_COLUMNS)
