"""The sample programs from the design documents: counts, causes and exit codes as a user sees them."""

from __future__ import annotations

from helpers import SAMPLES, user_events, user_functions
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
        "argument": "size_param"}
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
    assert result.stdout.count("epoch ") == 3  # the script saw --epochs 3
    fn = user_functions(report)["train_step"]
    assert fn["compiles"] == 2 and fn["calls"] is None
    [event] = [e for e in user_events(report, "train_step") if e["cause"]["code"] == "shape"]
    source = (SAMPLES / "train_loop.py").read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(source) if "= train_step(params, batch)" in text)
    assert event["call_site"].endswith(f"train_loop.py:{line} (main)")
