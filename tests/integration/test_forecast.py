"""`recompile-cli forecast` and `recompile_cli.forecast()`: nothing runs, nothing compiles; the
warm-up's gaps; gates and exit codes; the notes where a forecast cannot be exact."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from helpers import SAMPLES, user_events, user_functions
from jax_support import requires_private_hooks

import recompile_cli

PROGRAM = """
    import pathlib
    import jax, jax.numpy as jnp

    MARKER = pathlib.Path(__file__).with_name("executed.txt")

    def _write(value):
        MARKER.write_text(f"ran with {value}")

    @jax.jit
    def step(x):
        jax.debug.callback(_write, x.sum())
        return jnp.tanh(x) * 2

    @jax.jit
    def branchy(x, n):
        if n > 2:                # Python control flow on a traced value: raises while tracing
            return x
        return -x
"""

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@pytest.fixture
def prog(program, tmp_path, monkeypatch):
    path = program("fc_target", PROGRAM)
    monkeypatch.chdir(tmp_path)
    return path


@pytest.fixture
def backend_compiles():
    """How many XLA backend compiles happen while the test runs."""
    seen: list[str] = []

    def listen(event: str, duration: float, **kwargs) -> None:
        if event == COMPILE_EVENT:
            seen.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    yield seen
    from recompile_cli.capture.jax.listeners import unregister_listener

    unregister_listener("event_duration", listen)


def test_forecast_executes_and_compiles_nothing(cli, prog, tmp_path, backend_compiles):
    (tmp_path / "spec.yaml").write_text(
        "calls:\n  - args: [{array: [3]}]\n  - args: [{array: [4]}]\n  - args: [{array: [3]}]\n")
    result, report = cli.json("forecast", "fc_target:step", "--args", "spec.yaml", "--lower",
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report["totals"]["compiles"] == 2
    assert not (tmp_path / "executed.txt").exists()  # the debug callback never ran
    assert backend_compiles == []  # XLA compiled nothing
    assert report["totals"]["compile_seconds"] == 0
    assert any("side effects that run only when it executes" in w and "step" in w
               for w in report["warnings"])
    # the real run does both: the callback writes its file, and XLA compiles twice
    result, real = cli.json("profile", "fc_target:step", "--args", "spec.yaml",
                            tmp_path=tmp_path)
    assert (tmp_path / "executed.txt").exists() and real["totals"]["compiles"] == 2


@requires_private_hooks
def test_warmup_lists_the_signatures_it_does_not_cover(cli, tmp_path):
    warmup = tmp_path / "warmup.yaml"  # warms up the full batch only
    warmup.write_text("calls:\n  - args:\n      - {call: \"train_loop:init_params\"}\n"
                      "      - {x: {array: [32, 8]}, y: {array: [32, 1]}}\n")
    result, report = cli.json("forecast", f"{SAMPLES / 'train_loop.py'}:train_step", "--args",
                              SAMPLES / "train_loop.yaml", "--warmup", warmup,
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert user_functions(report)["train_step"]["compiles"] == 2
    assert "warm-up: 1 signature(s) of the workload are not covered and compile at run time:" \
        in report["warnings"]
    assert ("warm-up miss: train_step compiles at train_loop.yaml calls[0] n=4: shape at "
            "batch['x'] (f32[32,8] -> f32[4,8])") in report["warnings"]
    # the warm-up's call is call 0; the workload's four calls follow, the last one misses
    assert [e["call_index"] for e in user_events(report, "train_step") if e["compiled"]] == [
        0, 4]
    assert "warm-up miss: train_step" in result.stdout


@requires_private_hooks
def test_a_warmup_that_covers_everything_says_so(cli, tmp_path):
    warmup = tmp_path / "warmup.yaml"
    warmup.write_text("calls:\n  - sweep: {n: [32, 4]}\n    args:\n"
                      "      - {call: \"train_loop:init_params\"}\n"
                      "      - {x: {array: [\"${n}\", 8]}, y: {array: [\"${n}\", 1]}}\n")
    _, report = cli.json("forecast", f"{SAMPLES / 'train_loop.py'}:train_step", "--args",
                         SAMPLES / "train_loop.yaml", "--warmup", warmup, tmp_path=tmp_path)
    assert ("warm-up: its 2 call(s) cover every signature of the workload; the workload "
            "compiles nothing more") in report["warnings"]


@requires_private_hooks  # public-only mode cannot tell the user's functions (no locations)
def test_gates_refuse_a_workload_before_it_runs(cli, tmp_path):
    result, _ = cli.json("forecast", f"{SAMPLES / 'seq_lengths.py'}:encode", "--args",
                         SAMPLES / "seq_lengths.yaml", "--max-compiles", "8", tmp_path=tmp_path)
    assert result.exit_code == 1
    assert "encode" in result.output and "40" in result.output
    result, _ = cli.json("forecast", f"{SAMPLES / 'seq_lengths.py'}:encode", "--args",
                         SAMPLES / "seq_lengths_bucketed.yaml", "--max-compiles", "8",
                         tmp_path=tmp_path)
    assert result.exit_code == 0, result.output


@requires_private_hooks
def test_a_trace_that_raises_is_reported_not_guessed(cli, prog, tmp_path):
    (tmp_path / "spec.yaml").write_text("calls:\n  - args: [{array: [3]}, 1]\n"
                                        "  - args: [{array: [3]}, 5]\n")
    result, report = cli.json("forecast", "fc_target:branchy", "--args", "spec.yaml",
                              tmp_path=tmp_path)
    assert result.exit_code == 3  # as profile: the target raised
    assert report["target_exception"].startswith("spec.yaml calls[0] raised "
                                                 "TracerBoolConversionError")
    [event] = user_events(report, "branchy")
    assert event["error"]["argument"] == "n" and not event["compiled"]
    assert "TracerBoolConversionError" in result.stderr


def test_formats_match_profile(cli, tmp_path):
    target = f"{SAMPLES / 'shapes.py'}:slow_function"
    result = cli("forecast", target, "--args", SAMPLES / "shapes.yaml", "-f", "csv")
    real = cli("profile", target, "--args", SAMPLES / "shapes.yaml", "-f", "csv", "-q")
    assert result.exit_code == 0 and result.stdout.startswith("seq,function,")
    assert result.stdout.count("\n") == real.stdout.count("\n")  # one row per event
    result = cli("forecast", target, "--args", SAMPLES / "shapes.yaml", "-f", "markdown")
    assert result.exit_code == 0 and "slow_function" in result.stdout


# -- the Python API --------------------------------------------------------------------------------
def test_python_api_returns_the_report_of_analyse(tmp_path):
    @jax.jit
    def step(x, scale=1.0):
        return x * scale

    calls = [(jax.ShapeDtypeStruct((8,), jnp.float32),), (jnp.ones(8),),
             {"args": (jnp.ones(9),), "kwargs": {"scale": 2.0}}]
    report = recompile_cli.forecast(step, calls)
    assert isinstance(report, recompile_cli.RecompileReport)
    assert report.report.totals.compiles == 2
    assert report.session.calls == {next(iter(report.session.calls)): 3}
    warmed = recompile_cli.forecast(step, calls, warmup=[(jnp.ones(9),)])
    assert warmed.report.totals.compiles == 3  # the warm-up's own compile, then 2 misses
    assert any(w.startswith("warm-up: 2 signature(s)") for w in warmed.session.warnings)


def test_python_api_jits_a_plain_function_with_options():
    def scale(x, n):
        return x * n

    report = recompile_cli.forecast(scale, [(jnp.ones(3), 2), (jnp.ones(3), 2),
                                            (jnp.ones(3), 3)], static_argnames="n")
    assert report.report.totals.compiles == 2
    with pytest.raises(TypeError, match=r"calls\[0\]"):
        recompile_cli.forecast(scale, [jnp.ones(3)])


@requires_private_hooks
@pytest.mark.parametrize("lower", [False, True])
def test_the_cost_column_says_what_a_forecast_measured(cli, tmp_path, monkeypatch, lower):
    """A forecast compiles nothing: its re-compilations' cost column is named for the seconds
    it adds up (``trace s``, ``trace+lower s``), never ``seconds``, which in ``profile`` is
    trace + lower + compile; the numbers are the events' own trace (and lowering) seconds."""
    monkeypatch.setenv("COLUMNS", "160")
    target = f"{SAMPLES / 'train_loop.py'}:train_step"
    spec = SAMPLES / "train_loop.yaml"
    header = "trace+lower s" if lower else "trace s"
    result, report = cli.json("forecast", target, "--args", spec, *(["--lower"] * lower),
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    table = result.stdout.split("Re-compilations by cost\n", 1)[1].splitlines()
    assert table[0].split("  ")[-1].strip() == header, result.stdout
    [event] = [e for e in user_events(report, "train_step") if e["cause"]["code"] == "shape"]
    [row] = [r for r in report["cause_table"] if r["function"] == "train_step"]
    assert row["seconds"] == pytest.approx(event["trace_seconds"] + event["lower_seconds"])
    assert (event["lower_seconds"] > 0) == lower and event["compile_seconds"] == 0
    assert f"{row['seconds']:.3f}" == table[2].split()[-1]
    assert any(f"(`{header}`)" in w for w in report["warnings"])
    # profile's column is the compile's whole cost, under the name it has always had
    real = cli("profile", target, "--args", spec, "-q")
    head = real.stdout.split("Re-compilations by cost\n", 1)[1].splitlines()[0]
    assert head.split()[-1] == "seconds", real.stdout
