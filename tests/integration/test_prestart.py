"""The measured process started before the command line is parsed (``process.prestart``): the
console script starts it for ``run``, ``profile`` and ``forecast`` so that it imports JAX while
the options are checked, and the supervisor hands it the job. Checked through the console
script's own entry (``__main__.main``) in a real process, with ``spawn.start`` watched: a run
that took the early child starts no second one, gives the same report, and a command that never
runs (a bad option, ``--help``) leaves no early child behind, and never runs the target. A
changed environment is the job's (the target sees it) unless a start-up variable changed: that
run gets a child started as usual."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.measured_process  # process behaviour: real measured processes

# The console script's entry, with spawn.start watched once the early child started: each later
# start is told on stderr, and the early child's pid too. CHANGE_ENV names a variable that is
# set once the early child started.
DRIVER = """
import os, sys
from recompile_cli.process import prestart, spawn

started, later = prestart.start, spawn.start
def watched(*args, **kwargs):
    print("LATER-SPAWN", file=sys.stderr, flush=True)
    return later(*args, **kwargs)
def start(argv):
    started(argv)
    spawn.start = watched  # every start after the early one
    if prestart._waiting is not None:
        print(f"EARLY-PID {prestart._waiting.process.pid}", file=sys.stderr, flush=True)
    if os.environ.get("CHANGE_ENV"):
        os.environ[os.environ["CHANGE_ENV"]] = "1"
prestart.start = start
sys.argv[0] = "recompile-cli"
from recompile_cli.__main__ import main
main()
"""

SCRIPT = """
import sys
from pathlib import Path
import jax, jax.numpy as jnp

Path(__file__).with_name("ran").write_text("yes")
f = jax.jit(lambda x: x * 2)
for n in (1, 2):
    f(jnp.ones(n))
print("the script's own output", flush=True)
"""

MODULE = """
import jax

@jax.jit
def double(x):
    return x * 2
"""


@pytest.fixture
def driver(tmp_path: Path) -> Path:
    path = tmp_path / "driver.py"
    path.write_text(textwrap.dedent(DRIVER))
    return path


def console(driver: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    return subprocess.run([sys.executable, str(driver), *args], capture_output=True, text=True,
                          cwd=cwd, env=environment, timeout=300)


def early_pid(stderr: str) -> int | None:
    pids = [int(line.split()[1]) for line in stderr.splitlines()
            if line.startswith("EARLY-PID ")]
    assert len(pids) <= 1, stderr
    return pids[0] if pids else None


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie not yet reaped counts as gone)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
        except FileNotFoundError:
            return True
        if status in "ZX":
            return True
        time.sleep(0.05)
    return False


def test_run_takes_the_early_child_and_reports_as_usual(driver, tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT))
    result = console(driver, "run", "-f", "json", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert early_pid(result.stderr) is not None
    assert "LATER-SPAWN" not in result.stderr  # the early child ran the target
    report = json.loads(result.stdout)  # the report alone on stdout ...
    [f] = [row for row in report["functions"] if row["name"] == "<lambda>"]
    assert (f["traces"], f["compiles"]) == (2, 2)
    assert "the script's own output" in result.stderr  # ... the script's output on stderr


@pytest.mark.parametrize("command", ["profile", "forecast"])
def test_profile_and_forecast_take_it_too(driver, tmp_path, command):
    (tmp_path / "mod.py").write_text(textwrap.dedent(MODULE))
    spec = tmp_path / "spec.yaml"
    spec.write_text("calls:\n  - args: [{array: [2]}]\n  - args: [{array: [3]}]\n")
    result = console(driver, command, "--args", str(spec), f"{tmp_path / 'mod.py'}:double",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    assert early_pid(result.stderr) is not None and "LATER-SPAWN" not in result.stderr
    assert "double: 2 compiles, 1 re-compile (" in result.stdout  # (unknown) on old JAX


@pytest.mark.parametrize("args", [["run", "--max-compiles", "-1"], ["run", "--format", "nope"],
                                  ["profile", "--max-calls", "inf"]])
def test_a_command_stopped_by_its_options_never_runs_the_target_and_ends_the_early_child(
        driver, tmp_path, args):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT))
    target = str(script) if args[0] == "run" else f"{script}:f"
    result = console(driver, *args, target, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    pid = early_pid(result.stderr)
    assert pid is not None and gone(pid)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("args", [["run", "--help"], ["--version"], ["report", "x.json"],
                                  ["check", "--help"]])
def test_commands_that_run_no_target_start_no_early_child(driver, tmp_path, args):
    result = console(driver, *args, cwd=tmp_path)
    assert early_pid(result.stderr) is None, result.stderr
    assert "LATER-SPAWN" not in result.stderr


def test_a_changed_environment_is_the_jobs(driver, tmp_path):
    """A variable set after the early child started reaches the target all the same: the job
    carries its environment, and the early child runs it."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT + """
import os
print("changed:", os.environ.get("RECOMPILE_CLI_TEST_CHANGED"))
"""))
    result = console(driver, "run", str(script), cwd=tmp_path,
                     CHANGE_ENV="RECOMPILE_CLI_TEST_CHANGED")
    assert result.returncode == 0, result.stderr
    assert early_pid(result.stderr) is not None
    assert "LATER-SPAWN" not in result.stderr  # the early child ran it ...
    assert "changed: 1" in result.stdout  # ... with the environment of the run
    assert "<lambda>: 2 compiles, 1 re-compile (" in result.stdout


def test_a_changed_start_up_variable_gets_a_child_started_as_usual(driver, tmp_path):
    """A variable that Python or JAX read as they started (here JAX_ENABLE_X64) cannot be
    changed in a child that started: the early child is ended, and a new one runs the job."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT + """
import jax.numpy as jnp
print("dtype:", jnp.ones(1).dtype)
"""))
    result = console(driver, "run", str(script), cwd=tmp_path, CHANGE_ENV="JAX_ENABLE_X64")
    assert result.returncode == 0, result.stderr
    pid = early_pid(result.stderr)
    assert pid is not None and gone(pid)
    assert "LATER-SPAWN" in result.stderr  # the early child was not the one that ran
    assert "dtype: float64" in result.stdout  # the target saw the environment of the run
    assert "<lambda>: 2 compiles, 1 re-compile (" in result.stdout
