"""From a frozen ``Session`` to a ``Report``: causes per event, per-function totals, suggestions.

Pure: no printing and no JAX. Aggregation is done with pandas.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from .causes import Cause, explain_events
from .model import Event, Session, function_key
from .suggest import Suggestion, suggest

FUNCTION_COLUMNS = ["key", "name", "defined_at", "owner", "calls", "traces", "compiles",
                    "errors", "trace_seconds", "lower_seconds", "compile_seconds", "causes"]


@dataclass(frozen=True)
class Report:
    """Everything the renderers and gates read."""

    session: Session
    causes: dict[int, tuple[Cause, ...]]  # event seq -> causes, primary first
    functions: pd.DataFrame  # FUNCTION_COLUMNS, user functions first, then by compile time
    totals: dict[str, float | int]
    suggestions: tuple[Suggestion, ...]

    def primary(self, event: Event) -> Cause:
        return self.causes[event.seq][0]


def analyse(session: Session) -> Report:
    causes = explain_events(session.events, session.base_context)
    functions = _functions(session, causes)
    totals = {
        "traces": sum(e.traced for e in session.events),
        "compiles": sum(e.compiled for e in session.events),
        "errors": sum(e.error is not None for e in session.events),
        # Nested traces run inside their parent's trace: count only the outermost ones.
        "trace_seconds": sum(e.trace_seconds for e in session.events if e.depth == 0),
        "lower_seconds": sum(e.lower_seconds for e in session.events),
        "compile_seconds": sum(e.compile_seconds for e in session.events),
        "wall_seconds": session.wall_seconds,
    }
    return Report(session, causes, functions, totals,
                  tuple(suggest(session.events, causes)))


def _functions(session: Session, causes: dict[int, tuple[Cause, ...]]) -> pd.DataFrame:
    rows = [{
        "key": function_key(e.function, e.defined_at), "name": e.function,
        "defined_at": e.defined_at, "owner": e.owner, "traced": int(e.traced),
        "compiled": int(e.compiled), "error": int(e.error is not None),
        "trace_seconds": e.trace_seconds, "lower_seconds": e.lower_seconds,
        "compile_seconds": e.compile_seconds, "cause": causes[e.seq][0].code,
    } for e in session.events]
    if not rows:
        return pd.DataFrame(columns=FUNCTION_COLUMNS)
    frame = pd.DataFrame(rows)
    grouped = frame.groupby("key", sort=False)
    table = grouped.agg(
        name=("name", "first"), defined_at=("defined_at", "first"), owner=("owner", "first"),
        traces=("traced", "sum"), compiles=("compiled", "sum"), errors=("error", "sum"),
        trace_seconds=("trace_seconds", "sum"), lower_seconds=("lower_seconds", "sum"),
        compile_seconds=("compile_seconds", "sum"),
    ).reset_index()
    table["causes"] = [dict(Counter(frame.loc[frame["key"] == k, "cause"]).most_common())
                       for k in table["key"]]
    table["calls"] = [session.calls.get(k) for k in table["key"]]
    table["user_first"] = table["owner"] != "user"
    table = table.sort_values(["user_first", "compile_seconds"], ascending=[True, False],
                              kind="stable")
    return table[FUNCTION_COLUMNS].reset_index(drop=True)
