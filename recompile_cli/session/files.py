"""Saved sessions on disk: ``save_session`` writes one, ``load_session`` reads one back.

``load_session`` reads a saved session (``--save``), a JSON report (``--output x.json``) or an
events log (``--events-log x.jsonl``), so that a run can be analysed and rendered again without
running anything. The formats themselves belong to ``session.codec``. A file above
``MAX_SESSION_BYTES`` (1 GiB) is refused before it is read; anything that is not a session
becomes a ``SessionFileError`` naming the file, the line or the field, never a traceback.

An events log may end early (a run killed by a signal or the OOM killer): every record up to a
last line cut short is kept, and the session says that the run did not finish.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from recompile_cli.errors import SessionFileError
from recompile_cli.fileio import atomic_write_text
from recompile_cli.session import codec
from recompile_cli.session.model import Event, Session

MAX_SESSION_BYTES = 1024 ** 3  # 1 GiB: a saved session above this is refused unread


# -- writing ---------------------------------------------------------------------------------------
def session_text(session: Session) -> str:
    """The saved session as JSON text: one field per line, one event per line."""
    return codec.document(codec.session_fields(session), long=("events",))


def session_to_dict(session: Session) -> dict[str, Any]:
    """The saved session as plain JSON data (what ``session_text`` writes)."""
    data: dict[str, Any] = codec.plain(codec.session_fields(session))
    return data


def save_session(session: Session, path: str | Path) -> None:
    """Write the session to ``path`` as JSON, atomically; ``SessionFileError`` if the file
    cannot be written."""
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
    body = data.lstrip()
    if body.startswith(b'{"type"') or (path.suffix == ".jsonl" and not body):
        return _session_from_log(data, str(path))
    return codec.decode_session(data, str(path))


_LOG_ADVICE = "The events log is damaged; record the run again"


def _session_from_log(data: bytes, source: str) -> Session:
    codec.check_utf8(data, source)
    lines = data.splitlines()
    records: list[tuple[int, codec.LogRecord]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append((number, codec.decode_record(line)))
        except msgspec.ValidationError as exc:  # (a DecodeError too: caught first)
            _record_error(exc, line, number, source, first=not records)
        except (msgspec.DecodeError, RecursionError) as exc:
            if number == len(lines):
                if records:
                    break  # a last line cut short by the kill: everything before it is whole
                raise SessionFileError(f"{source}: the events log's only record, its header, is "
                                       "cut short: nothing was recorded. Record the run "
                                       "again.") from None
            raise SessionFileError(f"{source}, line {number}: not a JSON record "
                                   f"({codec.reason(exc, line)}). {_LOG_ADVICE}.") from None
    if not records:
        raise SessionFileError(f"{source} is an empty events log, or its header record is cut "
                               "short: nothing was recorded. Record the run again.")
    number, header = records[0]
    if not isinstance(header, codec.LogHeader):
        _not_a_header(source, number)
    codec.check_version(header.schema_version, source)
    events: dict[int, Event] = {}
    end: codec.LogEnd | None = None
    for number, record in records[1:]:
        if isinstance(record, codec.LogEvent):
            events[record.id] = record.event
        elif isinstance(record, codec.LogEnd):
            end = record
        else:
            raise SessionFileError(f"{source}, line {number}: a second header record. "
                                   f"{_LOG_ADVICE}.")
    ordered = sorted(events.values(), key=lambda e: e.start_seconds)
    ordered = [e if e.seq == seq else dataclasses.replace(e, seq=seq)
               for seq, e in enumerate(ordered)]
    session = Session(environment=header.environment, target=header.target,
                      events=tuple(ordered), wall_seconds=0.0,
                      base_context=header.base_context)
    if end is None:
        return dataclasses.replace(
            session, wall_seconds=max((e.end_seconds for e in ordered), default=0.0),
            warnings=("the run did not finish (the events log has no end record): this report "
                      "holds the events recorded up to the interruption",))
    return dataclasses.replace(
        session, wall_seconds=end.wall_seconds, calls=end.calls, warnings=end.warnings,
        stale_captures=end.stale_captures, target_exception=end.target_exception,
        environment=end.environment or header.environment)


def _record_error(exc: msgspec.ValidationError, line: bytes, number: int, source: str,
                  first: bool) -> NoReturn:
    """Raise the ``SessionFileError`` for a JSON line that is not a valid record."""
    try:  # a tagged record is refused by its tag before the rest of the line is read
        kind = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError) as error:
        raise SessionFileError(f"{source}, line {number}: not a JSON record "
                               f"({codec.reason(error, line)}). {_LOG_ADVICE}.") from None
    kind = kind.get("type") if isinstance(kind, dict) else None
    if first and kind != "header":
        _not_a_header(source, number)
    if kind not in ("header", "event", "end"):
        raise SessionFileError(f"{source}, line {number}: not an event or end record (type "
                               f"{kind!r}). {_LOG_ADVICE}.")
    raise SessionFileError(codec.field_error(exc, f"{source}, line {number}",
                                             _LOG_ADVICE)) from None


def _not_a_header(source: str, number: int) -> NoReturn:
    raise SessionFileError(f"{source}, line {number}: the events log does not start with its "
                           "header record ({\"type\": \"header\", ...}). Pass a file written "
                           "by --events-log.")
