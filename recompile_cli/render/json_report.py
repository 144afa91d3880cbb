"""The JSON report (``schema_version`` 1): the saved session (``session.files.session_to_dict``)
plus the analysis: totals, functions, cause_table, each event's kind, cause and causes, and
suggestions. Strict JSON: NaN and infinities are written as ``null``."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

import pandas as pd

from recompile_cli.analysis.causes import Cause
from recompile_cli.analysis.report import Report, event_kind
from recompile_cli.fileio import jsonable
from recompile_cli.render import json_text
from recompile_cli.session.files import session_to_dict

_CAUSE_FIELDS = tuple(f.name for f in fields(Cause))


def render(report: Report, show_all: bool = False) -> str:
    """The report as strict JSON: one field per line, one event per line (``json_text``)."""
    return json_text.document(_fields(report), long=("events", "functions", "cause_table"))


def to_dict(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (what ``render`` writes)."""
    data: dict[str, Any] = jsonable(_fields(report))
    return data


def _fields(report: Report) -> dict[str, Any]:
    saved = session_to_dict(report.session)
    functions = report.functions.drop(columns=["key"]).to_dict(orient="records")
    for row in functions:
        row["calls"] = None if pd.isna(row["calls"]) else int(row["calls"])
        for name in ("traces", "compiles", "errors"):
            row[name] = int(row[name])
    causes = report.cause_table.to_dict(orient="records")
    for row in causes:
        row["count"], row["first_event"] = int(row["count"]), int(row["first_event"])
    for event, data in zip(report.session.events, saved["events"], strict=True):
        explained = [{name: getattr(c, name) for name in _CAUSE_FIELDS}
                     for c in report.causes[event.seq]]
        data["kind"] = event_kind(event)
        data["cause"] = explained[0]
        data["causes"] = explained
    return {
        "schema_version": saved["schema_version"],
        "environment": saved["environment"],
        "target": saved["target"],
        "target_exception": saved["target_exception"],
        "totals": dict(report.totals),
        "functions": functions,
        "cause_table": causes,
        "events": saved["events"],
        "suggestions": [asdict(s) for s in report.suggestions],
        "stale_captures": saved["stale_captures"],
        "warnings": saved["warnings"],
        "calls": saved["calls"],
        "base_context": saved["base_context"],
        **({"processes": saved["processes"]} if "processes" in saved else {}),
    }
