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
Decoding a document into a ``Session`` belongs to ``session.decode``: a valid saved session is
read by its fast reader, anything else by its reference reader, which names the field.

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
from dataclasses import fields as _dataclass_fields
from dataclasses import is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from recompile_cli.errors import SessionFileError
from recompile_cli.fileio import atomic_write_text
from recompile_cli.session import schema as _schema
from recompile_cli.session.decode import check_version, event_of, fast_session, session_from_dict
from recompile_cli.session.events_log import EventLog  # kept importable from here
from recompile_cli.session.model import SCHEMA_VERSION, Session
from recompile_cli.session.schema import END_RECORD, EVENT_RECORD, HEADER, Bad, path_name

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
    fast = fast_session(text)
    if fast is not None:
        return fast
    # Anything the fast path does not accept is read again field by field, for the exact error.
    try:
        document = _loads(text)
    except (ValueError, RecursionError) as exc:
        raise SessionFileError(f"{path} is not JSON ({_reason(exc)}). Pass a report saved with "
                               "--output FILE.json or --save FILE.json.") from None
    return session_from_dict(document, str(path))


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
    check_version(header.get("schema_version"), source)
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
        last = max((event_of(e).end_seconds for e in ordered), default=0.0)
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


def _space_end(text: str) -> int:
    """Where the leading white space of ``text`` ends (as ``str.lstrip`` counts it)."""
    at = 0
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
