"""The command line as a user drives it: target forms, flags, formats and every exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT, SAMPLES, TARGETS_MODULE, user_events, user_functions
from jax_support import requires_private_hooks

MODULE = TARGETS_MODULE + """
    def calls_jits(x):
        return partial_jitted(x, 2) + partial_jitted(x, 3)

    def boom(x):
        raise ValueError("bad input shape")
"""

SPEC = """
calls:
  - args: [{array: [3]}, 2]
  - args: [{array: [4]}, 2]
  - args: [{array: [4]}, 5]
"""


@pytest.fixture
def mod(program, tmp_path):
    path = program("clitarget", MODULE)
    (tmp_path / "spec.yaml").write_text(SPEC)
    return path


@requires_private_hooks
def test_plain_function_jitted_with_static_flag(cli, mod, tmp_path):
    result, report = cli.json("profile", f"{mod}:plain", "--args", tmp_path / "spec.yaml",
                              "--static-argnames", "n", tmp_path=tmp_path)
    assert result.exit_code == 0
    fn = user_functions(report)["plain"]
    assert (fn["calls"], fn["compiles"]) == (3, 3)
    assert [e["cause"]["code"] for e in user_events(report, "plain")] == [
        "first_compile", "shape", "static_value"]


@requires_private_hooks
def test_static_argnums_flag_and_spec_jit_section(cli, mod, tmp_path):
    _, report = cli.json("profile", f"{mod}:plain", "--args", tmp_path / "spec.yaml",
                         "--static-argnums", "1", tmp_path=tmp_path)
    assert user_events(report, "plain")[2]["cause"]["code"] == "static_value"
    (tmp_path / "jit.yaml").write_text("jit: {static_argnames: n}\n" + SPEC)
    _, report = cli.json("profile", f"{mod}:plain", "--args", tmp_path / "jit.yaml",
                         tmp_path=tmp_path)
    assert user_events(report, "plain")[2]["cause"]["code"] == "static_value"


def test_already_jitted_partial_target(cli, mod, tmp_path):
    result, report = cli.json("profile", f"{mod}:partial_jitted", "--args",
                              tmp_path / "spec.yaml", tmp_path=tmp_path)
    assert result.exit_code == 0
    assert user_functions(report)["partial_jitted"]["compiles"] == 3


@requires_private_hooks
def test_module_name_target_and_method_and_attribute(cli, mod, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.yaml").write_text("calls: [{args: [{array: [2]}]}, {args: [{array: [3]}]}]")
    result, report = cli.json("profile", "clitarget:model.forward", "--args", "one.yaml",
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert user_functions(report)["forward"]["compiles"] == 2
    (tmp_path / "self.yaml").write_text('calls: [{args: [{call: "clitarget:Model"}, '
                                        '{array: [2]}]}]')
    result, report = cli.json("profile", "clitarget:Model.forward", "--args", "self.yaml",
                              "--static-argnums", "0", tmp_path=tmp_path)
    assert result.exit_code == 0, result.output  # Class.method with `self` passed as static
    event = user_events(report, "forward")[0]
    assert list(event["signature"]["static"]) == ["self"]


@requires_private_hooks
def test_no_jit_records_only_inner_jits(cli, mod, tmp_path):
    (tmp_path / "one.yaml").write_text("calls: [{args: [{array: [2]}]}]")
    result, report = cli.json("profile", f"{mod}:calls_jits", "--no-jit", "--args",
                              tmp_path / "one.yaml", tmp_path=tmp_path)
    assert result.exit_code == 0
    functions = user_functions(report)
    assert "calls_jits" not in functions
    assert functions["partial_jitted"]["compiles"] == 2
    assert [e["cause"]["code"] for e in user_events(report, "partial_jitted")] == [
        "first_compile", "static_value"]


@requires_private_hooks
def test_call_spec_builds_arguments_from_user_code(cli, mod, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text(
        'calls: [{args: [{call: "clitarget:make_params", args: [3]}, 2]}]')
    result, report = cli.json("profile", "clitarget:scaled", "--args", "p.yaml",
                              "--static-argnums", "1", tmp_path=tmp_path)
    assert result.exit_code == 0
    [event] = user_events(report, "scaled")
    assert event["signature"]["leaves"]["params['w']"]["shape"] == [3]
    assert "make_params" not in user_functions(report)  # building arguments is not profiled


def test_format_json_to_stdout(cli, mod, tmp_path):
    result = cli("profile", "--format", "json", f"{mod}:partial_jitted", "--args",
                 tmp_path / "spec.yaml")
    report = json.loads(result.stdout)
    assert report["totals"]["compiles"] >= 3


@requires_private_hooks
def test_json_report_has_every_documented_field(cli, mod, tmp_path):
    _, report = cli.json("profile", f"{mod}:partial_jitted", "--args", tmp_path / "spec.yaml",
                         tmp_path=tmp_path)
    assert report["schema_version"] == 1
    assert set(report["environment"]) == {"jax_version", "python_version", "backend",
                                          "hook_mode", "compilation_cache_dir"}
    assert report["environment"]["hook_mode"] == "private"
    assert report["target"].endswith(":partial_jitted")
    assert set(report["totals"]) >= {"traces", "compiles", "errors", "trace_seconds",
                                     "lower_seconds", "compile_seconds", "wall_seconds"}
    function_fields = {"name", "defined_at", "owner", "calls", "traces", "compiles", "errors",
                       "trace_seconds", "lower_seconds", "compile_seconds", "causes"}
    assert all(function_fields <= set(f) for f in report["functions"])
    event_fields = {"function", "defined_at", "call_site", "traced", "compiled",
                    "trace_seconds", "lower_seconds", "compile_seconds", "signature", "cause",
                    "causes", "error"}
    assert all(event_fields <= set(e) for e in report["events"])
    cause = user_events(report, "partial_jitted")[1]["cause"]
    assert set(cause) == {"code", "argument", "before", "after", "detail"}
    assert all({"function", "code", "message"} <= set(s) for s in report["suggestions"])
    assert isinstance(report["warnings"], list)
    owners = {f["owner"] for f in report["functions"]}
    assert owners <= {"user", "jax", "library"}


def test_output_extension_picks_the_format(cli, mod, tmp_path):
    out = tmp_path / "r.txt"
    result = cli("profile", "--output", out, f"{mod}:partial_jitted", "--args",
                 tmp_path / "spec.yaml")
    assert result.exit_code == 0
    assert out.read_text().startswith("recompile-cli:")
    assert f"Report written to {out} (table)" in result.stdout


@requires_private_hooks
def test_all_lists_jax_internal_functions(cli, tmp_path):
    target = f"{SAMPLES / 'shapes.py'}:slow_function"
    spec = SAMPLES / "shapes.yaml"
    short = cli("profile", target, "--args", spec).stdout
    full = cli("profile", "--all", target, "--args", spec).stdout
    assert "+ jax: 3 internal functions" in short and " dot " not in short
    assert " dot " in full and "owner" in full


def test_public_only_mode_counts_without_causes(cli, tmp_path):
    result, report = cli.json("profile", "--hook-mode", "public-only",
                              f"{SAMPLES / 'shapes.py'}:slow_function", "--args",
                              SAMPLES / "shapes.yaml", tmp_path=tmp_path)
    assert result.exit_code == 0
    assert report["environment"]["hook_mode"] == "public-only"
    [fn] = [f for f in report["functions"] if f["name"] == "slow_function"]
    assert (fn["traces"], fn["compiles"]) == (2, 2)
    assert [e["cause"]["code"] for e in report["events"] if e["function"] == "slow_function"
            ] == ["first_compile", "unknown"]
    assert any("public-only" in w for w in report["warnings"])


# -- exit codes -------------------------------------------------------------------------------
@pytest.mark.parametrize("target, words", [
    ("no_colon_here", "is not of the form"),
    ("surely_not_a_module_xyz:f", "No module named 'surely_not_a_module_xyz'"),
    ("{dir}/missing.py:f", "No such file"),
    ("{mod}:nope", "has no attribute 'nope'"),
    ("{mod}:Model.scale", "not a function"),
])
def test_bad_target_exits_2_without_traceback(cli, mod, tmp_path, target, words):
    result = cli("profile", target.format(mod=mod, dir=tmp_path))
    assert result.exit_code == 2
    assert words in result.stderr
    assert "Traceback" not in result.output


def test_module_that_fails_to_import_exits_2(cli, program):
    broken = program("broken_mod", "import jax\nraise RuntimeError('config missing')\n")
    result = cli("profile", f"{broken}:f")
    assert result.exit_code == 2
    assert "RuntimeError: config missing" in result.stderr
    assert f"{broken}:2" in result.stderr


def test_invalid_spec_exits_2_before_running(cli, mod, tmp_path):
    (tmp_path / "bad.yaml").write_text("calls:\n  - args: [{array: [3], dtype: float33}]\n")
    result = cli("profile", f"{mod}:plain", "--args", tmp_path / "bad.yaml")
    assert result.exit_code == 2
    assert "bad.yaml, line 2, field calls[0].args[0].dtype" in result.stderr
    assert "Traceback" not in result.output


def test_bad_flag_value_exits_2(cli, mod):
    result = cli("profile", f"{mod}:plain", "--static-argnums", "one")
    assert result.exit_code == 2 and "comma-separated integers" in result.stderr


def test_target_raising_exits_3_and_still_writes_the_report(cli, mod, tmp_path):
    (tmp_path / "two.yaml").write_text("calls: [{args: [{array: [2]}]}]")
    out = tmp_path / "r.json"
    result = cli("profile", "--output", out, "--no-jit", f"{mod}:boom", "--args",
                 tmp_path / "two.yaml")
    assert result.exit_code == 3
    assert "ValueError" in result.stderr and "bad input shape" in result.stderr
    assert "clitarget.py:" in result.stderr  # where it raised
    report = json.loads(out.read_text())
    assert "ValueError" in report["target_exception"]


def test_script_failure_keeps_what_was_recorded(cli, program, tmp_path):
    script = program("fails_late", """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: x + 1)
        f(jnp.ones(2)); f(jnp.ones(3))
        raise KeyError("late")
    """)
    result, report = cli.json("run", script, tmp_path=tmp_path)
    assert result.exit_code == 3
    assert user_functions(report)["<lambda>"]["compiles"] == 2
    assert "KeyError" in report["target_exception"]


def test_script_exit_status(cli, program, tmp_path):
    ok = program("exits_zero", "import sys\nsys.exit(0)\n")
    assert cli("run", ok).exit_code == 0
    bad = program("exits_four", "import sys\nsys.exit(4)\n")
    result = cli("run", bad)
    assert result.exit_code == 3 and "exited with status 4" in result.stderr


def test_script_syntax_error_and_missing_script_exit_2(cli, program, tmp_path):
    broken = program("syntax", "def f(:\n")
    result = cli("run", broken)
    assert result.exit_code == 2 and "syntax error" in result.stderr and "line 1" in result.stderr
    assert cli("run", tmp_path / "none.py").exit_code == 2


def test_script_gets_argv_and_its_folder_on_sys_path(cli, program, tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = program("uses_helper", """
        import sys, helper_mod
        print("ARGS", sys.argv[1:], helper_mod.VALUE + 1)
    """)
    result = cli("run", script, "--flag", "x", "--output", "y")
    assert result.exit_code == 0
    assert "ARGS ['--flag', 'x', '--output', 'y'] 42" in result.stdout
    assert str(tmp_path) not in sys.path


@requires_private_hooks
def test_python_m_entry_point_runs_in_a_subprocess(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-m", "recompile_cli", "profile",
         f"{SAMPLES / 'static_args.py'}:example_function_static", "--args",
         str(SAMPLES / "static_args.yaml")], capture_output=True, text=True, cwd=ROOT, env=env,
        timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "size_param" in proc.stdout and "3 -> 7" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "profile", "nope:f"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["profile", "run", "check", "report", "diff"])
def test_help_shows_flags_without_a_value_placeholder(cli, command):
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert "<bool>" not in result.stdout
    for line in result.stdout.splitlines():  # a flag reads "--quiet, -q  No progress..."
        if line.strip().startswith(("--no-jit", "--keep-going", "--all", "--count-calls",
                                    "--strict", "--help")):
            assert "<" not in line.split("  ")[0], line
