"""Multi-process JAX: a real two-process ``jax.distributed`` job on CPU over the loopback
address, each process under ``recompile-cli run``; then ``merge`` of their reports, with and
without a divergence; and ``merge``'s checks that the reports belong to one run.

The job's processes are started by the test (``subprocess``), bounded in time, and killed if
they outlive the bound; the coordinator listens on a free port of 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from builders import ENV, f32_event, session
from helpers import SAMPLES
from jax_support import PRIVATE_HOOKS
from msgspec.structs import replace

from recompile_cli.capture.hosts.process import LAUNCHER_VARIABLES
from recompile_cli.session.files import load_session, save_session

SCRIPT = SAMPLES / "distributed_step.py"
TIMEOUT = 90  # seconds for the whole job; it takes about 2 s


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_job(folder: Path, *script_args: str, processes: int = 2,
            options: Sequence[str] = (), timeout: float = TIMEOUT
            ) -> list[tuple[int, str, str]]:
    """Run ``distributed_step.py`` as a job of ``processes`` processes, each under
    ``recompile-cli run`` with ``options``; (exit code, stdout, stderr) per process. A process
    still running after ``timeout`` seconds is killed and fails the test."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    env.update(JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    port = free_port()
    commands = [[sys.executable, "-m", "recompile_cli", "run", *options,
                 "--save", "reports/run-{process}.json",
                 "--events-log", "reports/events-{process}.jsonl",
                 str(SCRIPT), "--coordinator", f"127.0.0.1:{port}",
                 "--num-processes", str(processes), "--process-id", str(i), *script_args]
                for i in range(processes)]
    started = []
    try:
        for i, command in enumerate(commands):
            started.append(subprocess.Popen(  # the events log opens before the job starts:
                command, cwd=folder, env={**env, "JAX_PROCESS_ID": str(i)},  # its {process}
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + timeout
        results = []
        for process in started:
            out, err = process.communicate(timeout=max(deadline - time.monotonic(), 1))
            results.append((process.returncode, out, err))
        return results
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.communicate()


def finished_job(folder: Path, *script_args: str) -> Path:
    for code, out, err in run_job(folder, *script_args):
        assert code == 0, f"a process of the job failed:\n{out}\n{err}"
    return folder


@pytest.fixture(scope="module")
def same_job(tmp_path_factory) -> Path:
    """A job whose processes run the same steps on the same batch shapes."""
    return finished_job(tmp_path_factory.mktemp("same"))


def test_each_process_writes_its_own_report_tagged_with_its_place_in_the_job(same_job):
    for i in range(2):
        env = load_session(same_job / f"reports/run-{i}.json").environment
        assert (env.process_index, env.process_count, env.backend) == (i, 2, "cpu")
        assert env.host == socket.gethostname()
        # The events log opened before jax.distributed.initialize ran (its {process} came from
        # JAX_PROCESS_ID); its end record completes the environment the header lacked.
        log = load_session(same_job / f"reports/events-{i}.jsonl").environment
        assert (log.process_index, log.process_count, log.backend) == (i, 2, "cpu")


def test_merge_of_identical_processes_finds_no_divergence(same_job, cli, monkeypatch):
    monkeypatch.chdir(same_job)
    result = cli("merge", "reports/run-0.json", "reports/run-1.json", "--fail-on-divergence")
    assert result.exit_code == 0, result.stdout
    assert "(2 processes; jax" in result.stdout
    assert "Divergence: none" in result.stdout
    assert "Every process traced and compiled the same programs" in result.stdout
    [row] = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    assert row.split()[-1] == "yes"
    assert row.count("1 / 1 / ") == 2  # one trace and one compile on each process


def diverged_job(folder: Path) -> Path:
    """A job whose last process feeds half a batch at step 2. Its peers go on with a wrong
    loss, or every process waits in the mismatched collective (JAX 0.12.1 on CPU) until
    ``--timeout`` stops it; either way each process saves its report, and its compiles were
    recorded before the step ran."""
    for code, out, err in run_job(folder, "--diverge-at", "2", options=("--timeout", "40")):
        assert code == 0 or (code == 3 and "ran past --timeout 40 s" in out), (
            f"a process of the job failed:\n{out}\n{err}")
    return folder


def test_merge_reports_where_one_process_feeds_a_different_batch(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(diverged_job(tmp_path))
    result = cli("merge", "reports/run-0.json", "reports/run-1.json", "--fail-on-divergence",
                 "--save", "merged.json", "--output", "merge.json")
    print(result.stdout)  # the merge report, as a user reads it (pytest -s)
    assert result.exit_code == 1
    assert "differently across processes" in result.stdout
    assert "compiles: 1 on process 0; 2 on process 1" in result.stdout
    assert ("first differs at its 2nd trace or compile: no trace or compile on process 0; "
            "trace+compile on process 1") in result.stdout
    data = json.loads((tmp_path / "merge.json").read_text())
    # Public-only JAX (< 0.9) cannot tell JAX's functions from the user's: broadcast_in_dim of
    # the new batch diverges too.
    [divergence] = [d for d in data["divergences"] if d["name"] == "step"]
    assert (divergence["name"], divergence["at"], divergence["compiles"]) == (
        "step", 2, {"0": 1, "1": 2})
    if PRIVATE_HOOKS:  # signatures (argument values) need JAX's tracing hooks
        assert "Divergence: 1 function compiles differently across processes" in result.stdout
        # Global shapes (each process's rows times 2), with their sharding over the processes.
        [line] = [x for x in result.stdout.splitlines() if x.strip().startswith("batch['x']:")]
        assert line.strip().startswith("batch['x']: f32[64,8](")
        assert "(compiled before, not traced again) on process 0; f32[32,8](" in line
        assert line.endswith(" on process 1")
        assert divergence["aspects"] == ["compile count", "signatures", "causes"]
        assert [d["argument"] for d in divergence["differences"]] == ["batch['x']",
                                                                      "batch['y']"]
    # The merged session: every event tagged with its process, rendered by `report`, merged
    # again to the same divergence.
    merged = load_session(tmp_path / "merged.json")
    assert [p.index for p in merged.processes] == [0, 1]
    assert {e.process for e in merged.events} == {0, 1}
    for fmt in ("table", "json", "html", "csv", "chrome-trace", "markdown"):
        assert cli("report", "merged.json", "--format", fmt).exit_code == 0, fmt
    html = cli("report", "merged.json", "--format", "html").stdout
    assert "process 0: step" in html and "process 1: step" in html  # one timeline lane each
    merged_report = json.loads(cli("report", "merged.json", "--format", "json").stdout)
    firsts = [e["cause"]["code"] for e in merged_report["events"]
              if e["function"] == "step" and e["compiled"]]
    assert firsts[0] == "first_compile" and firsts.count("first_compile") == 2  # per process
    again = cli("merge", "merged.json", "--format", "json")
    assert json.loads(again.stdout)["divergences"] == data["divergences"]


# -- the checks on what is merged (hand-made sessions, no JAX job) -------------------------------
def _save(folder: Path, name: str, index: int | None, count: int | None = 2, n: int = 3,
          **environment) -> str:
    env = replace(ENV, process_index=index, process_count=count, host=f"node{index}",
                  **environment)
    path = folder / name
    save_session(replace(session([f32_event(0, "step", n=n, defined_at="/a/train.py:5")],
                                 target="train.py --lr 1"), environment=env), path)
    return str(path)


def test_merge_finds_the_first_different_signature(cli, tmp_path):
    paths = [_save(tmp_path, f"r{i}.json", i, count=3, n=16 if i == 2 else 32)
             for i in range(3)]
    result = cli("merge", *paths, "--format", "markdown")
    assert result.exit_code == 0  # a divergence fails only with --fail-on-divergence
    assert ("- **step (/a/train.py:5)**: signatures differ; compiles: 1 on processes 0, 1, 2"
            in result.stdout)
    assert "first differs at its 1st trace or compile" in result.stdout
    assert "  - x: f32[32] on processes 0, 1; f32[16] on process 2" in result.stdout


def test_merge_refuses_reports_of_different_runs(cli, tmp_path):
    one, two = _save(tmp_path, "a.json", 0), _save(tmp_path, "b.json", 0)
    result = cli("merge", one, two)
    assert result.exit_code == 2
    assert f"{one} and {two} are both process 0: they come from different runs" in result.stderr
    three = _save(tmp_path, "c.json", 1, count=4)
    result = cli("merge", one, three)
    assert result.exit_code == 2
    assert "jobs of different sizes (process_count 2 in" in result.stderr


def test_merge_notes_versions_and_missing_processes(cli, tmp_path):
    one = _save(tmp_path, "a.json", 0, count=3)
    two = _save(tmp_path, "b.json", 2, count=3, jax_version="0.9.0")
    result = cli("merge", one, two)
    assert result.exit_code == 0
    assert "(2 processes of 3; jax 0.10.2, cpu)" in result.stdout
    assert "the reports of process(es) 1 of the 3 in the job are missing" in result.stdout
    assert ("the processes ran with different jax versions (0.10.2 on process 0; 0.9.0 on "
            "process 2)") in result.stdout


def test_process_and_host_in_output_paths_of_a_single_process_run(cli, program, tmp_path,
                                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RANK", "5")  # only the events log, opened before the run, reads it
    script = program("one", "import jax\njax.jit(lambda x: x + 1)(1.0)\n")
    result = cli("run", "--save", "out/run-{process}-{host}.json",
                 "--events-log", "out/events-{process}.jsonl", script)
    assert result.exit_code == 0
    saved = tmp_path / "out" / f"run-0-{socket.gethostname()}.json"
    assert load_session(saved).environment.process_index is None  # not a multi-process job
    assert (tmp_path / "out" / "events-5.jsonl").exists()
