"""The sample programs from the design documents: counts, causes and exit codes as a user sees them."""

from __future__ import annotations

import re

import pytest
from helpers import ROOT, SAMPLES, user_events, user_functions
from jax_support import requires_private_hooks


def profile(cli, tmp_path, name, function, *extra):
    return cli.json("profile", f"{SAMPLES / name}.py:{function}", "--args",
                    SAMPLES / f"{name}.yaml", *extra, tmp_path=tmp_path)


@requires_private_hooks
def test_shapes_recompiles_once_for_the_new_shape(cli, tmp_path):
    result, report = profile(cli, tmp_path, "shapes", "slow_function")
    assert result.exit_code == 0
    fn = user_functions(report)["slow_function"]
    assert (fn["calls"], fn["traces"], fn["compiles"]) == (4, 2, 2)
    assert fn["causes"] == {"first_compile": 1, "shape": 1}
    cause = user_events(report, "slow_function")[1]["cause"]
    assert (cause["argument"], cause["before"], cause["after"]) == (
        "x", "f32[100,100]", "f32[150,150]")
    assert "slow_function" in result.stdout and "f32[100,100] -> f32[150,150]" in result.stdout


@requires_private_hooks
def test_python_if_raises_and_suggests_static_argnames(cli, tmp_path):
    result, report = profile(cli, tmp_path, "python_if", "example_function")
    assert result.exit_code == 3
    assert "TracerBoolConversionError" in result.stderr
    assert "python_if.py" in result.stderr  # the user's traceback, as Python prints it
    assert "recompile_cli" not in result.stderr  # never a frame of ours
    [event] = user_events(report, "example_function")
    assert event["error"] == {
        "type": "TracerBoolConversionError",
        "message": "Attempted boolean conversion of traced array with shape bool[].",
        "argument": "size_param", "refused": False, "value_type": None, "value": None}
    assert report["target_exception"].startswith("python_if.yaml calls[0] size=3 raised")
    assert any("static_argnames=('size_param',)" in s["message"] for s in report["suggestions"])
    assert "static_argnames=('size_param',)" in result.stdout


@requires_private_hooks
def test_python_if_keep_going_records_every_failing_call(cli, tmp_path):
    result, report = profile(cli, tmp_path, "python_if", "example_function", "--keep-going")
    assert result.exit_code == 3
    fn = user_functions(report)["example_function"]
    assert (fn["calls"], fn["errors"], fn["compiles"]) == (4, 4, 0)
    assert "(4 of 4 calls raised)" in report["target_exception"]


@requires_private_hooks
def test_static_argnums_compiles_once_per_value(cli, tmp_path):
    result, report = profile(cli, tmp_path, "static_args", "example_function_static")
    assert result.exit_code == 0
    fn = user_functions(report)["example_function_static"]
    assert (fn["calls"], fn["compiles"]) == (4, 2)
    cause = user_events(report, "example_function_static")[1]["cause"]
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "static_value", "size_param", "3", "7")


@requires_private_hooks
def test_lax_cond_compiles_once(cli, tmp_path):
    result, report = profile(cli, tmp_path, "lax_cond", "example_function_lax")
    assert result.exit_code == 0
    fn = user_functions(report)["example_function_lax"]
    assert (fn["calls"], fn["traces"], fn["compiles"]) == (4, 1, 1)
    assert report["suggestions"] == []


@requires_private_hooks
def test_train_loop_last_partial_batch(cli, tmp_path):
    result, report = profile(cli, tmp_path, "train_loop", "train_step")
    assert result.exit_code == 0
    fn = user_functions(report)["train_step"]
    assert (fn["calls"], fn["compiles"]) == (4, 2)
    cause = user_events(report, "train_step")[1]["cause"]
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "shape", "batch['x']", "f32[32,8]", "f32[4,8]")


@requires_private_hooks
def test_train_loop_as_a_script_with_its_arguments(cli, tmp_path):
    result, report = cli.json("run", SAMPLES / "train_loop.py", "--epochs", "3",
                              tmp_path=tmp_path)
    assert result.exit_code == 0
    # the script saw --epochs 3 (its own lines; the advice speaks of epochs too)
    assert sum(line.startswith("epoch ") for line in result.stdout.splitlines()) == 3
    fn = user_functions(report)["train_step"]
    assert fn["compiles"] == 2 and fn["calls"] is None
    [event] = [e for e in user_events(report, "train_step") if e["cause"]["code"] == "shape"]
    source = (SAMPLES / "train_loop.py").read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(source) if "= train_step(params, batch)" in text)
    assert event["call_site"].endswith(f"train_loop.py:{line} (main)")


# -- what the reports show first, and that they fit the terminal -------------------------------
@requires_private_hooks
def test_train_loop_report_leads_with_your_function_then_jax(cli, tmp_path):
    result, report = cli.json("run", SAMPLES / "train_loop.py", "--epochs", "1",
                              tmp_path=tmp_path)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("recompile-cli: "))
    assert lines[title + 1] == "train_step: 2 compiles, 1 re-compile (shape)"
    assert re.fullmatch(r"not yours: jax \d+ compiles of \d+ functions \([0-9.]+ s compile\)",
                        lines[title + 2])
    assert lines[title + 3].startswith("in all, ")
    totals = report["totals"]
    user = totals["by_owner"]["user"]
    assert (user["compiles"], user["first_compiles"], user["recompiles"]) == (2, 1, 1)
    assert totals["by_owner"]["jax"]["compiles"] == totals["compiles"] - 2 > 0
    assert totals["first_compiles"] + totals["recompiles"] == totals["compiles"]
    assert "re-traced and re-compiled" not in result.stdout


@requires_private_hooks
def test_a_single_compile_is_a_first_compile_not_a_re_compile(cli, tmp_path):
    result, report = profile(cli, tmp_path, "lax_cond", "example_function_lax")
    assert "example_function_lax: 1 compile, no re-compile" in result.stdout.splitlines()
    user = report["totals"]["by_owner"]["user"]
    assert (user["first_compiles"], user["recompiles"]) == (1, 0)
    assert report["cause_table"] == []


SAMPLE_REPORTS = [
    *[("profile", f"{name}.py:{function}", "--args", f"{spec}.yaml")
      for name, function, spec in [
          ("shapes", "slow_function", "shapes"),
          ("static_args", "example_function_static", "static_args"),
          ("lax_cond", "example_function_lax", "lax_cond"),
          ("python_if", "example_function", "python_if"),
          ("seq_lengths", "encode", "seq_lengths"),
          ("seq_lengths", "encode", "seq_lengths_bucketed"),
          ("train_loop", "train_step", "train_loop")]],
    *[("run", f"{name}.py") for name in ("train_loop", "shapes", "static_args", "lax_cond",
                                         "python_if", "seq_lengths", "distributed_step")]]


@requires_private_hooks
@pytest.mark.parametrize("command", SAMPLE_REPORTS, ids=" ".join)
def test_sample_reports_fit_100_columns(cli, monkeypatch, command):
    """In a terminal 100 columns wide no line of the report wraps, the empty ``calls`` column
    of ``run`` included: tables give way, sentences wrap themselves."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")
    verb, *args = command
    result = cli(verb, *[f"sample_programs/{a}" if a.endswith((".py", ".yaml")) or ".py:" in a
                         else a for a in args])
    lines = result.stdout.splitlines()
    assert "Functions" in lines
    too_long = [line for line in lines if len(line) > 100]
    assert not too_long, result.stdout
    functions = lines[lines.index("Functions") + 1]
    assert ("calls" in functions) == (verb == "profile" and "(no user" not in functions)
