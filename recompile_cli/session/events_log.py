"""The events log writer (``--events-log x.jsonl``): the session streamed as JSON lines.

A ``header`` record, then an ``event`` record every time an event changes (the last record of
each ``id`` wins), then an ``end`` record. Each line is flushed as it is written, so a run killed
by a signal or the OOM killer leaves every event up to that moment; ``session.files`` reads it
back. Writing never raises: a path that cannot be opened or a full disk stops the log, and
``problem`` says why once, while the recording goes on.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from recompile_cli.fileio import strict_json
from recompile_cli.session.model import SCHEMA_VERSION, Environment, Event, Session


class EventLog:
    """Appends session records to a JSON-lines file, flushing each one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.problem: str | None = None  # why the log stopped, if it did
        self._file: IO[str] | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # like --save and --output
            self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - kept open
        except OSError as exc:
            self._stop(exc)

    def header(self, environment: Environment, target: str, base_context: dict[str, str]
               ) -> None:
        self._write({"type": "header", "schema_version": SCHEMA_VERSION,
                     "environment": asdict(environment), "target": target,
                     "base_context": base_context})

    def event(self, event: Event) -> None:
        self._write({"type": "event", "id": event.seq, "event": asdict(event)})

    def end(self, session: Session) -> None:
        self._write({"type": "end", "wall_seconds": session.wall_seconds,
                     "calls": session.calls, "warnings": list(session.warnings),
                     "stale_captures": [asdict(s) for s in session.stale_captures],
                     "target_exception": session.target_exception,
                     "environment": asdict(session.environment)})
        self.close()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._stop(exc)
            self._file = None

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        try:
            self._file.write(strict_json(record, indent=None) + "\n")
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
