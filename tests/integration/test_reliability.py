"""The report is never lost and a gate never passes by accident, whatever the target does:
``sys.exit``, odd exceptions, signals at any moment, a broken events log, ``os.chdir``."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import jax
import pytest
from helpers import DATA
from jax_support import requires_private_hooks

from recompile_cli.capture.counting import CallCounter

pytestmark = pytest.mark.measured_process  # process behaviour: real measured processes

STEP = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return jnp.tanh(x) * 2
"""


def script(program, name: str, body: str):
    return program(name, STEP + textwrap.dedent(body))


def junit_cases(junit) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}


# -- sys.exit and odd exceptions ---------------------------------------------------------------
def test_sys_exit_0_at_the_end_of_a_script_is_a_normal_end_and_gates_apply(cli, program,
                                                                            tmp_path):
    path = script(program, "exits0", """
        step(jnp.ones(3)); step(jnp.ones(4))
        import sys; sys.exit(0)
    """)
    junit = tmp_path / "junit.xml"
    result = cli("run", "--max-compiles", "1", "--junit-xml", junit, path)
    assert result.exit_code == 1, result.output
    assert "step: 2 compiles, budget 1" in result.stdout
    assert junit_cases(junit)["step"].find("failure") is not None
    assert cli("run", "--max-compiles", "2", path).exit_code == 0


@pytest.mark.parametrize("ending, words", [
    ("import sys; sys.exit(4)", "exited with status 4"),
    ("import sys; sys.exit('bad input')", "exited with status 1 and the message 'bad input'"),
    ("raise GeneratorExit()", "raised GeneratorExit"),
    ("""
class Odd(Exception):
    def __str__(self):
        raise RuntimeError("no message")
raise Odd()
""", "raised Odd"),
])
def test_a_script_that_exits_or_raises_oddly_exits_3_with_report_and_junit(cli, program,
                                                                           tmp_path, ending,
                                                                           words):
    path = script(program, "odd", "step(jnp.ones(3))\n" + ending)
    junit = tmp_path / "junit.xml"
    out = tmp_path / "report.json"
    result = cli("run", "--max-compiles", "0", "--junit-xml", junit, "--output", out, path)
    assert result.exit_code == 3, result.output
    assert words in result.stderr
    assert "recompile_cli" not in result.stderr  # no frame of ours, whatever was raised
    assert "step" in result.stdout  # the report was printed
    assert json.loads(out.read_text())["target_exception"]
    assert junit_cases(junit)["step"].find("failure") is not None  # the gate was evaluated


def test_sys_exit_inside_a_profiled_function_exits_3_with_the_report(cli, program, tmp_path):
    path = script(program, "exits_inside", """
        def target(x):
            step(x)
            import sys; sys.exit(0)
    """)
    spec = tmp_path / "spec.yaml"
    spec.write_text("calls:\n  - args: [{array: [3]}]\n")
    junit = tmp_path / "junit.xml"
    result = cli("profile", f"{path}:target", "--no-jit", "--args", spec, "--max-compiles", "0",
                 "--junit-xml", junit)
    assert result.exit_code == 3, result.output
    assert "called sys.exit(0)" in result.stderr
    assert "step" in result.stdout and junit.exists()


def test_sys_exit_at_import_exits_3_with_the_report(cli, program):
    path = script(program, "exits_at_import", """
        step(jnp.ones(3))
        import sys; sys.exit(0)
        def target(): pass
    """)
    result = cli("profile", f"{path}:target")
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output and "step" in result.stdout


def test_a_script_that_raises_shows_the_users_traceback_then_the_summary(cli, program):
    path = script(program, "raises", """
        def helper(n):
            raise ValueError(f"bad value {n}")
        step(jnp.ones(3))
        helper(7)
    """)
    result = cli("run", path)
    assert result.exit_code == 3
    lines = result.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "    helper(7)" in lines and "ValueError: bad value 7" in lines
    assert lines[-1].startswith(f"error: {path} raised ValueError at ")
    assert not any(word in result.stderr for word in ("recompile_cli", "runpy", "<frozen"))


# -- check --------------------------------------------------------------------------------------
def two_target_budget(tmp_path, first: str):
    """A budget file whose first target is ``prog.py:<first>`` and second ``prog.py:step``."""
    (tmp_path / "one.yaml").write_text("calls:\n  - args: [{array: [3]}]\n")
    budget = tmp_path / "budget.yaml"
    budget.write_text(textwrap.dedent(f"""
        targets:
          - target: prog.py:{first}
            args: one.yaml
            budgets: {{{first}: {{max_compiles: 5}}}}
          - target: prog.py:step
            args: one.yaml
            budgets: {{step: {{max_compiles: 1}}}}
    """))
    return budget


def test_check_counts_a_target_that_raised_as_an_error_and_runs_the_others(cli, program,
                                                                          tmp_path):
    script(program, "prog", """
        def broken(x):
            raise ValueError("boom")
    """)
    budget = two_target_budget(tmp_path, "broken")
    junit = tmp_path / "junit.xml"
    result = cli("check", budget, "--junit-xml", junit)
    assert result.exit_code == 3, result.output
    assert "recompile-cli gate: FAILED" in result.stdout
    assert "ValueError" in result.stdout and "boom" in result.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("errors") == "1"
    [error] = [case.find("error") for case in suite.iter("testcase")
               if case.find("error") is not None]
    assert "ValueError" in error.get("message")
    assert junit_cases(junit)["step"].find("failure") is None  # the next target still ran


def test_ctrl_c_in_one_target_stops_the_whole_check(cli, program, tmp_path):
    script(program, "prog", """
        def interrupted(x):
            raise KeyboardInterrupt()
    """)
    budget = two_target_budget(tmp_path, "interrupted")
    result = cli("check", budget)
    assert result.exit_code == 130, result.output
    assert "| step" not in result.stdout and " step " not in result.stdout
    assert "targets after it did not run" in result.stderr


# -- vacuous passes -----------------------------------------------------------------------------
def test_a_budget_that_matches_nothing_warns_and_fails_with_strict(cli, program, tmp_path):
    script(program, "prog", "")
    (tmp_path / "one.yaml").write_text("calls:\n  - args: [{array: [3]}]\n")
    budget = tmp_path / "budget.yaml"
    budget.write_text("targets:\n  - target: prog.py:step\n    args: one.yaml\n"
                      "    budgets: {stpe: {max_compiles: 1}}\n")
    result = cli("check", budget)
    assert result.exit_code == 0 and "the budget 'stpe' matches no function" in result.stdout
    assert " ok" not in result.stdout  # no silent passing row
    result = cli("check", budget, "--strict")
    assert result.exit_code == 1 and "matches no function" in result.stdout


def test_negative_max_compiles_is_a_usage_error(cli, program):
    path = script(program, "prog", "")
    result = cli("profile", f"{path}:step", "--max-compiles", "-1")
    assert result.exit_code == 2 and "Invalid value for '--max-compiles'" in result.output


# -- outputs ------------------------------------------------------------------------------------
@requires_private_hooks
def test_an_unwritable_events_log_warns_and_the_report_is_still_written(cli, program, tmp_path):
    path = script(program, "prog", "step(jnp.ones(3))")
    out = tmp_path / "report.json"
    result = cli("run", "--events-log", "/dev/full", "--output", out, path)
    assert result.exit_code == 0, result.output
    assert "the events log /dev/full could not be written" in result.stdout
    assert json.loads(out.read_text())["functions"][0]["name"] == "step"


def test_output_paths_do_not_move_when_the_script_changes_folder(cli, program, tmp_path,
                                                                 monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = script(program, "wanders", f"""
        import os
        os.chdir({str(elsewhere)!r})
        step(jnp.ones(3))
    """)
    start = tmp_path / "start"
    start.mkdir()
    monkeypatch.chdir(start)
    result = cli("run", "--output", "report.json", "--save", "session.json", path)
    assert result.exit_code == 0, result.output
    assert (start / "report.json").exists() and (start / "session.json").exists()
    assert not (elsewhere / "report.json").exists()
    assert os.getcwd() == str(start)  # the working directory is restored


def test_save_writes_the_session_without_the_analysis(cli, program, tmp_path):
    path = script(program, "prog", "step(jnp.ones(3))")
    saved = tmp_path / "session.json"
    assert cli("run", "--save", saved, path).exit_code == 0
    data = json.loads(saved.read_text())
    assert data["events"] and "cause_table" not in data and "functions" not in data
    assert cli("report", saved).exit_code == 0


def test_report_to_a_path_without_extension_says_what_to_do(cli, tmp_path, monkeypatch):
    session = DATA / "session.json"
    monkeypatch.chdir(tmp_path)
    result = cli("report", session, "--output", "out/somewhere")
    assert result.exit_code == 2 and "cannot tell the format" in result.stderr
    # the path as the user gave it, relative, never the absolute one (issue 33)
    assert "--output out/somewhere: cannot" in result.stderr and str(tmp_path) not in (
        result.stderr)
    result = cli("report", session, "--output", tmp_path / "somewhere")
    assert result.exit_code == 2 and "--output somewhere: cannot" in result.stderr
    assert not (tmp_path / "somewhere").exists()
    folder = tmp_path / "tables"
    folder.mkdir()
    assert cli("report", session, "--output", folder).exit_code == 0
    assert (folder / "events.csv").exists()


@requires_private_hooks
def test_json_to_stdout_does_not_mix_with_what_the_script_prints(cli, program):
    path = script(program, "talks", "print('hello from the script'); step(jnp.ones(3))")
    result = cli("run", "-f", "json", path)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["functions"][0]["name"] == "step"
    assert "hello from the script" in result.stderr


def test_an_unwritable_save_baseline_is_refused_before_the_run(cli, program, tmp_path):
    path = script(program, "prog", "raise SystemExit('must not run')")
    (tmp_path / "a-file").write_text("")
    for where in (tmp_path / "a-file" / "b.json", tmp_path):  # under a file; a folder
        result = cli("run", "--save-baseline", where, path)
        assert result.exit_code == 2 and "--save-baseline" in result.stderr, result.stderr


# -- inputs checked before the run --------------------------------------------------------------
def test_profile_without_args_of_a_function_that_needs_them_names_the_parameters(cli, program):
    path = script(program, "prog", "")
    result = cli("profile", f"{path}:step")
    assert result.exit_code == 2 and "takes x" in result.stderr


def test_static_argnames_that_are_not_parameters_are_refused(cli, program, tmp_path):
    path = script(program, "prog", "def plain(x, n):\n    return x * n\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("calls:\n  - args: [{array: [3]}, 2]\n")
    result = cli("profile", f"{path}:plain", "--args", spec, "--static-argnames", "m")
    assert result.exit_code == 2 and "'m'" in result.stderr and "Traceback" not in result.output


# -- hooks and wrappers are restored ------------------------------------------------------------
def test_count_calls_restores_jax_jit_exactly_and_kept_wrappers_still_work():
    import jax.numpy as jnp

    original = jax.jit
    calls: list[tuple] = []
    with CallCounter(lambda key, index: calls.append((key, index))):
        kept_jit = jax.jit
        f = jax.jit(lambda x: x + 1)
        f(jnp.ones(2))
    assert jax.jit is original
    assert len(calls) == 2  # the call started and ended
    f(jnp.ones(2))  # a counted function kept after the run
    kept_jit(lambda x: x * 2)(jnp.ones(2))  # and the wrapper itself
    assert len(calls) == 2  # neither counts nor raises any more
    with CallCounter(lambda key, index: None):
        with CallCounter(lambda key, index: None):
            pass
        assert jax.jit is not original
    assert jax.jit is original


def test_run_with_count_calls_twice_does_not_stack_wrappers(cli, program):
    path = script(program, "prog", "step(jnp.ones(3))")
    original = jax.jit
    for _ in range(2):
        assert cli("run", "--count-calls", path).exit_code == 0
        assert jax.jit is original


# -- signals at any moment ----------------------------------------------------------------------
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_analysis_still_prints_and_writes_the_report(program, tmp_path, sig,
                                                                    code):
    path = script(program, "prog", "step(jnp.ones(3))")
    out = tmp_path / "report.json"
    driver = textwrap.dedent(f"""
        import os, signal, sys
        import recompile_cli.analysis.report as report
        original = report.build_report
        def analyse(session):
            os.kill(os.getpid(), {int(sig)})  # arrives while the report is being made
            return original(session)
        report.build_report = analyse
        from recompile_cli.cli.app import main
        sys.argv = ["recompile-cli", "run", "--output", {str(out)!r}, {str(path)!r}]
        main()
    """)
    proc = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "step" in proc.stdout and json.loads(out.read_text())["functions"]
    words = "terminated by SIGTERM" if sig == signal.SIGTERM else "interrupted by Ctrl-C"
    assert f"recompile-cli: {words}" in proc.stderr  # the reason, though the target ran fine


def test_sigterm_at_start_up_exits_143_without_a_traceback(tmp_path):
    driver = textwrap.dedent("""
        import os, signal, sys
        import recompile_cli.inputs.spec as spec
        def load_spec(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)  # deferred: the target never starts
            return spec.single_call()
        spec.load_spec = load_spec
        from recompile_cli.cli.app import main
        sys.argv = ["recompile-cli", "profile", "nowhere.py:f", "--args", "spec.yaml"]
        main()
    """)
    proc = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 143, proc.stderr
    assert "Traceback" not in proc.stderr and "SIGTERM" in proc.stderr


# -- every event renders --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "html", "chrome-trace", "json"])
def test_an_aot_compile_without_a_location_renders_in_every_format(cli, program, tmp_path, fmt):
    path = script(program, "aot", """
        def f(x):
            return jnp.sin(x) + 1
        lowered = jax.jit(f).lower(jnp.ones(3))
        step(jnp.ones(4))              # another function compiles in between
        lowered.compile()(jnp.ones(3))
    """)
    saved = tmp_path / "session.json"
    assert cli("run", "--save", saved, path).exit_code == 0
    result = cli("report", saved, "--format", fmt)
    assert result.exit_code == 0, result.output
    assert "NaN" not in result.stdout
    if fmt == "json":
        compiled = [e for e in json.loads(result.stdout)["events"] if e["compiled"]]
        assert {e["function"] for e in compiled} >= {"f", "step"}


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_outputs_to_a_device_are_written_through_and_a_full_device_is_exit_2(cli, fmt):
    """As root, replacing /dev/null with a regular file would break every program on the
    machine: a device is written, never replaced; one that cannot take the text (/dev/full)
    is exit 2 with the reason, and the report is still printed."""
    before = os.stat("/dev/null")
    result = cli("report", DATA / "session.json", "--output", "/dev/null", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    if os.path.exists("/dev/full"):
        result = cli("report", DATA / "session.json", "--output", "/dev/full", "--format", fmt)
        assert result.exit_code == 2 and "/dev/full" in result.stderr, result.stderr
        assert "No space left on device" in result.stderr
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
