"""``run --check-hosts``: a real two-process ``jax.distributed`` job on CPU (gloo collectives,
one global batch, one jitted step reducing over it) is stopped on every process at the compile
where the processes part, before the step runs; the identical job runs to its end.

The jobs are those of ``test_multiprocess`` (``run_job``: 127.0.0.1, a free port, bounded in
time, killed if they outlive the bound). A job that diverges at step 2 is the hard case: only
process 1 compiles, process 0 runs its cached step and waits in the collective.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_multiprocess
from helpers import SAMPLES
from jax_support import PRIVATE_HOOKS, requires_private_hooks
from test_multiprocess import SCRIPT, free_port, run_job

from recompile_cli.capture.hosts.process import LAUNCHER_VARIABLES
from recompile_cli.session.files import load_session

CHECK = ("--check-hosts", "--host-timeout", "20")
BOUND = 60  # seconds for the whole job, startup included


def stopped(folder: Path, results: list[tuple[int, str, str]]) -> list[str]:
    """Each process's message, after checking that every process exited 3, ran step 1, never
    printed a step-2 result, and wrote its report with the message as the failure."""
    messages = []
    for i, (code, out, err) in enumerate(results):
        assert code == 3, f"process {i}:\n{out}\n{err}"
        assert f"process {i} of 2: step 1 loss" in out
        assert "step 2 loss" not in out, out
        failure = load_session(folder / f"reports/run-{i}.json").target_exception
        assert failure is not None and "recompile-cli --check-hosts: " in failure
        assert failure in out  # the report printed names it
        messages.append(failure)
    return messages


@requires_private_hooks  # which programs span processes is read from the lowering
def test_a_process_that_compiles_alone_stops_every_process(tmp_path):
    messages = stopped(tmp_path, run_job(tmp_path, "--diverge-at", "2", options=CHECK,
                                         timeout=BOUND))
    for message in messages:  # process 1 waited for process 0, which ran its cached step
        assert ("process 1 compiled a new program of step (" in message
                and "at its 2nd checked compile of step, and process 0 compiled nothing "
                    "within 20 s (--host-timeout): process 0 still runs the program of step "
                    "compiled before." in message), message
        if PRIVATE_HOOKS:  # the global shapes of both processes
            assert "step: batch['x'] is f32[64,8](" in message
            assert ") on process 0 and f32[32,8](" in message
            assert ") on process 1." in message


@requires_private_hooks  # which programs span processes is read from the lowering
def test_processes_that_compile_different_programs_stop_at_once(tmp_path):
    results = run_job(tmp_path, "--diverge-at", "1", options=CHECK, timeout=BOUND)
    for i, (code, out, err) in enumerate(results):
        assert code == 3, f"process {i}:\n{out}\n{err}"
        assert "step 1 loss" not in out
        message = load_session(tmp_path / f"reports/run-{i}.json").target_exception
        assert message is not None and message in out
        assert ("the processes compiled different programs of step (" in message
                and "at their 1st checked compile." in message), message
        if PRIVATE_HOOKS:
            assert "step: batch['x'] is f32[64,8](" in message
            assert ") on process 0 and f32[32,8](" in message


def test_the_identical_job_runs_every_step(tmp_path):
    for i, (code, out, err) in enumerate(run_job(tmp_path, options=CHECK, timeout=BOUND)):
        assert code == 0, f"process {i}:\n{out}\n{err}"
        for step in (1, 2, 3):
            assert f"process {i} of 2: step {step} loss" in out
        assert load_session(tmp_path / f"reports/run-{i}.json").target_exception is None


@pytest.mark.skipif(PRIVATE_HOOKS, reason="public-only mode only (JAX < 0.9)")
def test_without_the_private_hooks_the_check_says_it_checked_nothing(tmp_path):
    """Public-only mode cannot tell which programs span processes: the diverging job runs as
    without the flag, and every report says that nothing was checked, rather than pass quietly."""
    for i, (code, out, err) in enumerate(run_job(tmp_path, "--diverge-at", "2", options=CHECK,
                                                 timeout=BOUND)):
        assert code == 0, f"process {i}:\n{out}\n{err}"
        warnings = load_session(tmp_path / f"reports/run-{i}.json").warnings
        assert any("--check-hosts checked nothing" in w for w in warnings), warnings
        assert "--check-hosts checked nothing" in out

@requires_private_hooks  # which programs span processes is read from the lowering
def test_the_guard_raises_from_the_call_that_compiled_on_every_process(tmp_path):
    """``RECOMPILE_CLI_GUARD=...,check_hosts=N python -m recompile_cli.guards``: the job's
    processes compile different programs at their first step; each raises ``HostsDiverged``."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    env.update(JAX_PLATFORMS="cpu", RECOMPILE_CLI_GUARD="warn:100,check_hosts=20")
    port = free_port()
    jobs = [subprocess.Popen(
        [sys.executable, "-m", "recompile_cli.guards", str(SCRIPT), "--coordinator",
         f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i), "--diverge-at",
         "1"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(2)]
    try:
        results = [job.communicate(timeout=BOUND) for job in jobs]
    finally:
        for job in jobs:
            if job.poll() is None:
                job.kill()
                job.communicate()
    for job, (out, err) in zip(jobs, results, strict=True):
        assert job.returncode != 0 and "loss" not in out, out
        assert ("HostsDiverged: recompile-cli --check-hosts: the processes compiled different "
                "programs of step (") in err, err[-3000:]


# The reviewer's case: process 0 alone runs a jitted metrics helper (two programs of it) on
# arrays of its own after step 1. Those programs run on process 0's device only, so they are
# not exchanged: the job runs to its end.
LOCAL_HELPER = f"""
import sys
sys.path.insert(0, {str(SAMPLES)!r})
import jax, jax.numpy as jnp, numpy as np
import distributed_step

metrics = jax.jit(lambda x: jnp.sum(x * x))
shared_step = distributed_step.step

def step(params, batch):
    loss = shared_step(params, batch)
    if jax.process_index() == 0:
        for n in (3, 4):
            print("local-metric", float(metrics(np.ones(n, np.float32))), flush=True)
    return loss

distributed_step.step = step
distributed_step.main()
"""


@requires_private_hooks  # which programs span processes is read from the lowering
def test_a_program_that_only_one_process_compiles_on_its_own_devices_stops_nothing(
        tmp_path, monkeypatch):
    script = tmp_path / "with_metrics.py"
    script.write_text(LOCAL_HELPER)
    monkeypatch.setattr(test_multiprocess, "SCRIPT", script)
    results = run_job(tmp_path, options=CHECK, timeout=BOUND)
    for i, (code, out, err) in enumerate(results):
        assert code == 0, f"process {i}:\n{out}\n{err}"
        for step in (1, 2, 3):
            assert f"process {i} of 2: step {step} loss" in out
        assert ("local-metric" in out) == (i == 0)
        session = load_session(tmp_path / f"reports/run-{i}.json")
        assert session.target_exception is None
        assert not any("check-hosts" in w for w in session.warnings)
        helper = [e for e in session.events if e.compiled and "lambda" in e.function]
        assert len(helper) == (2 if i == 0 else 0)  # compiled, and checked against no one


def test_host_timeout_is_checked_and_needs_check_hosts(cli, program, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = program("one", "print('ran')\n")
    for flags, words in [(("--host-timeout", "5"), "pass --check-hosts too"),
                         (("--check-hosts", "--host-timeout", "inf"), "--host-timeout=inf"),
                         (("--check-hosts", "--host-timeout", "1e308"), "at most 86400"),
                         (("--check-hosts", "--host-timeout", "0"), "above 0")]:
        result = cli("run", *flags, script)
        assert result.exit_code == 2, (flags, result.stdout)
        assert words in result.stdout + result.stderr and "Traceback" not in result.stdout
        assert "ran" not in result.stdout  # refused before the script runs


def test_a_single_process_records_the_same_events_as_without_the_check(cli, program, tmp_path,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = program("one", "import jax\nf = jax.jit(lambda x: x + 1)\nf(1.0)\nf(2)\n"
                     "g = jax.jit(lambda x: x * 2)\ng(1.0)\n")
    shown = {}
    for name, flags in (("plain", ()), ("checked", CHECK)):
        result = cli("run", *flags, "--format", "json", "--output", f"{name}.json", script)
        assert result.exit_code == 0, result.stdout
        assert "check-hosts" not in (tmp_path / f"{name}.json").read_text()
        session = load_session(tmp_path / f"{name}.json")
        shown[name] = [(e.function, e.traced, e.compiled, e.signature and e.signature.describe())
                       for e in session.events]
    assert len([e for e in shown["plain"] if e[2]]) >= 3  # f twice, g once
    assert shown["checked"] == shown["plain"]


def test_a_job_that_leaves_shutdown_to_jaxs_exit_handler_ends_cleanly_every_time(tmp_path):
    """The check's watcher waits in JAX's native key-value store; it is stopped and joined
    before JAX's exit handler shuts the distributed client down (which used to abort the
    process: exit 134, ``FATAL: exception not rethrown``)."""
    for run in range(5):
        folder = tmp_path / f"run-{run}"
        folder.mkdir()
        results = run_job(folder, "--leave-shutdown-to-jax", options=CHECK, timeout=BOUND)
        for i, (code, out, err) in enumerate(results):
            assert code == 0, f"run {run}, process {i}:\n{out}\n{err}"
            assert "exception not rethrown" not in err
            assert load_session(folder / f"reports/run-{i}.json").target_exception is None


@requires_private_hooks  # the wait happens only at a checked compile
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_a_host_wait_ends_it_within_a_second_with_its_code(tmp_path, sig, code):
    """Process 1 compiles step 2 alone and waits (up to --host-timeout 60 s) for process 0,
    which never compiles it; a signal to process 1 ends the wait at once, with the report."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    env.update(JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    port = free_port()
    jobs = [subprocess.Popen(
        [sys.executable, "-m", "recompile_cli", "run", "--check-hosts", "--host-timeout", "60",
         "--save", f"run-{i}.json", str(SCRIPT), "--coordinator", f"127.0.0.1:{port}",
         "--num-processes", "2", "--process-id", str(i), "--diverge-at", "2"],
        cwd=tmp_path, env={**env, "JAX_PROCESS_ID": str(i)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        waiting = jobs[1]
        assert waiting.stdout is not None
        for line in waiting.stdout:
            if "step 1 loss" in line:
                break
        time.sleep(3)  # step 2: process 1 compiles alone and waits for process 0
        waiting.send_signal(sig)
        signalled = time.monotonic()
        out, err = waiting.communicate(timeout=BOUND)
        ended = time.monotonic() - signalled
    finally:
        for job in jobs:
            if job.poll() is None:
                job.kill()
            job.communicate()
    assert waiting.returncode == code, out + err
    assert ended < 5, ended  # within a second of the signal, plus the report's own time
    assert "step 2 loss" not in out and "Traceback" not in err
    session = load_session(tmp_path / "run-1.json")
    assert session.target_exception is not None
    assert any(e.function == "step" and e.compiled for e in session.events)
