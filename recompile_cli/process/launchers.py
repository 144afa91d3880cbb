"""How a job's measured process is started: the one seam that the CLI, the API and the tests use.
A ``Launcher`` returns a ``spawn.Started`` that ``supervisor.supervise`` reads the same way
whatever started it. ``Subprocess`` (``DEFAULT``, the only one the CLI uses) runs the job in a
process of its own, the only way to keep the verdict out of the program's reach; ``InProcess``
runs it in this interpreter (tests) and isolates nothing. Never prints, never imports JAX.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

from recompile_cli.process import prestart, spawn
from recompile_cli.process.job import Job
from recompile_cli.session.events_log import EventLog


class Launcher(Protocol):
    """Starts the measured process of ``job`` with ``env`` in ``cwd`` (None: this folder);
    ``stdout`` and ``stderr`` are file descriptors or ``subprocess.PIPE``."""

    def start(self, job: Job, env: Mapping[str, str], *, cwd: Path | None, stdout: int,
              stderr: int) -> spawn.Started: ...


class Subprocess:
    """A process of its own for each job: the one waiting already (``prestart``) when it
    serves the job, else a new one. With ``spare_env``, a process started with that
    environment waits for the next job as each job starts, so that the next run does not wait
    for Python to start and import the recorder (a test session's runs)."""

    def __init__(self, spare_env: Mapping[str, str] | None = None) -> None:
        self.spare_env = dict(spare_env) if spare_env is not None else None

    def start(self, job: Job, env: Mapping[str, str], *, cwd: Path | None, stdout: int,
              stderr: int) -> spawn.Started:
        child = prestart.take(env, cwd=cwd) or spawn.start(env)
        child.send(job, env, cwd=cwd, stdout=stdout, stderr=stderr)
        if self.spare_env is not None:
            prestart.ahead(self.spare_env)
        return child


class InProcess:
    """Runs each job in this interpreter, through the same recording (``child.record``) and
    stream reader, for what a report says (tests): it isolates nothing a process would (signals,
    ``os._exit``, the interpreter's state). A job that needs a process of its own
    (``--check-hosts``, a persistent compilation cache) goes to ``fallback``. The job's output
    goes to this interpreter's ``sys.stdout`` and ``sys.stderr`` as they are."""

    def __init__(self, fallback: Launcher | None = None) -> None:
        self.fallback = fallback or Subprocess()

    def start(self, job: Job, env: Mapping[str, str], *, cwd: Path | None, stdout: int,
              stderr: int) -> spawn.Started:
        if job.host_timeout is not None or job.compilation_cache is not None:
            return self.fallback.start(job, env, cwd=cwd, stdout=stdout, stderr=stderr)
        # The recorder: only the in-process launcher loads it into the supervisor's process.
        from recompile_cli.process import child

        with tempfile.TemporaryFile() as stream:
            log = EventLog(fd=os.dup(stream.fileno()))
            with _isolated(cwd), _output(job.stdout_to_stderr):
                child.record(job, log)  # an interruption is in its end record
            log.close()
            read = os.dup(stream.fileno())
        os.lseek(read, 0, os.SEEK_SET)
        return spawn.Started(spawn.Ran(), read, -1)


@contextlib.contextmanager
def _isolated(cwd: Path | None) -> Iterator[None]:
    """Run in ``cwd``, and forget afterwards the modules the run imported from outside the
    installed environment (the target's own modules), as a new process would not have them."""
    before = set(sys.modules)
    folder = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(folder)
        installed = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
        for name in set(sys.modules) - before:
            file = getattr(sys.modules.get(name), "__file__", None)
            if (file and not str(file).startswith(installed)
                    and not name.startswith("recompile_cli")):
                del sys.modules[name]


@contextlib.contextmanager
def _output(stdout_to_stderr: bool) -> Iterator[None]:
    """The target's prints go to stderr when the report goes to stdout (``Job``)."""
    if not stdout_to_stderr:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


DEFAULT: Launcher = Subprocess()
