"""The JSON report (``schema_version`` 1): the saved session (``session.files.session_to_dict``)
plus the analysis: totals, functions, cause_table, each event's kind, cause and causes, and
suggestions. Strict JSON: NaN and infinities are written as ``null``.

``render`` writes each event's line from a dictionary made straight from the event's fields
(``_event_row``), several times faster than ``session_to_dict`` for a long run; the text is the
same, since the C encoder writes a tuple as a list and a copied mapping as its original. An
event that this quick row cannot encode exactly (a NaN, a value of an unexpected type) is
written from ``session_to_dict`` instead, as before.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, fields, replace
from typing import Any

import pandas as pd

from recompile_cli.analysis.causes import Cause
from recompile_cli.analysis.report import Report, event_kind
from recompile_cli.fileio import jsonable
from recompile_cli.render import json_text
from recompile_cli.session.files import session_to_dict
from recompile_cli.session.model import Change, Event, Leaf, Session, Signature, TraceError

_CAUSE_FIELDS = tuple(f.name for f in fields(Cause))
_LONG = ("events", "functions", "cause_table")


def render(report: Report, show_all: bool = False) -> str:
    """The report as strict JSON: one field per line, one event per line (``json_text``)."""
    data = _fields(report, events=False)
    data["events"] = [_event_line(report, event) for event in report.session.events]
    return json_text.document(data, long=_LONG, encoded=("events",))


def to_dict(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (what ``render`` writes)."""
    data: dict[str, Any] = jsonable(_fields(report))
    return data


def _fields(report: Report, events: bool = True) -> dict[str, Any]:
    """The report's fields; ``events`` as ``session_to_dict`` writes them plus their analysis,
    or an empty list when not ``events``."""
    session = report.session
    saved = session_to_dict(session if events else replace(session, events=()))
    functions = report.functions.drop(columns=["key"]).to_dict(orient="records")
    for row in functions:
        row["calls"] = None if pd.isna(row["calls"]) else int(row["calls"])
        for name in ("traces", "compiles", "errors"):
            row[name] = int(row[name])
    causes = report.cause_table.to_dict(orient="records")
    for row in causes:
        row["count"], row["first_event"] = int(row["count"]), int(row["first_event"])
    for event, data in zip(session.events if events else (), saved["events"], strict=True):
        _add_analysis(report, event, data)
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


_cause_values = operator.attrgetter(*_CAUSE_FIELDS)


def _add_analysis(report: Report, event: Event, data: dict[str, Any]) -> None:
    """The event's kind, primary cause and causes, added to its saved fields."""
    explained = [dict(zip(_CAUSE_FIELDS, _cause_values(c), strict=True))
                 for c in report.causes[event.seq]]
    data["kind"] = event_kind(event)
    data["cause"] = explained[0]
    data["causes"] = explained


def _event_line(report: Report, event: Event) -> str:
    """The event's line of the report: its fields, kind, cause and causes."""
    row = _event_row(event)
    if row is not None:
        _add_analysis(report, event, row)
        try:
            return json_text.encode(row)
        except (ValueError, TypeError):
            pass
    data = _saved_event(report.session, event)
    _add_analysis(report, event, data)
    return json_text.value(data)


def _saved_event(session: Session, event: Event) -> dict[str, Any]:
    """The event as ``session_to_dict`` writes it."""
    saved: dict[str, Any] = session_to_dict(replace(session, events=(event,)))["events"][0]
    return saved


def _names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))


_EVENT, _SIGNATURE, _LEAF = _names(Event), _names(Signature), _names(Leaf)
_CHANGE, _ERROR = _names(Change), _names(TraceError)
_event_values, _signature_values = operator.attrgetter(*_EVENT), operator.attrgetter(*_SIGNATURE)
_leaf_values, _change_values = operator.attrgetter(*_LEAF), operator.attrgetter(*_CHANGE)
_error_values = operator.attrgetter(*_ERROR)


def _event_row(event: Event) -> dict[str, Any] | None:
    """The event's fields as ``session_to_dict`` has them, as far as the JSON text goes (a
    tuple stays a tuple, mappings are not copied); ``None`` when it holds a record of a type
    other than the model's, which only ``session_to_dict`` converts."""
    if type(event) is not Event:
        return None
    row = dict(zip(_EVENT, _event_values(event), strict=True))
    if row["process"] is None:
        del row["process"]
    signature, changes, error = event.signature, event.lowering_changes, event.error
    if signature is not None:
        if type(signature) is not Signature or type(signature.leaves) is not dict:
            return None
        row["signature"] = sig = dict(zip(_SIGNATURE, _signature_values(signature), strict=True))
        sig["leaves"] = leaves = {}
        for path, leaf in signature.leaves.items():
            if type(leaf) is not Leaf:
                return None
            leaves[path] = dict(zip(_LEAF, _leaf_values(leaf), strict=True))
    if changes is not None:
        if type(changes) is not tuple or any(type(c) is not Change for c in changes):
            return None
        row["lowering_changes"] = [dict(zip(_CHANGE, _change_values(c), strict=True))
                                   for c in changes]
    if error is not None:
        if type(error) is not TraceError:
            return None
        row["error"] = dict(zip(_ERROR, _error_values(error), strict=True))
    return row
