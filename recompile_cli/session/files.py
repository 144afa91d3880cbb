"""Saved sessions on disk: ``save_session`` writes one; ``load_session`` reads back a saved
session, a JSON report or an events log (the formats are ``session.codec``'s) to analyse it
again. A file above ``MAX_SESSION_BYTES`` is refused unread, anything that is not a session is a
``SessionFileError`` (never a traceback), and an events log cut short keeps every whole record
(the session then says the run did not finish).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from recompile_cli.errors import SessionFileError
from recompile_cli.fileio import atomic_write_text
from recompile_cli.session import codec
from recompile_cli.session.events_log import LogReader
from recompile_cli.session.model import Session

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


def _session_from_log(data: bytes, source: str) -> Session:
    """The session of an events log's lines; a last line cut short (a killed run) is left out,
    everything before it is whole."""
    codec.check_utf8(data, source)
    lines = data.splitlines()
    while lines and not lines[-1].strip():  # blank lines after the last record: not records
        lines.pop()
    reader = LogReader(source)
    for number, line in enumerate(lines, 1):
        try:
            reader.feed(line, number)
        except SessionFileError:
            if number != len(lines) or not _cut_short(line):
                raise
            if reader.header is None:
                raise SessionFileError(f"{source}: the events log's only record, its header, "
                                       "is cut short: nothing was recorded. Record the run "
                                       "again.") from None
    return reader.session()


def _cut_short(line: bytes) -> bool:
    """Whether ``line`` is the start of a JSON record rather than a wrong one (not JSON)."""
    try:
        msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return True
    return False
