"""From a frozen ``Session`` to a ``Report``: causes, per-function totals, the cost-ranked cause
table, event kinds and suggestions.

Pure: no printing and no JAX. Aggregation is done with pandas.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from recompile_cli.analysis.causes import FIRST_COMPILE, Cause, explain_events
from recompile_cli.analysis.suggest import Suggestion, suggest
from recompile_cli.capture.frames import path_of
from recompile_cli.session.model import Event, Session, function_key

FUNCTION_COLUMNS = ["key", "name", "defined_at", "owner", "package", "calls", "traces",
                    "compiles", "errors", "trace_seconds", "lower_seconds", "compile_seconds",
                    "causes"]
EVENT_COLUMNS = ["seq", "function", "defined_at", "owner", "call_site", "call_index", "depth",
                 "kind", "traced", "compiled", "start_seconds", "trace_seconds", "lower_seconds",
                 "compile_seconds", "cause", "argument", "before", "after", "detail",
                 "error_type", "error_argument", "persistent_cache"]
CAUSE_COLUMNS = ["function", "owner", "code", "argument", "call_site", "count", "seconds",
                 "values", "first_event"]

# What happened in one top-level event (nested traces are part of their parent's).
RETRACED_AND_COMPILED = "retraced_and_compiled"
RETRACED_REUSED = "retraced_executable_reused"
COMPILED_WITHOUT_RETRACE = "compiled_without_retrace"
TRACE_FAILED = "trace_failed"
NESTED_TRACE = "nested_trace"
EVENT_KINDS = (RETRACED_AND_COMPILED, RETRACED_REUSED, COMPILED_WITHOUT_RETRACE, TRACE_FAILED,
               NESTED_TRACE)


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


def event_kind(event: Event) -> str:
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
    causes = explain_events(session.events, session.base_context)
    kinds = Counter(event_kind(e) for e in session.events if e.owner != "jax")
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
    if owner == "library" and match:
        return match.group(1).removesuffix(".py")
    return owner


def _functions(session: Session, causes: dict[int, tuple[Cause, ...]]) -> pd.DataFrame:
    rows = [{
        "key": function_key(e.function, e.defined_at), "name": e.function,
        "defined_at": e.defined_at, "owner": e.owner,
        "package": package_of(e.owner, e.defined_at), "traced": int(e.traced),
        "compiled": int(e.compiled), "error": int(e.error is not None),
        "trace_seconds": e.trace_seconds, "lower_seconds": e.lower_seconds,
        "compile_seconds": e.compile_seconds, "cause": causes[e.seq][0].code,
    } for e in session.events]
    if not rows:
        return pd.DataFrame(columns=FUNCTION_COLUMNS)
    frame = pd.DataFrame(rows)
    table = frame.groupby("key", sort=False).agg(
        name=("name", "first"), defined_at=("defined_at", "first"), owner=("owner", "first"),
        package=("package", "first"), traces=("traced", "sum"), compiles=("compiled", "sum"),
        errors=("error", "sum"), trace_seconds=("trace_seconds", "sum"),
        lower_seconds=("lower_seconds", "sum"), compile_seconds=("compile_seconds", "sum"),
    ).reset_index()
    by_key = frame.groupby("key", sort=False)["cause"]
    table["causes"] = pd.Series([dict(Counter(by_key.get_group(k)).most_common())
                                 for k in table["key"]], index=table.index, dtype=object)
    table["calls"] = pd.array([session.calls.get(k) for k in table["key"]], dtype="Int64")
    table["not_user"] = table["owner"] != "user"
    table = table.sort_values(["not_user", "compile_seconds"], ascending=[True, False],
                              kind="stable")
    return table[FUNCTION_COLUMNS].reset_index(drop=True)


def _cause_table(session: Session, causes: dict[int, tuple[Cause, ...]]) -> pd.DataFrame:
    """One row per (function, cause, argument, call site) of top-level re-compilations that are
    not JAX's own, with the seconds they cost; repeated events collapse into one row."""
    rows = []
    for e in session.events:
        cause = causes[e.seq][0]
        if e.depth > 0 or e.owner == "jax" or cause.code == FIRST_COMPILE:
            continue
        rows.append({"function": e.function, "owner": e.owner, "code": cause.code,
                     "argument": cause.argument or "", "call_site": e.call_site or "",
                     "seconds": event_cost(e), "before": cause.before, "after": cause.after,
                     "seq": e.seq})
    if not rows:
        return pd.DataFrame(columns=CAUSE_COLUMNS)
    frame = pd.DataFrame(rows)
    keys = ["function", "owner", "code", "argument", "call_site"]
    table = frame.groupby(keys, sort=False).agg(
        count=("seq", "size"), seconds=("seconds", "sum"), first_event=("seq", "min"),
    ).reset_index()
    table["values"] = [_value_range(group) for _, group in frame.groupby(keys, sort=False)]
    table = table.sort_values(["seconds", "count"], ascending=False, kind="stable")
    return table[CAUSE_COLUMNS].reset_index(drop=True)


def _value_range(group: pd.DataFrame) -> str:
    """``f32[100,100] -> f32[150,150]`` for one event; ``f32[1] ... f32[40] (40 values)`` for
    many: the first value seen before and the values seen after, in order."""
    values: list[str] = []
    for value in [group["before"].iloc[0], *group["after"]]:
        if value is not None and value == value and value not in values:
            values.append(str(value))
    if len(values) <= 3:
        return " -> ".join(values)
    return f"{values[0]} ... {values[-1]} ({len(values)} values)"


def events_frame(report: Report) -> pd.DataFrame:
    """One flat row per event (EVENT_COLUMNS), its primary cause spelled out."""
    rows = []
    for e in report.session.events:
        cause = report.primary(e)
        rows.append({
            "seq": e.seq, "function": e.function, "defined_at": e.defined_at, "owner": e.owner,
            "call_site": e.call_site, "call_index": e.call_index, "depth": e.depth,
            "kind": event_kind(e), "traced": e.traced, "compiled": e.compiled,
            "start_seconds": e.start_seconds, "trace_seconds": e.trace_seconds,
            "lower_seconds": e.lower_seconds, "compile_seconds": e.compile_seconds,
            "cause": cause.code, "argument": cause.argument, "before": cause.before,
            "after": cause.after, "detail": cause.detail,
            "error_type": e.error.type if e.error else None,
            "error_argument": e.error.argument if e.error else None,
            "persistent_cache": e.persistent_cache,
        })
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)
