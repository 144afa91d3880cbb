"""The report's tables as pandas DataFrames: ``functions``, ``events``, ``causes`` and
``slow_calls``, the tables of ``to_pandas()`` and of the CSV files.

The one module of the analysis that imports pandas, so that only these DataFrame-shaped outputs
load it: the ``Report`` itself holds plain rows (``FunctionRow``, ``CauseRow``).
"""

from __future__ import annotations

from dataclasses import fields

import pandas as pd

from recompile_cli.analysis.report import (
    CAUSE_COLUMNS,
    FUNCTION_COLUMNS,
    Report,
    event_kind,
    package_of,
)
from recompile_cli.analysis.slow_calls import SlowGroup

EVENT_COLUMNS = ["seq", "function", "defined_at", "owner", "call_site", "call_index", "depth",
                 "kind", "traced", "compiled", "start_seconds", "trace_seconds", "lower_seconds",
                 "compile_seconds", "cause", "argument", "before", "after", "detail",
                 "error_type", "error_argument", "persistent_cache", "equations",
                 "constants_bytes", "module_ops", "module_ops_bounded", "top_line",
                 "top_line_equations"]
SLOW_CALL_COLUMNS = [f.name for f in fields(SlowGroup)]
COST_LINE_COLUMNS = ["seq", "function", "line", "equations", "share", "est_compile_seconds",
                     "in_bodies", "repeats"]


def cost_lines_frame(report: Report) -> pd.DataFrame:
    """One row per (compile, user line) of each event's compile cost (COST_LINE_COLUMNS): the
    per-line breakdown, the compile's seconds apportioned by equation share."""
    rows = []
    for e in report.session.events:
        if e.cost is None:
            continue
        total = max(e.cost.equations, 1)
        rows += [[e.seq, e.function, line.location, line.equations, line.equations / total,
                  e.compile_seconds * line.equations / total, line.in_bodies, line.repeats]
                 for line in e.cost.lines]
    return pd.DataFrame(rows, columns=COST_LINE_COLUMNS)


def functions_frame(report: Report) -> pd.DataFrame:
    """One row per function (FUNCTION_COLUMNS), in the report's order; ``calls`` is a nullable
    integer column (``<NA>`` where calls were not counted)."""
    rows = report.functions
    columns: dict[str, object] = {name: [getattr(r, name) for r in rows]
                                  for name in FUNCTION_COLUMNS}
    columns["calls"] = pd.array([r.calls for r in rows], dtype="Int64")
    return pd.DataFrame(columns, columns=FUNCTION_COLUMNS)


def slow_calls_frame(report: Report) -> pd.DataFrame:
    """One row per group of slow calls (SLOW_CALL_COLUMNS), most avoidable seconds first;
    ``process`` is a nullable integer column (``<NA>`` outside a merged session)."""
    rows = report.slow_calls.groups
    frame = pd.DataFrame({name: [getattr(g, name) for g in rows] for name in SLOW_CALL_COLUMNS},
                         columns=SLOW_CALL_COLUMNS)
    frame["process"] = frame["process"].astype("Int64")
    return frame


EAGER_LINE_COLUMNS = ["line", "operation", "package", "compiles", "again", "seconds",
                      "again_seconds", "change", "cause", "host_callback", "storm"]


def eager_lines_frame(report: Report) -> pd.DataFrame:
    """One row per operation compiled at a line of yours (EAGER_LINE_COLUMNS), the most costly
    line first (``analysis.eager_lines``)."""
    rows = [[line.line, op.name, package_of(op.owner, op.defined_at), op.compiles, op.again,
             op.seconds, op.again_seconds, op.change, op.code, line.host_callback, line.storm]
            for line in report.eager_lines.lines for op in line.ops]
    return pd.DataFrame(rows, columns=EAGER_LINE_COLUMNS)


def causes_frame(report: Report) -> pd.DataFrame:
    """The cost-ranked cause table (CAUSE_COLUMNS), most expensive first; ``also`` (the other
    changes of a row's compiles) as text, ``code argument: values`` joined by ``; ``."""
    rows = report.cause_table
    frame = pd.DataFrame({name: [getattr(r, name) for r in rows] for name in CAUSE_COLUMNS},
                         columns=CAUSE_COLUMNS)
    frame["also"] = ["; ".join(f"{a.code} {a.argument}: {a.values}".replace(" :", ":")
                               for a in r.also) for r in rows]
    return frame


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
        "equations": [e.cost.equations if e.cost else None for e in events],
        "constants_bytes": [e.cost.constants_bytes if e.cost else None for e in events],
        "module_ops": [e.cost.module_ops if e.cost else None for e in events],
        "module_ops_bounded": [e.cost.module_ops_bounded if e.cost else None for e in events],
        "top_line": [e.cost.lines[0].location if e.cost and e.cost.lines else None
                     for e in events],
        "top_line_equations": [e.cost.lines[0].equations if e.cost and e.cost.lines else None
                               for e in events],
    }
    assert list(columns) == EVENT_COLUMNS
    frame = pd.DataFrame(columns, columns=EVENT_COLUMNS)
    for name in ("equations", "constants_bytes", "module_ops", "top_line_equations"):
        frame[name] = frame[name].astype("Int64")  # <NA> where no compile cost was recorded
    return frame
