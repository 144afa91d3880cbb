"""Saved sessions: the JSON report (``--output x.json`` / ``--save``) and the streamed events
log (``--events-log x.jsonl``) read back into a ``Session``, so that it can be analysed and
rendered again without running anything; and the writer of that events log.

The events log is JSON lines: a ``header`` record, then an ``event`` record every time an event
changes (the last record of each ``id`` wins), then an ``end`` record. Each line is flushed as it
is written, so a run killed by a signal or the OOM killer leaves every event up to that moment.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from recompile_cli.errors import RecompileError
from recompile_cli.session.model import (SCHEMA_VERSION, Change, Environment, Event, Leaf, Session, Signature,
                    StaleCapture, TraceError)


class SessionFileError(RecompileError):
    """A saved session that cannot be read."""


class EventLog:
    """Appends session records to a JSON-lines file, flushing each one."""

    def __init__(self, path: str | Path) -> None:
        try:
            self._file = open(path, "w", encoding="utf-8")
        except OSError as exc:
            raise SessionFileError(f"Cannot write the events log {path}: "
                                   f"{exc.strerror or exc}.") from None

    def header(self, environment: Environment, target: str, base_context: dict) -> None:
        self._write({"type": "header", "schema_version": SCHEMA_VERSION,
                     "environment": asdict(environment), "target": target,
                     "base_context": base_context})

    def event(self, event: Event) -> None:
        self._write({"type": "event", "id": event.seq, "event": asdict(event)})

    def end(self, session: Session) -> None:
        self._write({"type": "end", "wall_seconds": session.wall_seconds,
                     "calls": session.calls, "warnings": list(session.warnings),
                     "stale_captures": [asdict(s) for s in session.stale_captures],
                     "target_exception": session.target_exception})
        self._file.close()

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()


def load_session(path: str | Path) -> Session:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SessionFileError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if text.lstrip().startswith('{"type": "header"'):
        return _session_from_log(text, str(path))
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SessionFileError(f"{path} is not JSON ({exc}). Pass a report saved with "
                               "--output FILE.json or --save FILE.json.") from None
    return session_from_dict(data, str(path))


def session_from_dict(data: Any, source: str = "<session>") -> Session:
    if not isinstance(data, dict) or "events" not in data or "environment" not in data:
        raise SessionFileError(f"{source} is not a recompile-cli report: it lacks 'events' and "
                               "'environment'. Pass a report saved with --output FILE.json.")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SessionFileError(
            f"{source} has schema_version {version!r}; this recompile-cli reads version "
            f"{SCHEMA_VERSION}. Record it again with this version (recompile-cli profile/run "
            "--save FILE.json), or read it with the recompile-cli version that wrote it.")
    try:
        return Session(
            environment=Environment(**data["environment"]),
            target=data.get("target", ""),
            events=tuple(_event(e) for e in data["events"]),
            wall_seconds=float(data.get("totals", {}).get("wall_seconds", 0.0)),
            base_context=dict(data.get("base_context", {})),
            calls=dict(data.get("calls", {})),
            warnings=tuple(data.get("warnings", [])),
            stale_captures=tuple(StaleCapture(**s) for s in data.get("stale_captures", [])),
            target_exception=data.get("target_exception"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SessionFileError(f"{source} is damaged: {type(exc).__name__}: {exc}. Record the "
                               "session again.") from None


def _session_from_log(text: str, source: str) -> Session:
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            if number == len(text.splitlines()):
                break  # a last line cut short by the kill: everything before it is whole
            raise SessionFileError(f"{source}, line {number}: not a JSON record. The events "
                                   "log is damaged.") from None
    header = records[0]
    events: dict[int, dict] = {}
    end = None
    for record in records[1:]:
        if record.get("type") == "event":
            events[record["id"]] = record["event"]
        elif record.get("type") == "end":
            end = record
    ordered = sorted(events.values(), key=lambda e: e["start_seconds"])
    for seq, event in enumerate(ordered):
        event["seq"] = seq
    data = {**header, "events": ordered}
    if end is None:
        last = max((_event(e).end_seconds for e in ordered), default=0.0)
        data.update(totals={"wall_seconds": last}, warnings=[
            "the run did not finish (the events log has no end record): this report holds the "
            "events recorded up to the interruption"])
    else:
        data.update(totals={"wall_seconds": end["wall_seconds"]}, calls=end["calls"],
                    warnings=end["warnings"], stale_captures=end["stale_captures"],
                    target_exception=end["target_exception"])
    return session_from_dict(data, source)


_DERIVED = {"kind", "cause", "causes"}  # fields the report adds; the analysis recomputes them


def _event(raw: dict[str, Any]) -> Event:
    fields = {k: v for k, v in raw.items() if k not in _DERIVED}
    if fields.get("signature") is not None:
        fields["signature"] = _signature(fields["signature"])
    if fields.get("lowering_changes") is not None:
        fields["lowering_changes"] = tuple(Change(**c) for c in fields["lowering_changes"])
    if fields.get("error") is not None:
        fields["error"] = TraceError(**fields["error"])
    return Event(**fields)


def _signature(raw: dict[str, Any]) -> Signature:
    leaves = {path: Leaf(shape=tuple(leaf["shape"]), dtype=leaf["dtype"],
                         weak_type=leaf.get("weak_type", False), sharding=leaf.get("sharding"))
              for path, leaf in raw.get("leaves", {}).items()}
    return Signature(leaves=leaves, static=dict(raw.get("static", {})),
                     structure=dict(raw.get("structure", {})),
                     positional=int(raw.get("positional", 0)),
                     keywords=tuple(raw.get("keywords", ())),
                     context=dict(raw.get("context", {})),
                     function_id=int(raw.get("function_id", 0)),
                     function_kind=raw.get("function_kind", "function"))
