"""Saved sessions: the session file format, owned here.

``session_to_dict``/``save_session`` write a ``Session`` as JSON (``--save``) without analysing
it; the JSON report (``--output x.json``) is that dictionary plus the analysis fields.
``load_session`` reads back a saved session, a JSON report or the streamed events log
(``--events-log x.jsonl``), so that it can be analysed and rendered again without running
anything. The events log is written by ``session.events_log.EventLog``.

Loading trusts nothing: a file above ``MAX_SESSION_BYTES`` (1 GiB) is refused before it is read,
the text must be UTF-8 and standard JSON (no NaN), and every field is checked against the
schema (``session.schema``), so that a wrong type becomes a ``SessionFileError`` naming the
file and the field path (``events[3].signature.leaves['x'].shape``) rather than a traceback.

The events log is JSON lines: a ``header`` record, then an ``event`` record every time an event
changes (the last record of each ``id`` wins), then an ``end`` record. Each line is flushed as it
is written, so a run killed by a signal or the OOM killer leaves every event up to that moment.
The header is written before the target runs, so its environment may lack what is known only
later (JAX's backend, the ``jax.distributed`` process index); the end record's environment,
when present, replaces it.

A merged session (``recompile-cli merge --save``) is a session whose events carry ``process``
and which lists its ``processes``; the process fields are written only when set, so that a
single-process session reads as it always did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import fields as _dataclass_fields
from dataclasses import is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from recompile_cli.errors import SessionFileError
from recompile_cli.fileio import atomic_write_text
from recompile_cli.session import schema as _schema
from recompile_cli.session.events_log import EventLog  # kept importable from here
from recompile_cli.session.model import (
    SCHEMA_VERSION,
    Change,
    Environment,
    Event,
    Leaf,
    ProcessRecord,
    Session,
    Signature,
    StaleCapture,
    TraceError,
)
from recompile_cli.session.schema import END_RECORD, EVENT_RECORD, HEADER, SESSION, Bad, path_name

__all__ = ["MAX_SESSION_BYTES", "EventLog", "SessionFileError", "atomic_write_text",
           "load_session", "path_name", "save_session", "session_from_dict", "session_text",
           "session_to_dict"]
# The schema of each model class, kept importable from here.
_EVENT, _SIGNATURE, _LEAF, _CHANGE = _schema.EVENT, _schema.SIGNATURE, _schema.LEAF, _schema.CHANGE
_TRACE_ERROR, _ENVIRONMENT, _STALE = _schema.TRACE_ERROR, _schema.ENVIRONMENT, _schema.STALE
_PROCESS = _schema.PROCESS
_UNSET_IF_NONE = {"process_index", "process_count", "host", "process"}

MAX_SESSION_BYTES = 1024 ** 3  # 1 GiB: a saved session above this is refused unread


# -- writing ---------------------------------------------------------------------------------------
def session_to_dict(session: Session) -> dict[str, Any]:
    """The session as a JSON-ready dictionary: what ``--save`` writes and ``load_session`` reads.

    The JSON report adds the analysis fields (totals, functions, cause_table, the events' kind,
    cause and causes, suggestions) to this; its ``totals`` here holds ``wall_seconds`` only."""
    data = {
        "schema_version": SCHEMA_VERSION,
        "environment": _set_fields(session.environment),
        "target": session.target,
        "target_exception": session.target_exception,
        "totals": {"wall_seconds": session.wall_seconds},
        "events": [_set_fields(e) for e in session.events],
        "stale_captures": [_as_dict(s) for s in session.stale_captures],
        "warnings": list(session.warnings),
        "calls": dict(session.calls),
        "base_context": dict(session.base_context),
    }
    if session.processes:
        data["processes"] = [_as_dict(p) for p in session.processes]
    return data


def _set_fields(record: Any) -> dict[str, Any]:
    """The dataclass as a dictionary, without the process fields that are not set."""
    return {k: v for k, v in _as_dict(record).items() if v is not None or k not in _UNSET_IF_NONE}


_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, looked up once
_PLAIN = (str, int, float, bool, type(None))


def _as_dict(record: Any) -> dict[str, Any]:
    """``dataclasses.asdict(record)``, the same dictionaries, about twice as fast: the field names
    are looked up once per class, and texts and numbers are not copied."""
    kind = type(record)
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(f.name for f in _dataclass_fields(kind))
    out = {}
    for name in names:
        item = getattr(record, name)
        out[name] = item if type(item) in _PLAIN else _as_value(item)
    return out


def _as_value(item: Any) -> Any:
    kind = type(item)
    if kind in _PLAIN:
        return item
    if kind in _NAMES or (is_dataclass(item) and not isinstance(item, type)):
        return _as_dict(item)
    if kind is tuple or kind is list:
        return kind(_as_value(v) for v in item)
    if kind is dict:
        return {_as_value(k): _as_value(v) for k, v in item.items()}
    if isinstance(item, Enum):  # our StrEnums (``Owner``...): ``asdict`` keeps them as they are
        return item
    return _asdict_value(item)


def _asdict_value(item: Any) -> Any:
    """What ``asdict`` makes of anything else (a named tuple, a subclass): its own rules."""
    from dataclasses import asdict
    from dataclasses import dataclass as _dataclass

    @_dataclass
    class _Box:
        value: Any

    return asdict(_Box(item))["value"]


def session_text(session: Session) -> str:
    """The saved session as strict JSON text: one field per line, one event per line (the C
    encoder; ``json.dumps`` with ``indent`` is about ten times slower). Ends with a newline."""
    from recompile_cli.render.json_text import document

    return document(session_to_dict(session), long=("events",))


def save_session(session: Session, path: str | Path) -> None:
    """Write the session to ``path`` as strict JSON, atomically; ``SessionFileError`` if the
    file cannot be written."""
    try:
        atomic_write_text(path, session_text(session))
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
    del data  # the text alone from here on
    start = _space_end(text)
    if text.startswith('{"type"', start) or (path.suffix == ".jsonl" and start == len(text)):
        return _session_from_log(text, str(path))
    fast = _fast_session(text)
    if fast is not None:
        return fast
    # Anything the fast path does not accept is read again field by field, for the exact error.
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
        SESSION.check(data, ())
        _check_sequence_numbers(data["events"])
    except Bad as bad:
        raise SessionFileError(bad.message_for(source)) from None
    return _session(data, (_event(e) for e in data["events"]))


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
            raise Bad(("events", i, "seq"), f"must be a non-negative integer, got {seq}")
        if seq in seen:
            raise Bad(("events", i, "seq"), f"{seq} is also the seq of events[{seen[seq]}]; "
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
            HEADER.check(header, ())
        except Bad as bad:
            raise Bad(bad.where, bad.message, number) from None
        for number, record in records[1:]:
            kind = record.get("type") if isinstance(record, dict) else None
            schema = {"event": EVENT_RECORD, "end": END_RECORD}.get(
                kind if isinstance(kind, str) else "")
            if schema is None:
                raise Bad((), f"not an event or end record (type {kind!r})", number)
            try:
                schema.check(record, ())
            except Bad as bad:
                raise Bad(bad.where, bad.message, number) from None
            if kind == "event":
                events[record["id"]] = record["event"]
            else:
                end = record
    except Bad as bad:
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
        if "environment" in end:  # known only at the end: the backend, the process index
            data["environment"] = end["environment"]
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




# -- the fast path for valid saved sessions --------------------------------------------------------
# A valid session of 100,000 events is read without holding its whole dictionary tree: the C
# scanner decodes one event at a time, which is checked (scalar fields by exact type) and turned
# into an ``Event`` at once. Identical leaves, dictionaries and texts are shared. Anything
# unexpected returns None and the file is read again by the general path above, which names the
# field and the reason exactly.
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _space_end(text: str) -> int:
    """Where the leading white space of ``text`` ends (as ``str.lstrip`` counts it)."""
    at = 0
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _skip(text: str, at: int) -> int:
    """Past the JSON white space at ``at``."""
    found = _JSON_SPACE.match(text, at)
    return found.end() if found else at
_STR, _INT, _BOOL, _NUM, _NSTR, _NINT, _NNUM = range(7)
_KINDS: dict[int, Any] = {
    _STR: lambda v: type(v) is str,
    _INT: lambda v: type(v) is int,
    _BOOL: lambda v: type(v) is bool,
    _NUM: lambda v: type(v) is float or type(v) is int,
    _NSTR: lambda v: v is None or type(v) is str,
    _NINT: lambda v: v is None or type(v) is int,
    _NNUM: lambda v: v is None or type(v) is float or type(v) is int,
}
_EVENT_SCALARS = {
    "seq": _INT, "function": _STR, "defined_at": _NSTR, "owner": _STR, "call_site": _NSTR,
    "call_index": _NINT, "depth": _INT, "traced": _BOOL, "compiled": _BOOL,
    "start_seconds": _NUM, "trace_seconds": _NUM, "lower_seconds": _NUM,
    "compile_seconds": _NUM, "persistent_cache": _NSTR, "cache_saved_seconds": _NUM,
    "call_of": _NSTR, "lower_start_seconds": _NNUM, "compile_start_seconds": _NNUM,
    "process": _NINT,
}
_EVENT_REQUIRED = tuple(_schema.EVENT.required)
_SHARED_TEXT = ("function", "defined_at", "owner", "call_site", "call_of", "persistent_cache")


class _Reject(Exception):
    """The fast path does not take this document; the general path reads it."""


class _Builder:
    """Events from raw event dictionaries, sharing what repeats."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.leaves: dict[tuple[Any, ...], Leaf] = {}
        self.maps: dict[tuple[Any, ...], dict[str, str]] = {}
        self.keywords: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.seqs: set[int] = set()
        self.checks = [(name, _KINDS[kind]) for name, kind in _EVENT_SCALARS.items()]

    def event(self, raw: Any) -> Event:
        if type(raw) is not dict:
            raise _Reject
        for name in _EVENT_REQUIRED:
            if name not in raw:
                raise _Reject
        for name, ok in self.checks:
            if name in raw and not ok(raw[name]):
                raise _Reject
        seq = raw["seq"]
        if seq < 0 or seq in self.seqs:
            raise _Reject
        self.seqs.add(seq)
        fields: dict[str, Any] = {}
        texts = self.texts
        for name, item in raw.items():
            if name in _EVENT_SCALARS:
                if name in _SHARED_TEXT and item is not None:
                    item = texts.setdefault(item, item)
                fields[name] = item
            elif name == "signature":
                fields[name] = None if item is None else self.signature(item)
            elif name == "lowering_changes":
                fields[name] = None if item is None else self.changes(item)
            elif name == "error":
                fields[name] = None if item is None else self.error(item)
            elif name not in _DERIVED:
                raise _Reject
        return Event(**fields)

    def text_map(self, raw: Any) -> dict[str, str]:
        if type(raw) is not dict:
            raise _Reject
        key = tuple(raw.items())
        found = self.maps.get(key)
        if found is None:
            for value in raw.values():
                if type(value) is not str:
                    raise _Reject
            found = self.maps[key] = raw
        return found

    def signature(self, raw: Any) -> Signature:
        if type(raw) is not dict:
            raise _Reject
        leaves: dict[str, Leaf] = {}
        fields: dict[str, Any] = {"leaves": leaves}
        for name, item in raw.items():
            if name == "leaves":
                if type(item) is not dict:
                    raise _Reject
                for path, leaf in item.items():
                    leaves[self.texts.setdefault(path, path)] = self.leaf(leaf)
            elif name in ("static", "structure", "context"):
                fields[name] = self.text_map(item)
            elif name in ("positional", "function_id"):
                if type(item) is not int:
                    raise _Reject
                fields[name] = item
            elif name == "keywords":
                if type(item) is not list or any(type(k) is not str for k in item):
                    raise _Reject
                words = tuple(item)
                fields[name] = self.keywords.setdefault(words, words)
            elif name == "function_kind":
                if type(item) is not str:
                    raise _Reject
                fields[name] = self.texts.setdefault(item, item)
            else:
                raise _Reject
        return Signature(**fields)

    def leaf(self, raw: Any) -> Leaf:
        if type(raw) is not dict or "shape" not in raw or "dtype" not in raw or len(raw) > 4:
            raise _Reject
        shape = raw["shape"]
        if type(shape) is not list:
            raise _Reject
        for d in shape:
            if type(d) is not int:
                raise _Reject
        key = (tuple(shape), raw["dtype"], raw.get("weak_type", False), raw.get("sharding"))
        if type(key[2]) is not bool or (len(raw) > 2 and not _LEAF_FIELDS.issuperset(raw)):
            raise _Reject
        found = self.leaves.get(key)
        if found is None:
            if type(key[1]) is not str or not (key[3] is None or type(key[3]) is str):
                raise _Reject
            found = self.leaves[key] = Leaf(*key)
        return found

    def changes(self, raw: Any) -> tuple[Change, ...]:
        try:
            _schema._ListOf(_CHANGE).check(raw, ())
        except Bad:
            raise _Reject from None
        return tuple(Change(**c) for c in raw)

    def error(self, raw: Any) -> TraceError:
        try:
            _TRACE_ERROR.check(raw, ())
        except Bad:
            raise _Reject from None
        return TraceError(**raw)


_LEAF_FIELDS = frozenset(("shape", "dtype", "weak_type", "sharding"))


def _fast_session(text: str) -> Session | None:
    """The session in ``text`` if it is a valid saved session or report, else None."""
    try:
        return _read_fast(text)
    except (_Reject, ValueError, TypeError, KeyError, StopIteration, RecursionError):
        return None


def _read_fast(text: str) -> Session:
    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not standard JSON")

    scan = json.JSONDecoder(parse_constant=refuse).scan_once  # type: ignore[attr-defined]
    at = _skip(text, 0)
    if text[at:at + 1] != "{":
        raise _Reject
    at = _skip(text, at + 1)
    data: dict[str, Any] = {}
    events: list[Event] = []
    builder = _Builder()
    while True:
        if text[at:at + 1] != '"':
            raise _Reject
        key, at = scan(text, at)
        at = _skip(text, at)
        if text[at:at + 1] != ":" or key in data:
            raise _Reject
        at = _skip(text, at + 1)
        if key == "events":
            if text[at:at + 1] != "[":
                raise _Reject
            at = _skip(text, at + 1)
            if text[at:at + 1] == "]":
                at += 1
            else:
                while True:
                    raw, at = scan(text, at)
                    events.append(builder.event(raw))
                    del raw
                    at = _skip(text, at)
                    mark = text[at:at + 1]
                    at = _skip(text, at + 1)
                    if mark == "]":
                        break
                    if mark != ",":
                        raise _Reject
            data[key] = []
        else:
            data[key], at = scan(text, at)
        at = _skip(text, at)
        mark = text[at:at + 1]
        at = _skip(text, at + 1)
        if mark == "}":
            break
        if mark != ",":
            raise _Reject
    if at != len(text) or "events" not in data or "environment" not in data:
        raise _Reject
    version = data.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _Reject
    try:
        SESSION.check(data, ())  # every field but the events, which are checked above
    except Bad:
        raise _Reject from None
    return _session(data, events)


def _session(data: dict[str, Any], events: Iterable[Event]) -> Session:
    """The ``Session`` of a checked session document and its converted events."""
    return Session(
        environment=Environment(**data["environment"]),
        target=data.get("target", ""),
        events=tuple(events),
        wall_seconds=float(data.get("totals", {}).get("wall_seconds", 0.0)),
        base_context=dict(data.get("base_context", {})),
        calls=dict(data.get("calls", {})),
        warnings=tuple(data.get("warnings", [])),
        stale_captures=tuple(StaleCapture(**s) for s in data.get("stale_captures", [])),
        target_exception=data.get("target_exception"),
        processes=tuple(ProcessRecord(**p) for p in data.get("processes", [])),
    )
