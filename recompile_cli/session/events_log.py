"""The events log writer (``--events-log x.jsonl``): the session streamed as JSON lines.

The records are ``session.codec``'s ``LogHeader``, ``LogEvent`` (every time an event changes)
and ``LogEnd``. Each line is flushed as it is written, so a run killed
by a signal or the OOM killer leaves every event up to that moment; ``session.files`` reads it
back. Writing never raises: a path that cannot be opened or a full disk stops the log, and
``problem`` says why once, while the recording goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from recompile_cli.session import codec
from recompile_cli.session.model import SCHEMA_VERSION, Environment, Event, Session


class EventLog:
    """Appends session records to a JSON-lines file, flushing each one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.problem: str | None = None  # why the log stopped, if it did
        self._file: IO[bytes] | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # like --save and --output
            self._file = open(self.path, "wb")  # noqa: SIM115 - kept open
        except OSError as exc:
            self._stop(exc)

    def header(self, environment: Environment, target: str, base_context: dict[str, str]
               ) -> None:
        self._write(codec.LogHeader(SCHEMA_VERSION, environment, target, base_context))

    def event(self, event: Event) -> None:
        self._write(codec.LogEvent(event.seq, event))

    def end(self, session: Session) -> None:
        self._write(codec.LogEnd(
            wall_seconds=session.wall_seconds, calls=session.calls, warnings=session.warnings,
            stale_captures=session.stale_captures, target_exception=session.target_exception,
            environment=session.environment))
        self.close()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._stop(exc)
            self._file = None

    def _write(self, record: codec.LogRecord) -> None:
        if self._file is None:
            return
        try:
            self._file.write(codec.encode(record) + b"\n")
            self._file.flush()
        except (OSError, ValueError) as exc:
            self._stop(exc)

    def _stop(self, exc: BaseException) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.problem = (f"the events log {self.path} could not be written ({reason}); it "
                        "stopped there, and the recording went on")
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass
