"""Starting the measured process (``process.child``): its one command line, the pipes it is given
and the signal state it starts in.

``start`` makes the events pipe (the child writes, the supervisor reads; on Linux it holds
``EVENTS_PIPE_BYTES``, so that the supervisor can read it in batches without the child waiting) and
the stop-request pipe (the supervisor writes one byte when it passes a signal on), and starts the
child with the run's ``Job`` in the environment. ``start(job=None)`` starts it before the job is
known (``process.prestart``): the child then imports JAX and the recorder, and waits for the job
on a third pipe; ``Started.send`` writes it and closes that pipe, ``Started.discard`` ends a
child that was never given one (it has run nothing of the target).

Either way the child starts with Ctrl-C and SIGTERM ignored until it has set its own handlers,
so that a signal while Python and JAX start never ends in a traceback, and on Linux it is
killed when this process dies, so that a supervisor killed outright leaves no measured process
running without it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping

import recompile_cli

# This module is imported first thing by the console script (``process.prestart``), to start the
# measured process before anything else is imported: it imports nothing that a bare interpreter
# does not need to start a process (no msgspec, dataclasses or typing until a job is sent).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from msgspec import Struct as Job  # ``process.job.Job``, which imports this module

# How the job reaches the child (``process.child`` reads them):
ENV = "RECOMPILE_CLI_CHILD"  # the job, as JSON
JOB_FD_ENV = "RECOMPILE_CLI_CHILD_JOB_FD"  # or: the pipe the job comes on (``process.prestart``)
_PR_SET_PDEATHSIG = 1  # prctl(2), Linux
# The events pipe's size: the supervisor reads it every ``supervisor.BATCH`` seconds at most,
# and this holds thousands of events meanwhile (the default, 64 KiB, about a hundred). 1 MiB is
# Linux's default /proc/sys/fs/pipe-max-size, the most an unprivileged process may ask.
EVENTS_PIPE_BYTES = 1 << 20
# Where the package lives.
ROOT = os.path.dirname(os.path.dirname(os.path.realpath(recompile_cli.__file__)))
# The child's first act: import this package from where the supervisor's came from, then leave
# sys.path as `python SCRIPT` has it (the runner puts the script's folder first).
BOOTSTRAP = ("import sys; sys.path.insert(0, {root!r}); from recompile_cli.process.child import "
             "main; sys.path.remove({root!r}); sys.flags.safe_path or sys.path[0] != '' or "
             "sys.path.pop(0); main()")


def _libc() -> Any:
    """The C library, for ``prctl`` on Linux (loaded before any fork: ``_prepare_child`` runs
    between fork and exec, where nothing may be imported); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


_LIBC = _libc()


def command() -> list[str]:
    """The measured process's command line."""
    return [sys.executable, "-c", BOOTSTRAP.format(root=ROOT)]


class Started:
    """A measured process and this process's ends of its pipes."""

    def __init__(self, process: subprocess.Popen[bytes], log: int, control: int, job: int = -1,
                 child_fds: tuple[int, int] = (-1, -1)) -> None:
        self.process = process
        self.log = log  # the events pipe's read end
        self.control = control  # the stop requests' write end
        self.job = job  # the job pipe's write end, until the job is sent (-1: none, or sent)
        self.child_fds = child_fds  # the child's numbers of the events and stop pipes

    def send(self, job: Job) -> None:
        """Give a child started without a job its job (once)."""
        import msgspec

        data = msgspec.json.encode(msgspec.structs.replace(
            job, log_fd=self.child_fds[0], control_fd=self.child_fds[1]))
        fd, self.job = self.job, -1
        try:
            with contextlib.suppress(OSError):  # a child that died: its outcome says so
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def discard(self) -> None:
        """End a child that was never given its job, and close this process's ends."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.process.wait(5)
        self.close()

    def close(self) -> None:
        for name in ("job", "log", "control"):
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)


def start(job: Job | None, env: Mapping[str, str], *, cwd: Path | None, stdout: int,
          stderr: int) -> Started:
    """Start the measured process with ``job`` (None: the job follows, ``Started.send``).
    ``stdout`` and ``stderr`` are file descriptors or ``subprocess.PIPE``."""
    log_read, log_write = os.pipe()
    _enlarge(log_write)
    control_read, control_write = os.pipe()
    child_env = dict(env)
    child_env.pop(ENV, None)
    child_env.pop(JOB_FD_ENV, None)
    passed = [log_write, control_read]
    job_read = job_write = -1
    if job is None:
        job_read, job_write = os.pipe()
        passed.append(job_read)
        child_env[JOB_FD_ENV] = str(job_read)
    else:
        import msgspec

        child_env[ENV] = msgspec.json.encode(msgspec.structs.replace(
            job, log_fd=log_write, control_fd=control_read)).decode()
    try:
        process = subprocess.Popen(command(), pass_fds=passed, env=child_env, cwd=cwd,
                                   stdout=stdout, stderr=stderr, preexec_fn=_prepare_child)
    except BaseException:
        for fd in (log_read, control_write, job_write):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in passed:
            os.close(fd)
    return Started(process, log_read, control_write, job_write, (log_write, control_read))


def _enlarge(pipe: int) -> None:
    """Give ``pipe`` room for ``EVENTS_PIPE_BYTES``, where the system allows (Linux; a lower
    pipe-max-size, or a user over its pipe quota, keeps the default, and a full pipe then only
    makes the child wait for the supervisor's next read)."""
    if sys.platform.startswith("linux"):
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, EVENTS_PIPE_BYTES)


def _prepare_child() -> None:
    """In the child before it runs Python (``preexec_fn``; this process has no other thread).
    Ctrl-C and SIGTERM are ignored, so that Python installs no handler of its own for them
    during start-up (``process.child`` sets its handlers first thing); and on Linux the child is
    killed when this process dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
