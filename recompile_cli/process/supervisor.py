"""The supervisor: the process that owns the verdict while the measured program runs in a child
(``process.child``). ``supervise`` starts it through a launcher, reads its events stream in
batches (``BATCH``), copies it to ``--events-log``, feeds the live line, passes the first Ctrl-C
or SIGTERM on (a second, or a signal before recording starts, kills the child) and returns the
``Outcome``: a run that did not end normally is never a success. Never imports JAX.
"""

from __future__ import annotations

import contextlib
import os
import platform
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import msgspec

from recompile_cli import exits
from recompile_cli.errors import RecompileError, SessionFileError
from recompile_cli.process import launchers, spawn
from recompile_cli.process.job import Job
from recompile_cli.session.events_log import EventLog, LogReader
from recompile_cli.session.model import Environment, HookMode, Outcome, Session

GRACE = 5.0  # seconds between SIGTERM and SIGKILL for a child past its --timeout
POLL = 0.25  # the longest wait between looks at signals, the timeout and the live line
# The events stream is read at most this often once it is flowing (its first record at once):
# a reader waiting on the pipe costs the child a wake-up of this process for every line it
# writes, which slowed a run of 8,000 short traces by 0.2-0.4 s. The pipe holds what comes
# meanwhile (``spawn.EVENTS_PIPE_BYTES``); the child still writes each line as it records it,
# so whatever it wrote before it died is in the pipe all the same.
BATCH = 0.02
_READ = spawn.EVENTS_PIPE_BYTES  # one read of the events stream takes all its pipe holds


class Observer(Protocol):
    """What watches the stream as it arrives (the live status line)."""

    def observe(self, record: Any) -> None: ...

    def tick(self) -> None: ...


class Refused(RecompileError):
    """The child could not load the target; the message and exit code are the child's."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exits.ExitCode(exit_code)


@dataclass
class _Signals:
    """Ctrl-C and SIGTERM received while the child runs: the first is passed on, the second
    kills the child."""

    process: spawn.Process | None = None
    received: list[exits.ExitCode] = field(default_factory=list)
    recording: bool = False  # the child's first record came: its target may run
    control: int = -1  # the write end of the child's stop requests

    def __call__(self, signum: int, frame: Any) -> None:
        self.received.append(exits.ExitCode.SIGINT if signum == signal.SIGINT
                             else exits.ExitCode.SIGTERM)
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(OSError):
            if len(self.received) == 1 and self.recording:
                process.send_signal(signum)
                os.write(self.control, bytes([self.received[0]]))
            else:
                process.kill()


def supervise(job: Job, *, cwd: Path | None = None, events_log: Path | None = None,
              timeout: float | None = None, observer: Observer | None = None,
              stdout_to_stderr: bool = False,
              ended: Callable[[Session], None] | None = None,
              launcher: launchers.Launcher | None = None) -> Outcome:
    """Run ``job`` in a child process and return its outcome (see the module docstring).
    ``launcher`` starts it (default: ``launchers.DEFAULT``, a process of its own).
    ``ended`` is given the session as soon as the child's end record is in and its stream
    closed, while its process may still be ending (its interpreter's shutdown): work on it then
    overlaps that wait. The outcome's session is that very object unless how the process ended
    changed it; ``ended`` never raises into the run (what it raises is dropped).

    Raises:
        RecompileError: the child could not load the target (its message and exit code).
        KeyboardInterrupt, exits.Terminated: a signal came before the child started.
    """
    exits.raise_pending()  # a signal while the tool started: the target never starts
    out, err = _Output(sys.stdout), _Output(sys.stderr)
    job = msgspec.structs.replace(job, stdout_to_stderr=stdout_to_stderr)
    signals = _Signals()
    started = time.monotonic()
    copy: EventLog | None = None
    child: spawn.Started | None = None
    try:
        with _handling(signals):
            child = (launcher or launchers.DEFAULT).start(
                job, os.environ, cwd=cwd, stdout=out.target, stderr=err.target)
            signals.control = child.control
            process = signals.process = child.process
            _prefetch()  # while the child starts: nothing of it was needed before
            copy = EventLog(events_log) if events_log is not None else None
            stream = _Stream(LogReader("the measured process's events", skip_misfits=True),
                             copy, observer, signals, ended)
            sources = {child.log: stream.take, **out.source(child.stdout),
                       **err.source(child.stderr)}
            timed_out = _follow(process, sources, signals, observer, timeout, started,
                                batched=(child.log,))
            stream.take(b"", last=True)
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
    finally:
        if child is not None:
            child.close()
        if copy is not None:
            copy.close()
    outcome = _outcome(job, stream, process.wait(), timed_out, signals.received,
                       time.monotonic() - started)
    if copy is not None and copy.problem:
        session = msgspec.structs.replace(outcome.session,
                                          warnings=(*outcome.session.warnings, copy.problem))
        outcome = msgspec.structs.replace(outcome, session=session)
    return outcome


def _follow(process: spawn.Process, sources: dict[int, Callable[[bytes], None]],
            signals: _Signals, observer: Observer | None, timeout: float | None,
            started: float, batched: tuple[int, ...] = ()) -> float | None:
    """Read every source (the events stream, relayed output) until the child has ended;
    returns the timeout when it ran past it. A ``batched`` source is read in batches: after
    each read it is left alone for ``BATCH`` seconds (the child's output is relayed at once)."""
    open_fds = dict(sources)
    resting: dict[int, float] = {}  # batched sources left alone until then (time.monotonic)
    timed_out: float | None = None
    killing_at: float | None = None
    ended = _end_watch(process)
    try:
        while True:
            if open_fds or ended is not None:
                now = time.monotonic()
                resting = {fd: until for fd, until in resting.items() if until > now}
                watched = [*(fd for fd in open_fds if fd not in resting),
                           *([] if ended is None else [ended])]
                wait = min([POLL, *(until - now for until in resting.values())])
                readable, _, _ = select.select(watched, [], [], wait)
                for fd in readable:
                    if fd == ended:  # the child has ended: reap it (at once)
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            process.wait(POLL)
                        continue
                    chunk = os.read(fd, _READ if fd in batched else 1 << 16)
                    open_fds[fd](chunk)
                    if not chunk:
                        del open_fds[fd]
                    elif fd in batched:
                        resting[fd] = time.monotonic() + BATCH
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(POLL)
            if process.poll() is not None:
                for fd, take in open_fds.items():  # a process the target forked may still
                    take(_drain(fd))  # hold a pipe: take what is there, do not wait for it
                return timed_out
            timed_out, killing_at = _enforce(process, observer, timeout, started, timed_out,
                                             killing_at)
    finally:
        if ended is not None:
            os.close(ended)


def _end_watch(process: spawn.Process) -> int | None:
    """A descriptor that is readable once the child has ended (a Linux pidfd), so that its end
    wakes the loop at once; None where there is none (the loop then looks every few
    milliseconds, as ``Popen.wait`` with a timeout does)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None or process.pid is None:  # no pidfd, or a job run in-process
        return None
    try:
        return int(pidfd_open(process.pid))
    except OSError:  # an old kernel, or a sandbox that refuses the call
        return None


def _enforce(process: spawn.Process, observer: Observer | None,
             timeout: float | None, started: float, timed_out: float | None,
             killing_at: float | None) -> tuple[float | None, float | None]:
    """One look between reads: the live line, and the timeout (terminate, then kill)."""
    if observer is not None:
        observer.tick()
    now = time.monotonic()
    if timeout is not None and timed_out is None and now - started > timeout:
        timed_out = timeout
        killing_at = now + GRACE
        with contextlib.suppress(OSError):
            process.terminate()
    if killing_at is not None and now > killing_at:
        with contextlib.suppress(OSError):
            process.kill()
    return timed_out, killing_at


class _Output:
    """Where one of the child's output streams goes: straight to this process's file
    descriptor (a terminal, a file, a pipe), or, when this process's ``sys.stdout`` /
    ``sys.stderr`` is a Python object without one (redirected in Python), through a pipe
    relayed into it."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        try:
            self.target: int = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.target = subprocess.PIPE
        else:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                stream.flush()  # what was written before comes first

    def source(self, pipe: IO[bytes] | None) -> dict[int, Callable[[bytes], None]]:
        return {} if pipe is None else {pipe.fileno(): self.write}

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        with contextlib.suppress(OSError, ValueError):
            buffer = getattr(self.stream, "buffer", None)
            if buffer is not None:
                self.stream.flush()
                buffer.write(chunk)
                buffer.flush()
            else:
                self.stream.write(chunk.decode(errors="replace"))


def _prefetch() -> None:
    """Import what reading the stream, the analysis and the report need, while the child
    starts (it then imports JAX, which takes far longer): none of it is needed before the
    target runs, so none of it delays the start."""
    # Local on purpose: importing them is this function's whole work (after the child started).
    import recompile_cli.analysis.report
    import recompile_cli.gate.evaluate
    import recompile_cli.render.table  # noqa: F401


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(fd, _READ):
            chunks.append(chunk)
    return b"".join(chunks)


class _Stream:
    """The child's bytes, cut into lines and fed to the reader, the copy and the observer."""

    def __init__(self, reader: LogReader, copy: EventLog | None,
                 observer: Observer | None, signals: _Signals,
                 ended: Callable[[Session], None] | None = None) -> None:
        self.reader = reader
        self.signals = signals
        self.copy = copy
        self.observer = observer
        self.ended = ended
        self.damaged: str | None = None  # why the stream stopped being read
        self.closed_at: float | None = None  # when the stream closed (time.monotonic)
        self._buffer = b""
        self._lines = 0

    def take(self, chunk: bytes, last: bool = False) -> None:
        lines = (self._buffer + chunk).split(b"\n")
        self._buffer = lines.pop()
        if last and self._buffer:  # a last line cut short by the child's end
            lines.append(self._buffer)
            self._buffer = b""
        for number, line in enumerate(lines, 1):
            self._line(line, cut_short_ok=last and number == len(lines))
        if not chunk and not last:  # the stream closed: its process is ending
            self.closed_at = time.monotonic()
            self._closed()

    def _closed(self) -> None:
        ended, self.ended = self.ended, None
        if (ended is None or self.damaged is not None or self._buffer
                or self.reader.end is None or self.reader.header is None):
            return
        try:
            ended(self.reader.session())
        except Exception:  # work ahead of time: the same work is done again, and raises there
            pass

    def _line(self, line: bytes, cut_short_ok: bool) -> None:
        self._lines += 1
        if self.copy is not None:
            self.copy.line(line)
        if self.damaged is not None:
            return
        try:
            record = self.reader.feed(line, self._lines)
        except SessionFileError as exc:
            if not cut_short_ok:
                self.damaged = str(exc)
            return
        if record is not None:
            self.signals.recording = True
            if self.observer is not None:
                self.observer.observe(record)


def _outcome(job: Job, stream: _Stream, returncode: int, timed_out: float | None,
             received: list[exits.ExitCode], seconds: float) -> Outcome:
    """The run's outcome: what the stream says, and how the child ended where that is worse."""
    reader = stream.reader
    if reader.refused is not None:
        raise Refused(reader.refused.message, reader.refused.exit_code)
    session = reader.session() if reader.header is not None else _nothing(job, seconds)
    end = reader.end
    interrupted: int | None = received[0] if received else None
    if timed_out is not None:  # our SIGTERM stopped it: a failure of the run, not a signal
        how = ("SIGKILL, 5 s after SIGTERM" if returncode == -signal.SIGKILL else "SIGTERM")
        return _ended(session, f"{_label(job)} ran past --timeout {timed_out:g} s and was "
                      f"stopped ({how})", None, None)
    if end is not None and stream.damaged is None:
        interrupted = end.interrupted or interrupted
        failure = session.target_exception
        if failure is None and interrupted is None and returncode != 0:
            failure = (f"{_label(job)} finished, then its process ended with "
                       f"{_status(returncode)} (in its exit handlers)")
        if failure is None and interrupted is not None:
            failure = exits.interruption_text(exits.ExitCode(interrupted))
        return _ended(session, failure, interrupted, end.traceback)
    early = time.monotonic() - stream.closed_at if stream.closed_at is not None else 0.0
    if stream.damaged is not None:
        how = f"its events stream was damaged ({stream.damaged})"
    elif reader.header is not None and early > PIPE_CLOSED_SECONDS:
        how = (f"the program closed the recorder's events pipe {early:.1f} s before its "
               f"process ended ({_status(returncode).partition(' before')[0]}): nothing it did "
               "after that was recorded (a close of every open file descriptor, "
               "os.closerange, does it; keep descriptors above 2 open)")
    elif received and len(received) > 1:
        how = f"{exits.interruption_text(received[0])}, then ended by a second signal (SIGKILL)"
    else:
        how = f"its process ended with {_status(returncode)}"
    started = "" if reader.header is not None else ", before it started recording"
    failure = f"{_label(job)} did not finish{started}: {how}"
    return _ended(session, failure, interrupted, None)


PIPE_CLOSED_SECONDS = 1.0  # the events stream closed this long before the process ended


def _ended(session: Session, failure: str | None, interrupted: int | None,
           traceback: str | None) -> Outcome:
    if failure is not None and session.target_exception != failure:
        session = msgspec.structs.replace(session, target_exception=failure)
    return Outcome(session, failure, interrupted, traceback)


def _status(returncode: int) -> str:
    """How a process ended, in words: ``exit status 0 (os._exit, or ...)``, ``SIGSEGV``..."""
    if returncode >= 0:
        return (f"exit status {returncode} before the run's end (os._exit, or an exit from "
                "native code)" if returncode == 0 else f"exit status {returncode}")
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    words = {"SIGSEGV": " (a crash in native code)", "SIGABRT": " (an abort in native code)",
             "SIGKILL": " (killed: out of memory, or by a scheduler)", "SIGBUS": " (a crash)"}
    return f"{name}{words.get(name, '')}"


def _label(job: Job) -> str:
    args = " ".join(job.script_args)
    target = f"-m {job.target}" if job.module else job.target
    return f"{target} {args}".strip() if job.kind == "script" else job.target


def _nothing(job: Job, seconds: float) -> Session:
    """The session of a child that ended before its recorder started: no events."""
    return Session(environment=Environment(jax_version="unknown",
                                           python_version=platform.python_version(),
                                           backend="unknown",
                                           hook_mode=HookMode(job.hook_mode)),
                   target=_label(job), events=(), wall_seconds=seconds)


@contextlib.contextmanager
def _handling(signals: _Signals) -> Iterator[None]:
    """Ctrl-C and SIGTERM go to ``signals`` while the child runs (main thread only)."""
    if not exits.in_main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signals) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
