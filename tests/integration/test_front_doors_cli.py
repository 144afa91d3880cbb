"""The command line's front doors under hostile use (issue 19): file-path options checked
before anything runs, an endless spec file, ``merge`` of one file by two paths, signals while
the tool itself starts or finishes, and a script that forks while it is recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

STEP = """
import jax, jax.numpy as jnp
from pathlib import Path
Path(__file__).with_name("ran").write_text("yes")

@jax.jit
def step(x):
    return jnp.tanh(x) * 2

step(jnp.ones(3))
step(jnp.ones(4))
"""


@pytest.fixture
def prog(program):
    return program("prog", STEP)


def _ran(prog) -> bool:
    return prog.with_name("ran").exists()


# -- 1. file-path options, checked before the run -------------------------------------------------
@pytest.mark.parametrize("option", ["-o", "--output", "--events-log", "--save", "--junit-xml",
                                    "--save-baseline"])
def test_an_empty_path_is_refused_before_the_run(cli, prog, option):
    result = cli("run", option, "", prog)
    assert result.exit_code == 2 and not _ran(prog)
    assert "the path is empty" in result.output and option in result.output


def test_a_folder_for_a_report_that_is_not_csv_is_refused_before_the_run(cli, prog, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    result = cli("run", "-f", "json", "-o", folder, prog)
    assert result.exit_code == 2 and not _ran(prog)
    assert "--output" in result.output and "it is a folder" in result.output


def test_a_path_below_a_file_is_refused_before_the_run(cli, prog, tmp_path):
    (tmp_path / "afile").write_text("")
    for option in ("--output", "--save", "--events-log", "--junit-xml"):
        result = cli("run", option, tmp_path / "afile" / "x.json", prog)
        assert result.exit_code == 2 and not _ran(prog), option
        assert option in result.output and "is a file, not a folder" in result.output


@pytest.mark.parametrize("command", [["report", "S", "-o", ""], ["report", "S", "-f", "json",
                                      "-o", "DIR"], ["merge", "S", "-o", ""],
                                     ["merge", "S", "--save", ""],
                                     ["merge", "S", "-f", "json", "-o", "DIR"],
                                     ["check", "--junit-xml", "", "B"],
                                     ["check", "--save-baseline", "", "B"]])
def test_every_command_that_writes_files_checks_its_paths(cli, tmp_path, command):
    saved = tmp_path / "s.json"
    saved.write_text(json.dumps({"schema_version": 1, "environment": {
        "jax_version": "0.10.2", "python_version": "3.11", "backend": "cpu",
        "hook_mode": "private"}, "target": "p.py", "events": [], "wall_seconds": 0.1}))
    (tmp_path / "dir").mkdir()
    swap = {"S": str(saved), "DIR": str(tmp_path / "dir"), "B": str(tmp_path / "b.yaml")}
    result = cli(*[swap.get(part, part) for part in command])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_an_endless_spec_file_is_refused_by_the_size_cap(program, tmp_path):
    program("mod", "def f():\n    return 1\n")
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "profile", "mod.py:f",
                           "--args", "/dev/zero"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "/dev/zero" in proc.stderr and "more than the limit" in proc.stderr


# -- 4. merge: one file by two paths --------------------------------------------------------------
def test_merge_of_one_file_by_two_paths_is_refused(cli, prog, tmp_path, monkeypatch):
    saved = tmp_path / "g.json"
    assert cli("run", "--save", saved, prog).exit_code == 0
    (tmp_path / "link.json").symlink_to(saved)
    (tmp_path / "copy.json").write_bytes(saved.read_bytes())
    monkeypatch.chdir(tmp_path)
    for second in ("g.json", "./g.json", str(saved), "link.json", "sub/../g.json"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        result = cli("merge", "g.json", second)
        assert result.exit_code == 2 and "the same file" in result.output, second
    result = cli("merge", "g.json", "copy.json")
    assert result.exit_code == 2 and "the same report" in result.output


# -- 3. signals while the tool starts or finishes -------------------------------------------------
def _startup_seconds() -> float:
    """How long this machine takes to start Python and import the package: signals before
    that reach the interpreter itself, before any of the tool's code can run."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import recompile_cli"], check=True)
    return time.perf_counter() - started


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_moment_of_start_up_exits_130_or_143_without_a_traceback(prog, sig):
    offset = _startup_seconds()
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for delay in (0.05, 0.3, 0.8, 1.5, 2.0):
        proc = subprocess.Popen([sys.executable, "-m", "recompile_cli", "run", str(prog)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=prog.parent)
        time.sleep(offset + delay)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
        if proc.returncode == 0:  # the run was over before the signal came
            continue
        if proc.returncode == -sig:  # it came while Python itself shut down, after the report:
            assert "Traceback" not in err and out, (delay, err)  # a shell reads 128+N as well
            continue
        assert proc.returncode in (130, 143), (delay, proc.returncode, err)
        assert "Traceback" not in err, (delay, err)
        assert "recompile-cli: " in err, (delay, err)


# -- 5. a script that forks while it is recorded --------------------------------------------------
def test_a_forked_child_does_not_write_into_the_parents_events_log(program, tmp_path):
    path = program("forks", """
        import os
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: x + 1)
        f(jnp.ones(2))
        pid = os.fork()
        if pid == 0:  # the child only traces: compiling after a fork can hang JAX itself
            jax.make_jaxpr(lambda x: x * 3)(1.0)
            jax.jit(lambda x: x - 1).trace(jax.ShapeDtypeStruct((5,), jnp.float32)).lower()
            os._exit(0)
        os.waitpid(pid, 0)
        f(jnp.ones(3))
    """)
    log = tmp_path / "events.jsonl"
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--events-log",
                           str(log), str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    names = {r["event"]["function"]["name"] if isinstance(r["event"]["function"], dict)
             else r["event"]["function"] for r in records if r["type"] == "event"}
    assert not any("multiply" in str(n) or "subtract" in str(n) for n in names), names
    assert records[-1]["type"] == "end"
