"""The runtime guard on real JAX: warn / raise / log at the user's call, with the cause."""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import pytest
from guard_targets import eval_step, train_step
from helpers import ROOT
from jax_support import requires_private_hooks

import recompile_cli
from recompile_cli.guards import ENV_VAR, RecompileLimitExceeded, RecompileWarning


def line_of(marker: str) -> int:
    """The line of this file that ends with ``# marker``."""
    source, start = inspect.getsourcelines(sys.modules[__name__])
    return next(i for i, text in enumerate(source, start or 1)
                if text.rstrip().endswith(f"# {marker}"))


@requires_private_hooks
def test_warn_names_function_cause_argument_values_and_call_site():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with recompile_cli.guard(max_compiles=1, on="warn") as guard:
            train_step(jnp.ones((32, 8)))
            train_step(jnp.ones((32, 8)))
            train_step(jnp.ones((4, 8)))  # warn-here
    ours = [w for w in caught if issubclass(w.category, RecompileWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert "train_step" in message and "shape" in message
    assert "at x: f32[32,8] -> f32[4,8]" in message
    assert "Suggestion:" in message
    assert ours[0].filename == __file__
    assert ours[0].lineno == line_of("warn-here")
    violation = ours[0].message.violation
    assert (violation.function, violation.cause, violation.argument) == ("train_step", "shape",
                                                                         "x")
    assert (violation.before, violation.after) == ("f32[32,8]", "f32[4,8]")
    assert (violation.compiles, violation.limit) == (2, 1)
    assert guard.violations == [violation]


@requires_private_hooks
def test_the_guard_message_names_each_cause_once_in_relative_paths(monkeypatch):
    """The guard's message is the gate's (``analysis.messages``): three leaves of a batch that
    shrank are one cause, the suggestion ends it, and its paths are relative (issue 33)."""
    batch_step = jax.jit(lambda batch: sum(v.sum() for v in batch.values()))
    monkeypatch.chdir(os.path.dirname(__file__))
    with recompile_cli.guard(max_compiles=1, on="log") as guard:
        for n in (16, 8):
            batch_step({"a": jnp.ones((n, 4)), "b": jnp.ones((n, 2)), "c": jnp.ones((n,))})
    [violation] = guard.violations
    here = os.path.basename(__file__)
    assert violation.message.startswith(
        "recompile-cli guard: <lambda> compiled 2 times, limit 1. This compile: shape at "
        f"batch: 3 leaves, dim 0 16 -> 8 ({here}:")
    assert "Suggestion: " in violation.message and violation.suggestion
    assert "batch['a']" not in violation.message.split("Suggestion:")[0]
    assert violation.call_site.startswith(f"{here}:") and violation.defined_at.startswith(here)


@requires_private_hooks
def test_warnings_filter_can_turn_it_into_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        with recompile_cli.guard(max_compiles=1):
            train_step(jnp.ones(3))
            with pytest.raises(RecompileWarning, match="shape"):
                train_step(jnp.ones(4))


@requires_private_hooks
def test_raise_comes_out_of_the_call_that_recompiled_and_jax_stays_usable():
    with recompile_cli.guard(max_compiles=1, on="raise"):
        assert float(train_step(jnp.ones(3))) == 6.0
        with pytest.raises(RecompileLimitExceeded) as info:
            train_step(jnp.ones(5))  # raise-here
        # the same arguments compile again (JAX kept no executable) and raise again
        with pytest.raises(RecompileLimitExceeded, match="repeats one that already exceeded"):
            train_step(jnp.ones(5))
        assert float(train_step(jnp.ones(3))) == 6.0  # a cache hit: no error
    error = info.value
    assert isinstance(error, RuntimeError)
    assert error.violation.cause == "shape"
    assert "f32[3] -> f32[5]" in str(error)
    frames = [f for f in __import__("traceback").extract_tb(error.__traceback__)
              if f.filename == __file__]
    assert frames and frames[0].lineno == line_of("raise-here")
    assert float(train_step(jnp.ones(5))) == 10.0  # uninstalled: compiles and runs


@requires_private_hooks
def test_log_mode_emits_a_record_at_the_call_site(caplog):
    caplog.set_level(logging.WARNING, logger="recompile_cli.guard")
    with recompile_cli.guard(max_compiles=1, on="log"):
        train_step(jnp.ones(3))
        train_step(jnp.ones((3, 1)))  # log-here
    records = [r for r in caplog.records if r.name == "recompile_cli.guard"]
    assert len(records) == 1
    record = records[0]
    assert record.levelno == logging.WARNING
    assert "train_step" in record.getMessage() and "shape" in record.getMessage()
    assert record.recompile.argument == "x"
    assert (record.pathname, record.lineno) == (__file__, line_of("log-here"))


def test_no_warning_on_cache_hits_or_within_the_limit():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with recompile_cli.guard(max_compiles=2, on="raise") as guard:
            x, y = jnp.ones(3), jnp.ones(4)
            for _ in range(50):
                train_step(x)
                train_step(y)
    assert guard.violations == []


def test_function_globs_choose_what_is_guarded():
    with recompile_cli.guard(max_compiles=1, on="raise", functions=["train_*"]):
        for n in (1, 2, 3):
            eval_step(jnp.ones(n))  # not guarded
        train_step(jnp.ones(1))
        with pytest.raises(RecompileLimitExceeded, match="train_step"):
            train_step(jnp.ones(2))


def test_limits_per_glob():
    with recompile_cli.guard(max_compiles={"eval_*": 2}, on="raise"):
        for n in (1, 2, 3):
            train_step(jnp.ones(n))  # matches no glob: not guarded
        eval_step(jnp.ones(1))
        eval_step(jnp.ones(2))
        with pytest.raises(RecompileLimitExceeded, match=r"eval_step compiled 3 times, limit 2"):
            eval_step(jnp.ones(3))


@requires_private_hooks
def test_warmup_calls_are_not_counted_for_functions_jitted_under_the_guard():
    with recompile_cli.guard(max_compiles=0, warmup_calls=2, on="raise"):
        step = jax.jit(lambda x: x * 3.0)
        step(jnp.ones(1))  # call 1: warm-up
        step(jnp.ones(2))  # call 2: warm-up
        step(jnp.ones(1))  # a hit
        with pytest.raises(RecompileLimitExceeded, match="shape"):
            step(jnp.ones(5))  # call 4: counted, over the limit 0
    assert jax.jit is not None and not hasattr(jax.jit, "__self__")  # jax.jit restored


def test_warmup_calls_say_when_they_cannot_apply():
    with recompile_cli.guard(max_compiles=1, warmup_calls=5, on="raise"):
        train_step(jnp.ones(1))
        with pytest.raises(RecompileLimitExceeded, match="warmup_calls does not apply"):
            train_step(jnp.ones(2))


def test_install_guard_handle_and_session():
    handle = recompile_cli.install_guard(max_compiles=1, on="raise")
    try:
        assert handle.installed
        train_step(jnp.ones(2))
    finally:
        handle.uninstall()
    assert not handle.installed
    train_step(jnp.ones(7))  # no longer guarded
    report = recompile_cli.analyse(handle.session())
    assert report.compiles("train_step") == 1


def test_install_guard_reads_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "raise:train_*=1")
    handle = recompile_cli.install_guard()
    try:
        assert handle.config.on == "raise"
        train_step(jnp.ones(1))
        eval_step(jnp.ones(1))
        eval_step(jnp.ones(2))
        with pytest.raises(RecompileLimitExceeded):
            train_step(jnp.ones(2))
    finally:
        handle.uninstall()
    monkeypatch.setenv(ENV_VAR, "off")
    assert not recompile_cli.install_guard().installed


@requires_private_hooks
def test_python_m_recompile_cli_guard_runs_a_script_with_the_env_guard(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import jax, jax.numpy as jnp

        @jax.jit
        def train_step(x):
            return x.sum()

        print("args", sys.argv[1:])
        train_step(jnp.ones(8))
        train_step(jnp.ones(3))  # the last, smaller batch
        print("not reached")
    """))
    env = {**os.environ, ENV_VAR: "raise:train_*=1", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m",
                             "recompile_cli.guards", str(script), "--epochs", "1"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "args ['--epochs', '1']" in result.stdout
    assert "not reached" not in result.stdout
    assert "recompile_cli.guards.RecompileLimitExceeded" in result.stderr  # not __main__'s
    assert "train_step compiled 2 times, limit 1" in result.stderr
    assert "f32[8] -> f32[3]" in result.stderr


@requires_private_hooks
@pytest.mark.parametrize("mode, handled", [
    ("raise", "recompile_cli.guards.RecompileLimitExceeded"),
    ("warn", "recompile_cli.guards.RecompileWarning"),  # made an error by its class
])
def test_python_m_recompile_cli_guard_raises_the_classes_a_script_can_catch(tmp_path, mode,
                                                                            handled):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import warnings
        import jax, jax.numpy as jnp
        import recompile_cli.guards

        warnings.filterwarnings("error", category=recompile_cli.guards.RecompileWarning)

        @jax.jit
        def train_step(x):
            return x.sum()

        train_step(jnp.ones(8))
        try:
            train_step(jnp.ones(3))
        except {handled} as exc:
            print("caught", type(exc).__module__, exc.violation.compiles)
    """))
    env = {**os.environ, ENV_VAR: f"{mode}:train_*=1", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m",
                             "recompile_cli.guards", str(script)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "caught recompile_cli.guards 2" in result.stdout
    assert "Traceback" not in result.stderr
