"""The measured process of a supervised run (``python -m recompile_cli.process.child``): it takes
its ``Job`` over a socket (``process.spawn``), then its folder and environment, imports JAX only
then, runs the target under the recorder (``capture.running.runner``) and streams the events log
down the pipe (``session.events_log``). It prints nothing of its own and decides nothing: the
supervisor reports what reached the pipe. After an interruption or a ``--check-hosts`` stop it
ends at once (no interpreter shutdown, where JAX's native threads may still run).
"""

from __future__ import annotations

import io
import os
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from recompile_cli import exits
from recompile_cli.capture.running import runner
from recompile_cli.errors import RecompileError
from recompile_cli.process.job import Job
from recompile_cli.process.spawn import JOB_FD_ENV
from recompile_cli.session.events_log import EventLog
from recompile_cli.session.model import Event, HookMode, Outcome, Session

if TYPE_CHECKING:
    from recompile_cli.capture.hosts.host_check import HostCheck
    from recompile_cli.inputs.spec import Spec


def main() -> None:
    """The measured process: take the job, record it down the events pipe, and end."""
    exits.defer_signals()
    job = _job()
    os.set_inheritable(job.log_fd, False)
    if job.stdout_to_stderr:
        os.dup2(2, 1)
    log = EventLog(fd=job.log_fd)
    stop = _StopRequests(job.control_fd)
    hosts = _host_check(job, log, stop) if job.host_timeout is not None else None
    try:
        interrupted = record(job, log, hosts)
    except exits.INTERRUPTIONS as exc:  # before the target started: the supervisor knows why
        exits.hard_exit(exits.interruption_code(exc))
    if hosts is not None and hosts.stopped is not None:
        hosts.leave(int(exits.ExitCode.TARGET_RAISED))  # ends the process
    if interrupted is not None:
        exits.hard_exit(interrupted)


def record(job: Job, log: EventLog, hosts: HostCheck | None = None) -> int | None:
    """Run ``job`` under the recorder and stream it to ``log``, its end record (or ``refused``
    record) last; returns the exit code of an interruption that stopped the target, if one did.
    This process's ``main``, and the in-process launcher (``process.launchers``), both run it.

    Raises:
        KeyboardInterrupt, exits.Terminated: before the target started.
    """
    try:
        outcome, events = _run(job, log, hosts)
    except RecompileError as exc:  # a target that cannot be loaded: nothing ran
        log.refused(str(exc), int(exc.exit_code))
        return None
    if hosts is not None:
        outcome = _hosts_verdict(hosts, outcome)
    log.end(outcome.session, outcome.interrupted, outcome.traceback, events)
    return outcome.interrupted


def _job() -> Job:
    """The job, from the socket it is handed on (``spawn.Started.send``) once the recorder is
    imported, with the standard streams to run it with; this process then takes the job's
    folder and environment. A socket closed without a job (the command stopped before
    its run) ends this process: nothing of a target ran."""
    fd = os.environ.pop(JOB_FD_ENV, None)
    if fd is None:
        print("recompile_cli.process.child is the measured process of `recompile-cli run`, "
              "`profile`, `check` and `forecast`; it is not run by hand.", file=sys.stderr)
        raise SystemExit(2)
    with socket.socket(fileno=int(fd)) as sock:
        first, streams, _, _ = socket.recv_fds(sock, 1 << 16, 3)
        chunks = [first]
        while first and (chunk := sock.recv(1 << 16)):
            chunks.append(chunk)
    if not first:
        os._exit(0)
    job = msgspec.json.decode(b"".join(chunks), type=Job)
    _take(job, streams)
    return job


def _take(job: Job, streams: list[int]) -> None:
    """Run as the job says: its standard streams (stdin first when there are three), folder
    and environment."""
    for target, fd in zip((0, 1, 2)[3 - len(streams):], streams, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    if isinstance(sys.stdout, io.TextIOWrapper):  # buffered by lines on a terminal only,
        sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())  # as Python starts it
    if job.cwd is not None:
        os.chdir(job.cwd)
    if job.env is not None:
        os.environ.clear()
        os.environ.update(job.env)


def _run(job: Job, log: EventLog, hosts: HostCheck | None
         ) -> tuple[Outcome, tuple[Event, ...] | None]:
    """Run the target; returns its outcome and, for a forecast, its final (predicted) events."""
    if job.compilation_cache:
        runner.use_compilation_cache(job.compilation_cache)
    options = runner.RunOptions(HookMode(job.hook_mode), events_log=log,
                                count_calls=job.count_calls, host_check=hosts,
                                after_warmup=Path(job.after_warmup) if job.after_warmup else None,
                                warmup_parallel=job.warmup_parallel, module=job.module)
    if job.kind == "script":
        return runner.run_script(job.target, list(job.script_args), options), None
    spec = _spec(job.spec, job, job.spec_option)
    jit_options = {k: tuple(v) if isinstance(v, list) else v
                   for k, v in job.jit_options.items()}
    if job.kind == "profile":
        return runner.profile(job.target, spec, jit_options, job.no_jit,
                              job.keep_going, options), None
    return _forecast(job, spec, jit_options, options)


def _forecast(job: Job, spec: Spec, jit_options: dict[str, Any],
              options: runner.RunOptions) -> tuple[Outcome, tuple[Event, ...]]:
    """``forecast``: the calls (the warm-up's first) traced on abstract arguments, their traces
    turned into predicted compiles, and the warm-up's coverage in the warnings."""
    # Only a forecast needs these (~0.1 s); every child imports its top before its job comes.
    from recompile_cli.analysis.report import build_report
    from recompile_cli.analysis.warmup.coverage import coverage_notes
    from recompile_cli.inputs.spec import after_warmup

    warm = _spec(job.warmup, job, "--warmup") if job.warmup else None
    calls = after_warmup(warm, spec)
    # It imports JAX: only once both specs are read, as the runner would.
    from recompile_cli.capture.running.forecast import Forecaster, forecast_session, spec_array

    forecaster = Forecaster(job.lower)
    outcome = runner.profile(job.target, calls, jit_options, False, job.keep_going,
                             replace(options, invoke=forecaster, spec_array=spec_array))
    session = forecast_session(outcome.session, forecaster, calls)
    if warm is not None and warm.cases:
        notes = coverage_notes(session, build_report(session).causes,
                               [c.label for c in calls.cases], len(warm.cases))
        session = msgspec.structs.replace(session, warnings=(*session.warnings, *notes))
    return msgspec.structs.replace(outcome, session=session), session.events


def _spec(path: str | None, job: Job, option: str) -> Spec:
    from recompile_cli.inputs.spec import load_spec, single_call  # PyYAML: specs only, not `run`

    if path is None:
        return single_call()
    limits = {k: v for k, v in (("max_array_bytes", job.max_array_bytes),
                                ("max_calls", job.max_calls)) if v is not None}
    return load_spec(path, **limits, option=option)


def _host_check(job: Job, log: EventLog, stop: _StopRequests) -> HostCheck:
    """``--check-hosts``: the exchange of ``capture.hosts.host_check`` with the messages of
    ``analysis.hosts.mismatch``. A process a peer stopped while it waits in a collective ends
    from the check's watcher, its end record written first; a wait for the peers' compiles
    ends as soon as the supervisor asks for a stop (``_StopRequests``)."""
    # Only --check-hosts needs these (~0.05 s); every child imports its top before its job comes.
    from recompile_cli.analysis.hosts import mismatch
    from recompile_cli.capture.hosts.host_check import HostCheck
    from recompile_cli.render.escape import terminal

    assert job.host_timeout is not None

    def stopped(session: Session, failure: str) -> int:
        log.end(msgspec.structs.replace(session, target_exception=failure))
        return int(exits.ExitCode.TARGET_RAISED)

    return HostCheck(job.host_timeout, mismatch.mismatch, mismatch.missing, stopped,
                     shown=terminal, interrupted=stop)


class _StopRequests:
    """The supervisor's requests to stop, read without blocking: a signal it passed on may
    never reach Python here (JAX's preemption notifier takes SIGTERM in native code once
    ``jax.distributed`` is initialized), so code of ours that waits asks this too."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.code: int | None = None
        if fd >= 0:
            os.set_inheritable(fd, False)
            os.set_blocking(fd, False)

    def __call__(self) -> int | None:
        if self._fd >= 0 and self.code is None:
            try:
                data = os.read(self._fd, 16)
            except OSError:  # nothing asked (BlockingIOError), or the supervisor is gone
                data = b""
            if data:
                self.code = data[0]
        return self.code


def _hosts_verdict(hosts: HostCheck, outcome: Outcome) -> Outcome:
    """The outcome once the run ended: when the check stopped the job, its message is the
    run's failure. When the check's watcher is ending the process already, wait for it."""
    if not hosts.claim():
        while True:
            time.sleep(1)
    message = hosts.notice() if outcome.failure is not None else hosts.stopped
    hosts.stopped = message
    if message is None or (outcome.failure is not None and message in outcome.failure):
        return outcome
    return msgspec.structs.replace(outcome, failure=message, traceback=None,
                                   session=msgspec.structs.replace(outcome.session,
                                                                   target_exception=message))


if __name__ == "__main__":
    main()
