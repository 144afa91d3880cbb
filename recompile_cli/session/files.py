"""Saved sessions: the session file format, owned here.

``session_to_dict``/``save_session`` write a ``Session`` as JSON (``--save``) without analysing
it; the JSON report (``--output x.json``) is that dictionary plus the analysis fields.
``load_session`` reads back a saved session, a JSON report or the streamed events log
(``--events-log x.jsonl``), so that it can be analysed and rendered again without running
anything. The events log is written by ``session.events_log.EventLog``.

Loading trusts nothing: a file above ``MAX_SESSION_BYTES`` (1 GiB) is refused before it is read,
the text must be UTF-8 and standard JSON (no NaN), and every field is checked against the
schema below, so that a wrong type becomes a ``SessionFileError`` naming the file and the
field path (``events[3].signature.leaves['x'].shape``) rather than a traceback later.

The events log is JSON lines: a ``header`` record, then an ``event`` record every time an event
changes (the last record of each ``id`` wins), then an ``end`` record. Each line is flushed as it
is written, so a run killed by a signal or the OOM killer leaves every event up to that moment.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from recompile_cli.errors import SessionFileError
from recompile_cli.fileio import atomic_write_text, strict_json
from recompile_cli.session.events_log import EventLog  # kept importable from here
from recompile_cli.session.model import (
    SCHEMA_VERSION,
    Change,
    Environment,
    Event,
    Leaf,
    Session,
    Signature,
    StaleCapture,
    TraceError,
)

__all__ = ["MAX_SESSION_BYTES", "EventLog", "SessionFileError", "atomic_write_text",
           "load_session", "save_session", "session_from_dict", "session_to_dict"]

Where = tuple[Any, ...]  # the path of keys and indices to a field
MAX_SESSION_BYTES = 1024 ** 3  # 1 GiB: a saved session above this is refused unread


# -- writing ---------------------------------------------------------------------------------------
def session_to_dict(session: Session) -> dict[str, Any]:
    """The session as a JSON-ready dictionary: what ``--save`` writes and ``load_session`` reads.

    The JSON report adds the analysis fields (totals, functions, cause_table, the events' kind,
    cause and causes, suggestions) to this; its ``totals`` here holds ``wall_seconds`` only."""
    return {
        "schema_version": SCHEMA_VERSION,
        "environment": asdict(session.environment),
        "target": session.target,
        "target_exception": session.target_exception,
        "totals": {"wall_seconds": session.wall_seconds},
        "events": [asdict(e) for e in session.events],
        "stale_captures": [asdict(s) for s in session.stale_captures],
        "warnings": list(session.warnings),
        "calls": dict(session.calls),
        "base_context": dict(session.base_context),
    }


def save_session(session: Session, path: str | Path) -> None:
    """Write the session to ``path`` as strict JSON, atomically; ``SessionFileError`` if the
    file cannot be written."""
    try:
        atomic_write_text(path, strict_json(session_to_dict(session)) + "\n")
    except OSError as exc:
        raise SessionFileError(f"Cannot write the session to {path}: {exc.strerror or exc}. "
                               "Choose a writable path.") from None


# -- reading ---------------------------------------------------------------------------------------
def load_session(path: str | Path, max_bytes: int = MAX_SESSION_BYTES) -> Session:
    """Read a saved session, a JSON report or an events log; ``SessionFileError`` naming the file
    and the field for anything that is not one."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise SessionFileError(f"Cannot read {path}: {exc.strerror or exc}. Pass a session "
                               "saved with --save FILE.json or --output FILE.json.") from None
    if len(data) > max_bytes:
        raise SessionFileError(f"{path} is larger than {max_bytes:,} bytes, the limit for a "
                               "saved session; it is refused unread. Pass the right file (a "
                               "session of thousands of events takes a few megabytes).")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SessionFileError(f"{path}, line {line}: not UTF-8 text (byte "
                               f"0x{data[exc.start]:02x} at offset {exc.start}), so not a saved "
                               "session. Pass a session saved with --save FILE.json.") from None
    stripped = text.lstrip()
    if stripped.startswith('{"type"') or (path.suffix == ".jsonl" and not stripped):
        return _session_from_log(text, str(path))
    try:
        document = _loads(text)
    except (ValueError, RecursionError) as exc:
        raise SessionFileError(f"{path} is not JSON ({_reason(exc)}). Pass a report saved with "
                               "--output FILE.json or --save FILE.json.") from None
    return session_from_dict(document, str(path))


def session_from_dict(data: Any, source: str = "<session>") -> Session:
    """The ``Session`` of a saved session or JSON report, validated field by field."""
    if not isinstance(data, dict) or "events" not in data or "environment" not in data:
        raise SessionFileError(f"{source} is not a recompile-cli report: it lacks 'events' and "
                               "'environment'. Pass a report saved with --output FILE.json.")
    _check_version(data.get("schema_version"), source)
    try:
        _SESSION.check(data, ())
        _check_sequence_numbers(data["events"])
    except _Bad as bad:
        raise SessionFileError(bad.message_for(source)) from None
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


def _check_version(version: Any, source: str) -> None:
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise SessionFileError(
            f"{source} has schema_version {version!r}; this recompile-cli reads version "
            f"{SCHEMA_VERSION}. Record it again with this version (recompile-cli profile/run "
            "--save FILE.json), or read it with the recompile-cli version that wrote it.")


def _check_sequence_numbers(events: list[dict[str, Any]]) -> None:
    seen: dict[int, int] = {}
    for i, event in enumerate(events):
        seq = event["seq"]
        if seq < 0:
            raise _Bad(("events", i, "seq"), f"must be a non-negative integer, got {seq}")
        if seq in seen:
            raise _Bad(("events", i, "seq"), f"{seq} is also the seq of events[{seen[seq]}]; "
                                             "each event has its own")
        seen[seq] = i


def _session_from_log(text: str, source: str) -> Session:
    lines = text.splitlines()
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append((number, _loads(line)))
        except (ValueError, RecursionError) as exc:
            if number == len(lines):
                if records:
                    break  # a last line cut short by the kill: everything before it is whole
                raise SessionFileError(f"{source}: the events log's only record, its header, is "
                                       "cut short: nothing was recorded. Record the run "
                                       "again.") from None
            raise SessionFileError(f"{source}, line {number}: not a JSON record "
                                   f"({_reason(exc)}). The events log is damaged; record the "
                                   "run again.") from None
    if not records:
        raise SessionFileError(f"{source} is an empty events log, or its header record is cut "
                               "short: nothing was recorded. Record the run again.")
    number, header = records[0]
    if not isinstance(header, dict) or header.get("type") != "header":
        raise SessionFileError(f"{source}, line {number}: the events log does not start with "
                               "its header record ({\"type\": \"header\", ...}). Pass a file "
                               "written by --events-log.")
    _check_version(header.get("schema_version"), source)
    events: dict[int, dict[str, Any]] = {}
    end = None
    try:
        try:
            _HEADER.check(header, ())
        except _Bad as bad:
            raise _Bad(bad.where, bad.message, number) from None
        for number, record in records[1:]:
            kind = record.get("type") if isinstance(record, dict) else None
            schema = {"event": _EVENT_RECORD, "end": _END_RECORD}.get(
                kind if isinstance(kind, str) else "")
            if schema is None:
                raise _Bad((), f"not an event or end record (type {kind!r})", number)
            try:
                schema.check(record, ())
            except _Bad as bad:
                raise _Bad(bad.where, bad.message, number) from None
            if kind == "event":
                events[record["id"]] = record["event"]
            else:
                end = record
    except _Bad as bad:
        raise SessionFileError(bad.message_for(source, "the events log is damaged; record the "
                                                       "run again")) from None
    ordered = sorted(events.values(), key=lambda e: e["start_seconds"])
    for seq, event in enumerate(ordered):
        event["seq"] = seq
    data = {k: v for k, v in header.items() if k != "type"}
    data["events"] = ordered
    if end is None:
        last = max((_event(e).end_seconds for e in ordered), default=0.0)
        data.update(totals={"wall_seconds": last}, warnings=[
            ("the run did not finish (the events log has no end record): this report holds the "
             "events recorded up to the interruption")])
    else:
        data.update(totals={"wall_seconds": end["wall_seconds"]}, calls=end["calls"],
                    warnings=end["warnings"], stale_captures=end["stale_captures"],
                    target_exception=end["target_exception"])
    return session_from_dict(data, source)


def _loads(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not standard JSON")

    return json.loads(text, parse_constant=refuse)


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


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


# -- the schema ------------------------------------------------------------------------------------
class _Key(str):
    """A mapping key in a field path, shown as ``['key']``."""


class _Bad(Exception):
    def __init__(self, where: Where, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.where, self.message, self.line = where, message, line

    def message_for(self, source: str, advice: str = "") -> str:
        at = f", line {self.line}" if self.line is not None else ""
        field = f", field {path_name(self.where)}" if self.where else ""
        advice = advice or ("the session file is damaged or was not written by recompile-cli; "
                            "record the session again (--save FILE.json)")
        return f"{source}{at}{field}: {self.message}. {advice[0].upper()}{advice[1:]}."


def path_name(where: Where) -> str:
    """``events[3].signature.leaves['x'].shape`` for ('events', 3, 'signature', ...)."""
    text = ""
    for part in where:
        if isinstance(part, _Key):
            text += f"[{str(part)!r}]"
        elif isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


def _describe(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    shown = repr(value) if not isinstance(value, (dict, list)) else ""
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return names.get(type(value), type(value).__name__) + (f" ({shown})" if shown else "")


class _Type:
    name = ""

    def check(self, value: Any, where: Where) -> None:
        raise NotImplementedError

    def fail(self, value: Any, where: Where) -> None:
        raise _Bad(where, f"must be {self.name}, got {_describe(value)}")


class _Scalar(_Type):
    def __init__(self, types: tuple[type, ...], name: str) -> None:
        self.types, self.name = types, name

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, self.types) or (isinstance(value, bool)
                                                 and bool not in self.types):
            self.fail(value, where)


class _Nullable(_Type):
    def __init__(self, inner: _Type) -> None:
        self.inner, self.name = inner, f"{inner.name} or null"

    def check(self, value: Any, where: Where) -> None:
        if value is not None:
            try:
                self.inner.check(value, where)
            except _Bad as bad:
                if bad.where == where:
                    self.fail(value, where)
                raise


class _Anything(_Type):
    def check(self, value: Any, where: Where) -> None:
        pass


class _ListOf(_Type):
    def __init__(self, item: _Type) -> None:
        self.item, self.name = item, f"a list of {item.name}"

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, list):
            self.fail(value, where)
        for i, item in enumerate(value):
            self.item.check(item, (*where, i))


class _DictOf(_Type):
    def __init__(self, item: _Type) -> None:
        self.item, self.name = item, f"an object of {item.name}"

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, dict):
            self.fail(value, where)
        for key, item in value.items():
            self.item.check(item, (*where, _Key(key)))


class _Record(_Type):
    def __init__(self, name: str, required: dict[str, _Type], optional: dict[str, _Type],
                 open_: bool = False) -> None:
        self.name, self.required, self.optional, self.open = name, required, optional, open_

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, dict):
            self.fail(value, where)
        for key in self.required:
            if key not in value:
                raise _Bad(where, f"the field {key!r} is missing from {self.name}")
        for key, item in value.items():
            kind = self.required.get(key) or self.optional.get(key)
            if kind is None:
                if self.open:
                    continue
                known = ", ".join([*self.required, *self.optional])
                raise _Bad((*where, key), f"unknown field {key!r} in {self.name} (known: "
                                           f"{known})")
            kind.check(item, (*where, key))


STRING = _Scalar((str,), "a string")
INTEGER = _Scalar((int,), "an integer")
NUMBER = _Scalar((int, float), "a number")
BOOLEAN = _Scalar((bool,), "true or false")
ANY = _Anything()
_LEAF = _Record("a leaf (an array's abstract value)", {"shape": _ListOf(INTEGER), "dtype": STRING},
                {"weak_type": BOOLEAN, "sharding": _Nullable(STRING)})
_SIGNATURE = _Record("a signature", {}, {
    "leaves": _DictOf(_LEAF), "static": _DictOf(STRING), "structure": _DictOf(STRING),
    "positional": INTEGER, "keywords": _ListOf(STRING), "context": _DictOf(STRING),
    "function_id": INTEGER, "function_kind": STRING})
_CHANGE = _Record("a lowering change", {"field": STRING, "before": STRING, "after": STRING},
                  {"argument": _Nullable(STRING)})
_TRACE_ERROR = _Record("a trace error", {"type": STRING, "message": STRING},
                       {"argument": _Nullable(STRING)})
_EVENT = _Record("an event", {
    "seq": INTEGER, "function": STRING, "defined_at": _Nullable(STRING), "owner": STRING,
    "call_site": _Nullable(STRING), "call_index": _Nullable(INTEGER), "depth": INTEGER,
    "traced": BOOLEAN, "compiled": BOOLEAN, "start_seconds": NUMBER,
}, {
    "trace_seconds": NUMBER, "lower_seconds": NUMBER, "compile_seconds": NUMBER,
    "signature": _Nullable(_SIGNATURE), "lowering_changes": _Nullable(_ListOf(_CHANGE)),
    "error": _Nullable(_TRACE_ERROR), "persistent_cache": _Nullable(STRING),
    "cache_saved_seconds": NUMBER, "call_of": _Nullable(STRING),
    "lower_start_seconds": _Nullable(NUMBER), "compile_start_seconds": _Nullable(NUMBER),
    "kind": ANY, "cause": ANY, "causes": ANY,  # added by the report, recomputed on analysis
})
_ENVIRONMENT = _Record("the environment", {
    "jax_version": STRING, "python_version": STRING, "backend": STRING, "hook_mode": STRING,
}, {"compilation_cache_dir": _Nullable(STRING)})
_STALE = _Record("a stale capture", {
    "function": STRING, "defined_at": _Nullable(STRING), "variable": STRING, "scope": STRING,
    "traced_value": STRING, "current_value": STRING}, {})
_SESSION = _Record("a session", {
    "schema_version": INTEGER, "environment": _ENVIRONMENT, "events": _ListOf(_EVENT),
}, {
    "target": STRING, "target_exception": _Nullable(STRING),
    "totals": _Record("the totals", {}, {"wall_seconds": NUMBER}, open_=True),
    "base_context": _DictOf(STRING), "calls": _DictOf(INTEGER), "warnings": _ListOf(STRING),
    "stale_captures": _ListOf(_STALE),
    "functions": ANY, "cause_table": ANY, "suggestions": ANY,  # report only: recomputed
})
_HEADER = _Record("the header record", {
    "type": STRING, "schema_version": INTEGER, "environment": _ENVIRONMENT, "target": STRING,
    "base_context": _DictOf(STRING)}, {})
_EVENT_RECORD = _Record("an event record", {"type": STRING, "id": INTEGER, "event": _EVENT}, {})
_END_RECORD = _Record("the end record", {
    "type": STRING, "wall_seconds": NUMBER, "calls": _DictOf(INTEGER),
    "warnings": _ListOf(STRING), "stale_captures": _ListOf(_STALE),
    "target_exception": _Nullable(STRING)}, {})
