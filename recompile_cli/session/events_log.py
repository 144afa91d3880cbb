"""The events log: the session as JSON lines (``session.codec``'s records), written (``EventLog``)
and read back (``LogReader``): what ``--events-log`` writes and what the measured process streams
to the supervisor. Each line is flushed as written, so a killed process leaves every event up to
then. Writing never raises (``problem`` says once why it stopped) and writes only what reading
accepts: each record is decoded with the reader's own typed decoder before its line is written,
and one that does not fit loses the field that does not, or is left out, counted in the end
record's warnings (``EventLog.misfits``). Reading trusts nothing (a ``SessionFileError`` naming
the source and the line); a measured process's stream skips a record that does not fit instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any, NoReturn

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
        self.misfits = _Misfits()  # the records that did not fit the schema as they were
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
        not those streamed (a forecast's). Its warnings end with what did not fit the schema
        (``_Misfits``)."""
        record = codec.LogEnd(
            wall_seconds=session.wall_seconds, calls=session.calls, warnings=session.warnings,
            stale_captures=session.stale_captures, target_exception=session.target_exception,
            stale_statics=session.stale_statics,
            environment=session.environment, interrupted=interrupted, traceback=traceback,
            events=events, slow_call_watch=session.slow_call_watch)
        if self._file is not None:
            fitted = self._fitted(record)[0]
            if isinstance(fitted, codec.LogEnd):
                if self.misfits:
                    fitted = msgspec.structs.replace(
                        fitted, warnings=(*fitted.warnings, *self.misfits.warnings()))
                self._write(fitted)
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
            data = self._fitted(record)[1]
            if data is not None:
                self.line(data)

    def _fitted(self, record: codec.LogRecord) -> tuple[codec.LogRecord | None, bytes | None]:
        """``record`` as the reader decodes it, and its line: encoded, then decoded with the
        reader's own typed decoder, so that a line the reader would refuse is never written.
        A record that does not fit loses the field that does not (``_cleared``), noted in
        ``misfits``; one that still does not fit, or cannot be encoded, is left out (None),
        noted too."""
        for _ in range(_REPAIRS):
            try:
                data = codec.encode(record)
            except Exception as exc:  # a value the encoder cannot take (a key that is no text)
                self.misfits.add(_kind(record), "", f"{type(exc).__name__}: {exc}", None)
                return None, None
            try:
                codec.decode_record(data)
            except msgspec.ValidationError as exc:
                message, _, where = str(exc).partition(" - at `$")
                where = where.rstrip("`").removeprefix(".")
                repaired, cleared = _cleared(record, _segments(where))
                self.misfits.add(_kind(record), where, message, cleared)
                if repaired is None:
                    return None, None
                record = repaired
                continue
            except (msgspec.DecodeError, RecursionError) as exc:  # not JSON: never expected
                self.misfits.add(_kind(record), "", f"{type(exc).__name__}: {exc}", None)
                return None, None
            return record, data
        self.misfits.add(_kind(record), "", f"more than {_REPAIRS} values did not fit", None)
        return None, None

    def _stop(self, exc: BaseException) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.problem = (f"the events log {self.path} could not be written ({reason}); it "
                        "stopped there, and the recording went on")
        self.abandon()


_REPAIRS = 8  # the most fields cleared from one record before it is left out


class _Misfits:
    """What the writer could not write as it was, counted by record kind, field and problem,
    for the end record's warnings: never the run's end (``EventLog._fitted``)."""

    SHOWN = 5  # the most kinds of misfit named; the rest are counted

    def __init__(self, action: str = "written") -> None:
        self.action = action  # what could not be done with a record left out
        self.counts: dict[tuple[str, str, str, str | None], int] = {}

    def __bool__(self) -> bool:
        return bool(self.counts)

    def add(self, kind: str, where: str, message: str, cleared: str | None) -> None:
        key = (kind, where, message[:200], cleared)
        self.counts[key] = self.counts.get(key, 0) + 1

    def warnings(self) -> list[str]:
        out = []
        items = list(self.counts.items())
        for (kind, where, message, cleared), count in items[:self.SHOWN]:
            field = f" at {where}" if where else ""
            times = "" if count == 1 else f" ({count} records)"
            problem = f"{message[:1].lower()}{message[1:]}"
            record = f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} record"
            if cleared is not None:
                out.append(f"a value of {record} did not fit the session's schema{field} "
                           f"({problem}){times}: it was recorded without {cleared}")
            else:
                out.append(f"{record} could not be {self.action}{field} ({problem}){times}: "
                           "it was left out, and the recording went on")
        rest = sum(count for _, count in items[self.SHOWN:])
        if rest:
            out.append(f"{rest} more record(s) did not fit the session's schema (not shown)")
        return out


_SKIPPABLE = {"event": "event", "warmup": "warm-up", "slow_calls": "slow-call"}


def _kind(record: codec.LogRecord) -> str:
    return {codec.LogHeader: "header", codec.LogEvent: "event", codec.LogEnd: "end",
            codec.LogRefused: "refused", codec.LogWarmup: "warm-up",
            codec.LogSlowCalls: "slow-call"}.get(type(record), type(record).__name__)


def _segments(where: str) -> list[str | int | None]:
    """A msgspec path (``event.signature.leaves[...].shape[0]``) as its steps: a field's name,
    an index, or None for a dict's key (msgspec does not say which)."""
    steps: list[str | int | None] = []
    for part in where.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            index = part[1:-1]
            steps.append(int(index) if index.isdigit() else None)
        else:
            steps.append(part)
    return steps


def _cleared(record: Any, steps: list[str | int | None]) -> tuple[Any, str | None]:
    """``record`` with the deepest field along ``steps`` that may be unset (its default is
    None: not known) set so, else the deepest one with any default set to it; (None, None)
    when no field on the way has a default. Returns the copy and that field's dotted name."""
    chain: list[tuple[Any, str]] = []  # (struct, field name) from the record down
    value = record
    for step in steps:
        if isinstance(value, msgspec.Struct) and isinstance(step, str):
            chain.append((value, step))
            value = getattr(value, step, None)
        elif isinstance(value, tuple) and isinstance(step, int) and step < len(value):
            value = value[step]
        else:
            break
    candidates = [(i, info) for i, (struct, name) in enumerate(chain)
                  for info in msgspec.structs.fields(type(struct)) if info.name == name
                  and not info.required]
    if not candidates:
        return None, None
    unset = [(i, info) for i, info in candidates if info.default is None]
    depth, info = (unset or candidates)[-1]
    default = (info.default if info.default_factory is msgspec.NODEFAULT
               else info.default_factory())
    struct, name = chain[depth]
    new: Any = msgspec.structs.replace(struct, **{name: default})
    for upper in range(depth - 1, -1, -1):  # copy each struct above it, up to the record
        parent, field = chain[upper]
        new = msgspec.structs.replace(
            parent, **{field: _replaced_in(getattr(parent, field), chain[upper + 1][0], new)})
    return new, ".".join(field for _, field in chain[:depth + 1])


def _replaced_in(container: Any, old: Any, new: Any) -> Any:
    """``container`` (a tuple, maybe of tuples) with the item ``old`` (by identity) as ``new``."""
    if container is old:
        return new
    if isinstance(container, tuple):
        return tuple(_replaced_in(item, old, new) for item in container)
    return container


class LogReader:
    """Rebuilds a ``Session`` from the records of an events log, fed one line at a time (a file
    read back, or a supervised child's stream as it arrives).

    ``feed`` raises ``SessionFileError`` naming ``source`` and the line for anything that is not
    a record in its place; ``session()`` is everything recorded so far, with a warning when the
    log has no end record; asked again with no record fed in between, it is the same object.
    With ``skip_misfits`` (a measured process's stream), an event, warm-up or slow-call record
    that is JSON but does not fit the schema is skipped and counted in the session's warnings
    instead: one value never loses the run (its writer checks each record; this is the
    second guard).
    """

    def __init__(self, source: str, skip_misfits: bool = False) -> None:
        self.source = source
        self.skip_misfits = skip_misfits
        self.misfits = _Misfits("read")  # the records skipped (``skip_misfits``)
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
            if self._skipped(exc, line):
                return None
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
        skipped = tuple(self.misfits.warnings()) if self.misfits else ()
        if end is None:
            return msgspec.structs.replace(
                session, wall_seconds=max((e.end_seconds for e in ordered), default=0.0),
                warnings=(NOT_FINISHED, *skipped))
        return msgspec.structs.replace(
            session, wall_seconds=end.wall_seconds, calls=end.calls,
            warnings=(*end.warnings, *skipped), stale_captures=end.stale_captures,
            stale_statics=end.stale_statics,
            target_exception=end.target_exception,
            environment=end.environment or header.environment)

    def _skipped(self, exc: msgspec.ValidationError, line: bytes) -> bool:
        """Whether the record of ``line``, which did not fit the schema, is skipped and
        counted (``skip_misfits``, after the header, a record that only adds to the session)."""
        if not self.skip_misfits or self.header is None:
            return False
        try:
            found = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return False
        kind = found.get("type") if isinstance(found, dict) else None
        if kind not in _SKIPPABLE:
            return False
        message, _, where = str(exc).partition(" - at `$")
        self.misfits.add(_SKIPPABLE[kind], where.rstrip("`").removeprefix("."), message, None)
        return True

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
