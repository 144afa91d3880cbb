"""The JSON report (``schema_version`` 1): the saved session (``session.files.session_to_dict``)
plus the analysis: totals, functions, cause_table, each event's kind, cause and causes, and
suggestions. Strict JSON: NaN and infinities are written as ``null``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd

from recompile_cli.analysis.report import Report, event_kind
from recompile_cli.fileio import jsonable, strict_json
from recompile_cli.session.files import session_to_dict


def render(report: Report, show_all: bool = False) -> str:
    return strict_json(to_dict(report)) + "\n"


def to_dict(report: Report) -> dict[str, Any]:
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
        explained = [asdict(c) for c in report.causes[event.seq]]
        data["kind"] = event_kind(event)
        data["cause"] = explained[0]
        data["causes"] = explained
    report_data: dict[str, Any] = jsonable({
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
    })
    return report_data
