"""The JSON report (``schema_version`` 1): every field of the session plus the analysis."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pandas as pd

from recompile_cli.analysis.report import Report, event_kind
from recompile_cli.session.model import SCHEMA_VERSION, Event


def render(report: Report, show_all: bool = False) -> str:
    return json.dumps(to_dict(report), indent=2, default=str) + "\n"


def to_dict(report: Report) -> dict[str, Any]:
    session = report.session
    functions = report.functions.drop(columns=["key"]).to_dict(orient="records")
    for row in functions:
        row["calls"] = None if pd.isna(row["calls"]) else int(row["calls"])
        for name in ("traces", "compiles", "errors"):
            row[name] = int(row[name])
    causes = report.cause_table.to_dict(orient="records")
    for row in causes:
        row["count"], row["first_event"] = int(row["count"]), int(row["first_event"])
    return {
        "schema_version": SCHEMA_VERSION,
        "environment": asdict(session.environment),
        "target": session.target,
        "target_exception": session.target_exception,
        "totals": dict(report.totals),
        "functions": functions,
        "cause_table": causes,
        "events": [_event(report, e) for e in session.events],
        "suggestions": [asdict(s) for s in report.suggestions],
        "stale_captures": [asdict(s) for s in session.stale_captures],
        "warnings": list(session.warnings),
        "calls": dict(session.calls),
        "base_context": dict(session.base_context),
    }


def _event(report: Report, event: Event) -> dict[str, Any]:
    causes = [asdict(c) for c in report.causes[event.seq]]
    data = asdict(event)
    data["kind"] = event_kind(event)
    data["cause"] = causes[0]
    data["causes"] = causes
    return data
