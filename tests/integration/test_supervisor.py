"""The verdict is decided outside the measured program (``process.supervisor``, ``process.child``):
whatever the target does, `run`, `profile`, `check` and `forecast` report what was recorded,
say how the target ended, and never exit 0 when it did not finish normally.

Every case is a real process: ``os._exit(0)`` in a script, a traced function, a thread, at
import, in a spec factory and in ``atexit``; a segfault; SIGKILL; a closed ``sys.stdout``; a
hang past ``--timeout``; Ctrl-C and SIGTERM; a long compile interrupted."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from recompile_cli.session.files import load_session

pytestmark = pytest.mark.measured_process  # process behaviour: real measured processes

COMPILES_THREE = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return x * 2

def three():
    for n in (3, 4, 5):
        step(jnp.ones(n))
"""


def recompile_cli(*args: str, cwd: Path, timeout: float = 300, **popen: object
                  ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recompile_cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"}, **popen)  # type: ignore[call-overload]


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def reported(proc: subprocess.CompletedProcess[str], compiles: int) -> None:
    """The report of what was recorded is there: the function with its compiles."""
    assert f"step: {compiles} compile" in proc.stdout, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


# -- os._exit(0) wherever the target may call it ---------------------------------------------------
SCRIPTS = {
    "the script": "three()\nimport os\nos._exit(0)\n",
    "a thread": ("three()\nimport os, threading, time\n"
                 "threading.Thread(target=lambda: os._exit(0)).start()\ntime.sleep(30)\n"),
    "a traced function": ("three()\nimport os\n"
                          "jax.jit(lambda x: os._exit(0))(jnp.ones(2))\n"),
}


@pytest.mark.parametrize("where", list(SCRIPTS))
def test_os_exit_0_in_a_run_fails_with_the_report(tmp_path, where):
    script = write(tmp_path, "prog.py", COMPILES_THREE + SCRIPTS[where])
    proc = recompile_cli("run", "--max-compiles", "5", "--save", "s.json", script, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    reported(proc, 3)
    assert "did not finish: its process ended with exit status 0" in proc.stderr
    assert "os._exit" in proc.stderr
    failure = load_session(tmp_path / "s.json").target_exception
    assert failure is not None and "exit status 0" in failure  # saved with the session


def test_os_exit_0_in_atexit_after_the_run_leaves_the_gate_to_decide(tmp_path):
    script = write(tmp_path, "prog.py", COMPILES_THREE + (
        "three()\nimport atexit, os\natexit.register(lambda: os._exit(0))\n"))
    proc = recompile_cli("run", "--max-compiles", "1", script, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the run finished; the gate failed
    reported(proc, 3)
    assert "step: 3 compiles, budget 1" in proc.stdout


def test_os_exit_0_in_atexit_under_a_gate_that_holds_passes(tmp_path):
    script = write(tmp_path, "prog.py", COMPILES_THREE + (
        "three()\nimport atexit, os\natexit.register(lambda: os._exit(0))\n"))
    assert recompile_cli("run", "--max-compiles", "3", script, cwd=tmp_path).returncode == 0



def test_a_program_that_closes_the_events_pipe_is_told_apart_from_os_exit(tmp_path):
    """Issue 44: closing every descriptor above 2 (os.closerange) ended the recording, and the
    run was blamed on os._exit."""
    script = write(tmp_path, "prog.py", COMPILES_THREE + (
        "three()\nimport os, time\nos.closerange(3, 4096)\ntime.sleep(1.5)\n"))
    proc = recompile_cli("run", script, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "the program closed the recorder's events pipe" in proc.stderr
    assert "os._exit, or" not in proc.stderr
    reported(proc, 3)  # what it recorded before is reported

def test_an_exit_handler_that_fails_after_the_run_is_a_failure(tmp_path):
    script = write(tmp_path, "prog.py", COMPILES_THREE + (
        "three()\nimport atexit, os\natexit.register(lambda: os._exit(7))\n"))
    proc = recompile_cli("run", script, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "finished, then its process ended with exit status 7 (in its exit handlers)" in (
        proc.stderr)


def test_a_compile_in_an_exit_handler_is_recorded_and_gated(tmp_path):
    """The script's exit handlers run while the recorder records: a compile there counts, and
    each handler runs once, the last registered first, a failing one shown as Python shows it;
    one that calls os._exit still ends the process after the run's end record."""
    script = write(tmp_path, "prog.py", COMPILES_THREE + textwrap.dedent("""
        step(jnp.ones(3))
        import atexit, os
        atexit.register(lambda: os._exit(0))
        def at_the_end(n):
            print("handler ran", n)
            step(jnp.ones(n)).block_until_ready()
        def failing():
            raise ValueError("handler failed")
        atexit.register(at_the_end, 9)
        atexit.register(failing)
    """))
    proc = recompile_cli("run", "--max-compiles", "1", "--save", "s.json", script, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # finished; the gate failed
    assert proc.stdout.count("handler ran 9") == 1, proc.stdout  # once
    assert "step: 2 compiles, budget 1" in proc.stdout
    assert "(at_the_end)" in proc.stdout  # where it compiled, in the handler
    if "hook mode public-only" not in proc.stdout:  # old JAX records no signature
        assert "f32[3] -> f32[9] (prog.py:" in proc.stdout
    assert "Exception ignored in atexit callback: <function failing" in proc.stderr
    assert "ValueError: handler failed" in proc.stderr and "exit_handlers.py" not in proc.stderr
    sites = [e.call_site or "" for e in load_session(tmp_path / "s.json").events
             if e.function == "step" and e.compiled]
    assert len(sites) == 2 and sites[1].endswith("(at_the_end)")


@pytest.mark.parametrize("where", ["import", "factory", "traced"])
def test_os_exit_0_under_profile_and_forecast(tmp_path, where):
    module = write(tmp_path, "target.py", COMPILES_THREE + textwrap.dedent(f"""
        import os
        if {where == "import"!r}:
            three()
            os._exit(0)

        def make():
            os._exit(0)

        def body(x):
            if {where == "traced"!r}:
                os._exit(0)
            return x + 1
    """))
    first = "{call: target:make}" if where == "factory" else "{array: [3]}"
    spec = write(tmp_path, "spec.yaml", f"calls:\n  - args: [{first}]\n"
                                        "  - args: [{array: [4]}]\n")
    for command in ("profile", "forecast"):
        proc = recompile_cli(command, f"{module}:body", "--args", spec, "--max-compiles", "9",
                             cwd=tmp_path)
        assert proc.returncode == 3, (command, proc.stdout, proc.stderr)
        assert "did not finish" in proc.stderr and "exit status 0" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_os_exit_0_under_check_fails_the_target(tmp_path):
    write(tmp_path, "prog.py", COMPILES_THREE + "three()\nimport os\nos._exit(0)\n")
    write(tmp_path, "fine.py", COMPILES_THREE + "three()\n")
    budget = write(tmp_path, "budget.yaml", """
        targets:
          - script: prog.py
            budgets: {step: {max_compiles: 5}}
          - script: fine.py
            budgets: {step: {max_compiles: 5}}
    """)
    proc = recompile_cli("check", budget, "--junit-xml", "junit.xml", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "gate: passed" not in proc.stdout
    assert "prog.py: prog.py did not finish: its process ended with exit status 0" in (
        proc.stdout + proc.stderr)
    junit = (tmp_path / "junit.xml").read_text()
    assert "exit status 0" in junit and 'errors="1"' in junit


# -- crashes, kills, hangs ---------------------------------------------------------------------------
@pytest.mark.parametrize(("ending", "words"), [
    ("import ctypes\nctypes.string_at(0)\n", "SIGSEGV (a crash in native code)"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "SIGKILL"),
    ("import os\nos.abort()\n", "SIGABRT (an abort in native code)"),
])
def test_a_crash_or_a_kill_fails_with_the_report_and_the_events_log(tmp_path, ending, words):
    script = write(tmp_path, "prog.py", COMPILES_THREE + "three()\n" + ending)
    proc = recompile_cli("run", "--events-log", "events.jsonl", "--output", "r.json", script,
                         cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    reported(proc, 3)
    assert f"did not finish: its process ended with {words}" in proc.stderr
    log = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert log[0]["type"] == "header" and log[-1]["type"] == "event"  # no end record
    assert json.loads((tmp_path / "r.json").read_text())["totals"]["compiles"] >= 3


def test_a_target_that_closes_or_replaces_stdout_still_gets_its_report(tmp_path):
    for ending in ("import sys\nsys.stdout.close()\n",
                   "import io, sys\nsys.stdout = io.StringIO()\n"):
        script = write(tmp_path, "prog.py", COMPILES_THREE + "three()\n" + ending)
        proc = recompile_cli("run", "--max-compiles", "1", script, cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "step: 3 compiles, budget 1" in proc.stdout


def test_a_hang_past_the_timeout_is_stopped_and_reported(tmp_path):
    script = write(tmp_path, "prog.py", COMPILES_THREE + (
        "three()\nimport signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "time.sleep(600)\n"))
    started = time.monotonic()
    proc = recompile_cli("run", "--timeout", "10", script, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert time.monotonic() - started < 120
    reported(proc, 3)
    assert "ran past --timeout 10 s and was stopped (SIGKILL, 5 s after SIGTERM)" in proc.stderr


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "1e309", "9999999999"])
def test_a_bad_timeout_is_refused_before_anything_runs(tmp_path, value):
    script = write(tmp_path, "prog.py", "raise SystemExit('the script ran')\n")
    proc = recompile_cli("run", "--timeout", value, script, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--timeout" in proc.stderr and "the script ran" not in proc.stdout + proc.stderr


# -- signals -------------------------------------------------------------------------------------------
SLOW = COMPILES_THREE + """
import sys, time
three()
while True:
    try:  # "ready" inside the try: a signal right after it still lands in it
        print("ready", flush=True)
        time.sleep(0.1)
    except KeyboardInterrupt:
        if "--stubborn" not in sys.argv:
            raise
        print("ignoring Ctrl-C", flush=True)
"""


def start(tmp_path: Path, *args: str, group: bool = False) -> subprocess.Popen[str]:
    script = write(tmp_path, "slow.py", SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "recompile_cli", "run", str(script), *args],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"},
                            start_new_session=group)
    assert proc.stdout is not None
    for line in proc.stdout:  # the target ran its compiles
        if line.startswith("ready"):
            break
    return proc


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("to", ["the supervisor", "the process group"])
def test_a_signal_stops_the_target_and_exits_with_its_code_and_the_report(tmp_path, sig,
                                                                        code, to):
    proc = start(tmp_path, group=True)
    if to == "the supervisor":
        proc.send_signal(sig)
    else:  # as a terminal's Ctrl-C or a scheduler reaches a whole job
        os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, out + err
    assert "step: 3 compiles" in out and "Traceback" not in err
    words = "interrupted by Ctrl-C" if sig == signal.SIGINT else "terminated by SIGTERM"
    assert f"recompile-cli: {words}" in err


def test_a_second_ctrl_c_ends_a_target_that_ignores_the_first(tmp_path):
    proc = start(tmp_path, "--stubborn")
    proc.send_signal(signal.SIGINT)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "ignoring Ctrl-C" in out and "step: 3 compiles" in out
    assert "then ended by a second signal (SIGKILL)" in err


LONG_COMPILE = """
import jax, jax.numpy as jnp
print("compiling", flush=True)

@jax.jit
def heavy(x):
    for i in range(3000):
        x = jnp.sin(x) * (i + 1) + jnp.cos(x)
    return x

heavy(jnp.ones(8)).block_until_ready()
"""


def test_ctrl_c_during_a_long_compile_exits_130_never_a_crash(tmp_path):
    script = write(tmp_path, "heavy.py", LONG_COMPILE)
    proc = subprocess.Popen([sys.executable, "-m", "recompile_cli", "run", str(script)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("compiling"):
            break
    time.sleep(2)  # tracing and lowering 3,000 equations, then XLA compiles them
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, out + err
    assert "Segmentation" not in err and "Traceback" not in err


# -- what the target sees ------------------------------------------------------------------------------
def test_the_target_sees_what_python_script_shows_it(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = write(tmp_path, "prog.py", """
        import json, os, sys
        import helper_mod
        print(json.dumps({"argv": sys.argv, "name": __name__, "cwd": os.getcwd(),
                          "path0": sys.path[0], "empty_on_path": "" in sys.path,
                          "env": sorted(k for k in os.environ if k.startswith("RECOMPILE")),
                          "value": helper_mod.VALUE, "stdout_tty": sys.stdout.isatty()}))
    """)
    proc = recompile_cli("run", script, "--flag", "x", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[0])
    direct = subprocess.run([sys.executable, str(script), "--flag", "x"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert seen == json.loads(direct.stdout)


def _supervisor(tmp_path: Path, *args: str, rank: str | None = None
                ) -> tuple[subprocess.CompletedProcess[str], bool]:
    """``recompile-cli ARGS`` in a process that reports whether it imported JAX."""
    driver = textwrap.dedent(f"""
        import sys
        from recompile_cli.cli.app import main
        sys.argv = ["recompile-cli", *{list(args)!r}]
        try:
            main()
        except SystemExit as exc:
            print("EXIT", exc.code, "JAX", "jax" in sys.modules, file=sys.stderr)
    """)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    if rank is not None:
        env["RANK"] = rank  # a launcher's variable, on a process of no multi-process job
    proc = subprocess.run([sys.executable, "-c", driver], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    return proc, "JAX True" in proc.stderr


def test_the_supervisor_never_imports_jax(tmp_path):
    script = write(tmp_path, "prog.py", COMPILES_THREE + "three()\n")
    proc, _ = _supervisor(tmp_path, "run", "--max-compiles", "1", str(script))
    assert "EXIT 1 JAX False" in proc.stderr, proc.stdout + proc.stderr
    assert "step: 3 compiles, budget 1" in proc.stdout


def test_process_and_host_in_output_paths_are_filled_from_the_recording_not_from_jax(tmp_path):
    """``{process}`` and ``{host}`` in every output path are the recorded process's: 0 for a
    process of no multi-process job once its backend ran, whatever a launcher's RANK says (the
    supervisor never imports JAX to ask); the launcher's rank where the backend never started."""
    script = write(tmp_path, "prog.py", COMPILES_THREE + "three()\n")
    proc, jax_imported = _supervisor(
        tmp_path, "run", "--save", "out/s-{process}-{host}.json", "--output", "out/r-{process}.json",
        "--junit-xml", "out/j-{process}.xml", "--save-baseline", "out/b-{process}.json",
        "--max-compiles", "5", str(script), rank="5")
    assert "EXIT 0" in proc.stderr and not jax_imported, proc.stdout + proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "b-0.json", "j-0.xml", "r-0.json", f"s-0-{socket.gethostname()}.json"]
    idle = write(tmp_path, "idle.py", "import jax\n")  # never starts the backend
    proc, jax_imported = _supervisor(tmp_path, "run", "--save", "idle/s-{process}.json",
                                     str(idle), rank="5")
    assert "EXIT 0" in proc.stderr and not jax_imported, proc.stdout + proc.stderr
    assert [p.name for p in (tmp_path / "idle").iterdir()] == ["s-5.json"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG)")
def test_a_supervisor_killed_outright_leaves_no_measured_process_behind(tmp_path):
    script = write(tmp_path, "prog.py", """
        import os, time
        print("pid", os.getpid(), flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-m", "recompile_cli", "run", str(script)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.stdout is not None
    child = int(proc.stdout.readline().split()[1])
    proc.kill()
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the measured process outlived its supervisor")


# -- the report is analysed while the measured process ends (``supervise``'s ``ended``) ----------
def test_the_session_analysed_while_the_child_ends_is_the_outcomes_unless_its_end_changed_it(
        tmp_path, monkeypatch):
    """A run that ends normally hands ``ended`` the very session of its outcome, so the report
    analysed then is the run's; one whose exit handlers fail after its end record (here after
    the analysis could have finished) gets a session that says so, and the report of that."""
    from recompile_cli.process.job import Job
    from recompile_cli.process.supervisor import supervise

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    plain = write(tmp_path, "plain.py", COMPILES_THREE + "three()\n")
    failing = write(tmp_path, "failing.py", COMPILES_THREE + (
        "three()\nimport atexit, os, time\natexit.register(lambda: (time.sleep(1), "
        "os._exit(7)))\n"))
    for script, same in ((plain, True), (failing, False)):
        seen: list[object] = []
        outcome = supervise(Job(kind="script", target=str(script)), ended=seen.append)
        assert len(seen) == 1 and (seen[0] is outcome.session) == same
        assert (outcome.failure is None) == same, outcome.failure
    assert "exit status 7 (in its exit handlers)" in (outcome.session.target_exception or "")


def test_a_report_says_how_the_process_ended_after_its_end_record(tmp_path):
    """The report printed is the final session's, not the one analysed ahead."""
    script = write(tmp_path, "prog.py", COMPILES_THREE + (
        "three()\nimport atexit, os, time\natexit.register(lambda: (time.sleep(1), "
        "os._exit(7)))\n"))
    proc = recompile_cli("run", script, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "The target raised:" in proc.stdout and "exit status 7" in proc.stdout, proc.stdout
    reported(proc, 3)
