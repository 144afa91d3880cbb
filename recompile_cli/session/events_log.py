"""The events log: the session as JSON lines (``session.codec``'s records), written (``EventLog``)
and read back (``LogReader``): what ``--events-log`` writes and what the measured process streams
to the supervisor. Each line is flushed as written, so a killed process leaves every event up to
then. Writing never raises (``problem`` says once why it stopped); reading trusts nothing (a
``SessionFileError`` naming the source and the line).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, NoReturn

import msgspec

from recompile_cli.errors import SessionFileError
from recompile_cli.session import codec
from recompile_cli.session.model import (
    SCHEMA_VERSION,
    Environment,
    Event,
    Session,
    SlowCalls,
    SlowCallWatch,
)
from recompile_cli.session.warmup import Warmup

DAMAGED = "The events log is damaged; record the run again"
NOT_FINISHED = ("the run did not finish (the events log has no end record): this report holds "
                "the events recorded up to the interruption")


class EventLog:
    """Appends session records to a JSON-lines file (a path) or a pipe (a file descriptor),
    flushing each one."""

    def __init__(self, path: str | Path | None = None, fd: int | None = None) -> None:
        self.path = Path(path) if path is not None else Path(f"<fd {fd}>")
        self.problem: str | None = None  # why the log stopped, if it did
        self._file: IO[bytes] | None = None
        try:
            if fd is not None:
                self._file = os.fdopen(fd, "wb")
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)  # like --save and --output
                self._file = open(self.path, "wb")  # noqa: SIM115 - kept open
        except OSError as exc:
            self._stop(exc)

    def header(self, environment: Environment, target: str, base_context: dict[str, str],
               slow_call_watch: SlowCallWatch | None = None) -> None:
        self._write(codec.LogHeader(SCHEMA_VERSION, environment, target, base_context,
                                    slow_call_watch))

    def event(self, event: Event) -> None:
        self._write(codec.LogEvent(event.seq, event))

    def warmup(self, warmup: Warmup) -> None:
        """The warm-up plan that just ended (``capture.running.warmup``)."""
        self._write(codec.LogWarmup(warmup))

    def slow_calls(self, group_id: int, group: SlowCalls) -> None:
        self._write(codec.LogSlowCalls(group_id, group))

    def end(self, session: Session, interrupted: int | None = None,
            traceback: str | None = None, events: tuple[Event, ...] | None = None) -> None:
        """The end record, then the log is closed. ``events``: the final events when they are
        not those streamed (a forecast's)."""
        self._write(codec.LogEnd(
            wall_seconds=session.wall_seconds, calls=session.calls, warnings=session.warnings,
            stale_captures=session.stale_captures, target_exception=session.target_exception,
            environment=session.environment, interrupted=interrupted, traceback=traceback,
            events=events, slow_call_watch=session.slow_call_watch))
        self.close()

    def line(self, record: bytes) -> None:
        """One record already encoded (a line of a supervised child's stream, copied)."""
        if self._file is None:
            return
        try:
            self._file.write(record + b"\n")
            self._file.flush()
        except (OSError, ValueError) as exc:
            self._stop(exc)

    def refused(self, message: str, exit_code: int) -> None:
        """The run could not start (a bad target): its error, then the log is closed."""
        self._write(codec.LogRefused(message, exit_code))
        self.close()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._stop(exc)
            self._file = None

    def abandon(self) -> None:
        """Close this process's copy of the log without writing (a child of ``os.fork``: the
        parent process goes on writing it)."""
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass

    def _write(self, record: codec.LogRecord) -> None:
        if self._file is not None:
            self.line(codec.encode(record))

    def _stop(self, exc: BaseException) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.problem = (f"the events log {self.path} could not be written ({reason}); it "
                        "stopped there, and the recording went on")
        self.abandon()


class LogReader:
    """Rebuilds a ``Session`` from the records of an events log, fed one line at a time (a file
    read back, or a supervised child's stream as it arrives).

    ``feed`` raises ``SessionFileError`` naming ``source`` and the line for anything that is not
    a record in its place; ``session()`` is everything recorded so far, with a warning when the
    log has no end record; asked again with no record fed in between, it is the same object.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._built: Session | None = None  # session() as of the last record fed
        self.header: codec.LogHeader | None = None
        self.end: codec.LogEnd | None = None
        self.refused: codec.LogRefused | None = None
        self.warmup: Warmup | None = None
        self.events: dict[int, Event] = {}
        self.slow_calls: dict[int, SlowCalls] = {}  # group id -> the group as last streamed

    def feed(self, line: bytes, number: int) -> codec.LogRecord | None:
        """Take one line (``number`` counts from 1); blank lines are skipped (None)."""
        if not line.strip():
            return None
        self._built = None
        try:
            record = codec.decode_record(line)
        except msgspec.ValidationError as exc:  # (a DecodeError too: caught first)
            self._record_error(exc, line, number)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise SessionFileError(f"{self.source}, line {number}: not a JSON record "
                                   f"({codec.reason(exc, line)}). {DAMAGED}.") from None
        if isinstance(record, codec.LogRefused):  # first, or after the header
            self.refused = record
        elif self.header is None:
            if not isinstance(record, codec.LogHeader):
                self._not_a_header(number)
            codec.check_version(record.schema_version, self.source)
            self.header = record
        elif isinstance(record, codec.LogEvent):
            self.events[record.id] = record.event
        elif isinstance(record, codec.LogWarmup):
            self.warmup = record.warmup
        elif isinstance(record, codec.LogSlowCalls):
            self.slow_calls[record.id] = record.group
        elif isinstance(record, codec.LogEnd):
            self.end = record
        else:
            raise SessionFileError(f"{self.source}, line {number}: a second header record. "
                                   f"{DAMAGED}.")
        return record

    def session(self) -> Session:
        """The session recorded so far (``SessionFileError`` when not even the header came)."""
        if self._built is None:
            self._built = self._session()
        return self._built

    def _session(self) -> Session:
        header = self.header
        if header is None:
            raise SessionFileError(f"{self.source} is an empty events log, or its header record "
                                   "is cut short: nothing was recorded. Record the run again.")
        end = self.end
        streamed = end.events if end is not None and end.events is not None else tuple(
            self.events.values())
        ordered = sorted(streamed, key=lambda e: e.start_seconds)
        ordered = [e if e.seq == seq else msgspec.structs.replace(e, seq=seq)
                   for seq, e in enumerate(ordered)]
        session = Session(environment=header.environment, target=header.target,
                          events=tuple(ordered), wall_seconds=0.0,
                          base_context=header.base_context, warmup=self.warmup,
                          slow_calls=tuple(group for _, group in sorted(self.slow_calls.items())),
                          slow_call_watch=(end.slow_call_watch if end is not None else None)
                          or header.slow_call_watch)
        if end is None:
            return msgspec.structs.replace(
                session, wall_seconds=max((e.end_seconds for e in ordered), default=0.0),
                warnings=(NOT_FINISHED,))
        return msgspec.structs.replace(
            session, wall_seconds=end.wall_seconds, calls=end.calls, warnings=end.warnings,
            stale_captures=end.stale_captures, target_exception=end.target_exception,
            environment=end.environment or header.environment)

    def _record_error(self, exc: msgspec.ValidationError, line: bytes, number: int
                      ) -> NoReturn:
        """Raise the ``SessionFileError`` for a JSON line that is not a valid record."""
        try:  # a tagged record is refused by its tag before the rest of the line is read
            kind = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError) as error:
            raise SessionFileError(f"{self.source}, line {number}: not a JSON record "
                                   f"({codec.reason(error, line)}). {DAMAGED}.") from None
        kind = kind.get("type") if isinstance(kind, dict) else None
        if self.header is None and kind not in ("header", "refused"):
            self._not_a_header(number)
        if kind not in ("header", "event", "warmup", "end", "refused", "slow_calls"):
            raise SessionFileError(f"{self.source}, line {number}: not an event, warm-up, "
                                   f"slow-call or end record (type {kind!r}). {DAMAGED}.")
        raise SessionFileError(codec.field_error(exc, f"{self.source}, line {number}",
                                                 DAMAGED)) from None

    def _not_a_header(self, number: int) -> NoReturn:
        raise SessionFileError(f"{self.source}, line {number}: the events log does not start "
                               "with its header record ({\"type\": \"header\", ...}). Pass a "
                               "file written by --events-log.")
