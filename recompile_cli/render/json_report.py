"""The JSON report (``schema_version`` 1): the saved session (``session.codec``) plus the
analysis: totals, functions, cause_table, each event's kind, cause and causes, suggestions,
compile_cost, slow_calls (``render.sections.slow_calls``), eager_lines and wasted_compiles
(``render.sections.wasted_compiles``); each event's ``same_program_as`` (the earlier compile
whose program it compiled again, else null).
One field per line and one event per line; NaN and infinities are written as ``null``.

Each event is the saved session's event with ``kind``, ``cause`` and ``causes`` appended: the
two JSON objects are encoded apart and joined, so the report's event is exactly the saved one
plus those fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from recompile_cli.analysis.report import Report, event_kind
from recompile_cli.render.sections import (
    compile_cost,
    eager_lines,
    slow_calls,
    warmup_coverage,
    wasted_compiles,
)
from recompile_cli.session import codec
from recompile_cli.session.model import Event

_LONG = ("events", "functions", "cause_table")


def render(report: Report, show_all: bool = False) -> str:
    """The report as JSON text: one field per line, one event per line."""
    events = [_event(report, event) for event in report.session.events]
    return codec.document(_fields(report, events), long=_LONG)


def to_dict(report: Report) -> dict[str, Any]:
    """The report as JSON data (what ``render`` writes)."""
    data: dict[str, Any] = msgspec.json.decode(render(report))
    return data


def _fields(report: Report, events: list[msgspec.Raw]) -> dict[str, Any]:
    saved = codec.session_fields(report.session, events)
    fields = {
        "schema_version": saved["schema_version"],
        "environment": saved["environment"],
        "target": saved["target"],
        "target_exception": saved["target_exception"],
        "totals": report.totals,
        "functions": [_without_key(row) for row in report.functions],
        "cause_table": report.cause_table,
        "events": saved["events"],
        "suggestions": report.suggestions,
    }
    fields.update((name, value) for name, value in saved.items() if name not in fields)
    fields["compile_cost"] = compile_cost.json_section(report)  # added in 0.3: after the rest
    fields["slow_calls"] = slow_calls.json_section(report)  # added in 0.4
    fields["eager_lines"] = eager_lines.json_section(report)  # added in 0.5
    fields["wasted_compiles"] = wasted_compiles.json_section(report)  # added in 0.6
    section = warmup_coverage.json_section(report)
    if section is not None:  # a run after a warm-up plan
        fields["warmup_coverage"] = section
    return fields


def _without_key(row: Any) -> dict[str, Any]:
    """A function row as the report writes it: every field but the internal ``key``."""
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.name != "key"}


def _event(report: Report, event: Event) -> msgspec.Raw:
    """The event's line: its saved fields, then its kind, primary cause and causes."""
    causes = report.causes[event.seq]
    cost = event.cost
    analysis = codec.encode({"kind": event_kind(event), "cause": causes[0], "causes": causes,
                             "equations": cost.equations if cost else None,
                             "constants_bytes": cost.constants_bytes if cost else None,
                             "same_program_as": report.wasted_compiles.same_program_as.get(
                                 event.seq)})
    return msgspec.Raw(codec.encode_event(event)[:-1] + b"," + analysis[1:])
