"""Starting the measured process (``process.child``): its command line, its pipes (events,
stop requests) and job socket, the signal state it starts in (Ctrl-C and SIGTERM ignored until
it sets its handlers; on Linux killed when this process dies), and handing it its job
(``Started.send``) or ending it unused (``Started.discard``). Imported first by the console
script: it must import nothing a bare interpreter does not need to start a process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
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
    from typing import IO, Any, Protocol

    from recompile_cli.process.job import Job

    class Process(Protocol):
        """What the supervisor uses of a measured process (``subprocess.Popen``'s)."""

        @property
        def pid(self) -> int | None: ...

        def poll(self) -> int | None: ...

        def wait(self, timeout: float | None = None) -> int: ...

        def send_signal(self, sig: int) -> None: ...

        def terminate(self) -> None: ...

        def kill(self) -> None: ...

# The socket the job comes on (``process.child`` reads it): its descriptor in the child.
JOB_FD_ENV = "RECOMPILE_CLI_CHILD_JOB_FD"
# The variables a waiting child must have been started with to serve a job (``Started.serves``):
# those that Python reads as it starts (PYTHONPATH, PYTHONHASHSEED, ...; HOME for the user's
# site folder) and that JAX, XLA and the native libraries they load read at import. The others
# are the job's: the child takes the job's environment whole before the target runs.
STARTUP = ("PYTHON", "JAX_", "XLA_", "TF_", "TPU_", "LIBTPU", "CUDA", "NVIDIA_", "ROCR_",
           "ROCM", "HIP_", "NCCL_", "LD_", "MALLOC_", "OMP_", "OPENBLAS_", "MKL_", "NPY_",
           "HOME")
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


# The C library, for ``prctl`` on Linux (loaded before any fork: ``_prepare_child`` runs between
# fork and exec, where nothing may be imported); None elsewhere.
_LIBC: Any = None
if sys.platform.startswith("linux"):
    import fcntl  # for _enlarge

    try:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        pass


def command() -> list[str]:
    """The measured process's command line."""
    return [sys.executable, "-c", BOOTSTRAP.format(root=ROOT)]


class Ran:
    """A job that ran in this interpreter (``launchers.InProcess``) and has ended: a process
    that has no id and nothing left to stop."""

    pid: int | None = None

    def __init__(self, returncode: int = 0) -> None:
        self.returncode = returncode

    def poll(self) -> int:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        pass

    def terminate(self) -> None:
        pass

    def kill(self) -> None:
        pass


class Started:
    """A measured process and this process's ends of its pipes: the events stream (``log``),
    the stop requests (``control``), the job socket until the job is sent (``job``), and the
    child's output where this process relays it (``stdout``, ``stderr``: a pipe's read end)."""

    def __init__(self, process: Process, log: int, control: int, job: socket.socket | None = None,
                 child_fds: tuple[int, int] = (-1, -1), env: Mapping[str, str] | None = None,
                 cwd: str = "") -> None:
        self.process = process
        self.log = log
        self.control = control
        self.job = job
        self.child_fds = child_fds  # the child's numbers of the events and stop pipes
        self.env = dict(env or {})  # what the child was started with
        self.cwd = cwd
        self.stdout: IO[bytes] | None = None
        self.stderr: IO[bytes] | None = None

    def serves(self, env: Mapping[str, str], cwd: Path | None) -> bool:
        """Whether this waiting child can run a job with ``env`` in ``cwd``: it still waits,
        and it started with the same start-up variables (a relative entry of PYTHONPATH was
        resolved against the folder it started in: that folder too)."""
        if self.job is None or self.process.poll() is not None:
            return False
        if _startup(env) != _startup(self.env):
            return False
        relative = any(entry and not os.path.isabs(entry)
                       for entry in env.get("PYTHONPATH", "").split(os.pathsep))
        return not relative or os.path.abspath(cwd or os.getcwd()) == self.cwd

    def send(self, job: Job, env: Mapping[str, str], *, cwd: Path | None, stdout: int,
             stderr: int) -> None:
        """Hand this waiting child ``job`` (once), to run in ``cwd`` (None: this folder) with
        ``env`` and this process's standard input; ``stdout`` and ``stderr`` are file
        descriptors, or ``subprocess.PIPE`` to relay them (``Started.stdout``, ``stderr``)."""
        import msgspec  # prestart: the child starts before msgspec loads (see above)

        sock, self.job = self.job, None
        assert sock is not None, "a measured process takes one job"
        streams = [self._stream(stdout, "stdout"), self._stream(stderr, "stderr")]
        if _valid(0):
            streams.insert(0, 0)
        data = msgspec.json.encode(msgspec.structs.replace(
            job, log_fd=self.child_fds[0], control_fd=self.child_fds[1],
            cwd=os.path.abspath(cwd or os.getcwd()),
            env={k: v for k, v in env.items() if k != JOB_FD_ENV}))
        try:
            with contextlib.suppress(OSError):  # a child that died: its outcome says so
                socket.send_fds(sock, [data[:1]], streams)
                sock.sendall(data[1:])
        finally:
            sock.close()
            for fd, wanted in zip(streams[-2:], (stdout, stderr), strict=True):
                if wanted == subprocess.PIPE:
                    os.close(fd)  # the child holds the write end now

    def _stream(self, target: int, name: str) -> int:
        """The descriptor to hand the child for one output stream (a pipe's write end when it
        is relayed: its read end is kept as ``self.<name>``)."""
        if target != subprocess.PIPE:
            return target
        read, write = os.pipe()
        setattr(self, name, open(read, "rb", buffering=0))  # noqa: SIM115 - the supervisor's
        return write

    def discard(self) -> None:
        """End a child that was never given its job, and close this process's ends."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.process.wait(5)
        self.close()

    def close(self) -> None:
        if self.job is not None:
            self.job.close()
            self.job = None
        for pipe in (self.stdout, self.stderr):  # closed already once the stream is read
            if pipe is not None:
                pipe.close()
        for name in ("log", "control"):
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)


def start(env: Mapping[str, str]) -> Started:
    """Start a measured process with ``env``, in this folder, waiting for its job
    (``Started.send``)."""
    log_read, log_write = os.pipe()
    _enlarge(log_write)
    control_read, control_write = os.pipe()
    parent, child = socket.socketpair()
    child_env = dict(env)
    child_env[JOB_FD_ENV] = str(child.fileno())
    passed = [log_write, control_read, child.fileno()]
    try:
        process = subprocess.Popen(command(), pass_fds=passed, env=child_env,
                                   preexec_fn=_prepare_child)
    except BaseException:
        for fd in (log_read, control_write):
            os.close(fd)
        parent.close()
        raise
    finally:
        for fd in passed[:2]:
            os.close(fd)
        child.close()
    return Started(process, log_read, control_write, parent, (log_write, control_read), env,
                   os.getcwd())


def _startup(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP) and k != JOB_FD_ENV}


def _valid(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _enlarge(pipe: int) -> None:
    """Give ``pipe`` room for ``EVENTS_PIPE_BYTES``, where the system allows (Linux; a lower
    pipe-max-size, or a user over its pipe quota, keeps the default, and a full pipe then only
    makes the child wait for the supervisor's next read)."""
    if sys.platform.startswith("linux"):
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
