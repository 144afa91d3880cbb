"""Issue 19 (part G) on real JAX: the guard's front doors hold the same line as the CLI.

``RECOMPILE_CLI_GUARD`` keeps a plain limit next to globs; a guard whose listeners the program
removes says so (and raises under ``on="raise"``); nesting the same guard keeps it armed; a
glob that matches nothing warns; ``python -m recompile_cli.guards`` refuses what it cannot run
with one paragraph and exit 2; messages from hostile names are inert.
"""

from __future__ import annotations

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
from recompile_cli.guards import (
    ENV_VAR,
    GuardBlinded,
    GuardBlindWarning,
    RecompileLimitExceeded,
    RecompileWarning,
    UnmatchedBudgetWarning,
)


@pytest.fixture(autouse=True)
def keep_listeners(monkeypatch):
    """Put JAX's listener lists back after a test that clears them."""
    from jax._src import monitoring

    for name in ("_event_listeners", "_event_duration_secs_listeners",
                 "_event_time_span_listeners", "_scalar_listeners"):
        if hasattr(monitoring, name):
            monkeypatch.setattr(monitoring, name, list(getattr(monitoring, name)))


def run_guarded(tmp_path, source: str, spec: str, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, ENV_VAR: spec, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "recompile_cli.guards", *(args or [str(script)])],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


# -- 1. the environment variable -------------------------------------------------------------------
@requires_private_hooks
def test_env_plain_limit_is_kept_next_to_a_glob(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "raise:2,train_*=1")
    handle = recompile_cli.install_guard()
    try:
        train_step(jnp.ones(2))
        with pytest.raises(RecompileLimitExceeded, match="train_step compiled 2 times, limit 1"):
            train_step(jnp.ones(3))
        eval_step(jnp.ones(2))
        eval_step(jnp.ones(3))  # the plain 2 applies to eval_step
        with pytest.raises(RecompileLimitExceeded, match="eval_step compiled 3 times, limit 2"):
            eval_step(jnp.ones(4))
    finally:
        handle.uninstall()


# -- 2. a guard that can no longer see compiles ----------------------------------------------------
def test_clearing_the_listeners_raises_at_once_under_raise():
    blinded = pytest.raises(GuardBlinded, match=r"clear_event_listeners\(\) at .*removed the guard")
    with blinded, recompile_cli.guard(max_compiles=1, on="raise"):
        train_step(jnp.ones(5))
        jax.monitoring.clear_event_listeners()
        pytest.fail("not reached")  # pragma: no cover


def test_clearing_the_listeners_warns_and_the_guard_goes_on_guarding():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with recompile_cli.guard(max_compiles=1, on="warn") as guard:
            train_step(jnp.ones(6))
            jax.monitoring.clear_event_listeners()
            train_step(jnp.ones(7))
            train_step(jnp.ones(8))
    kinds = [w.category for w in caught if issubclass(w.category, RecompileWarning)]
    assert kinds == [GuardBlindWarning, RecompileWarning, RecompileWarning]
    assert caught[0].filename == __file__
    assert len(guard.blind) == 1 and len(guard.violations) == 2
    assert jax.monitoring.clear_event_listeners.__module__.startswith("jax")  # restored


@requires_private_hooks
def test_listeners_removed_another_way_are_noticed_at_the_next_compile():
    from jax._src import monitoring

    with recompile_cli.guard(max_compiles=1, on="raise"):
        train_step(jnp.ones(9))
        monitoring._event_duration_secs_listeners.clear()
        with pytest.raises(GuardBlinded, match="noticed at the next trace"):
            eval_step(jnp.ones(9))
        train_step(jnp.ones(9))  # cached: nothing to say
        with pytest.raises(RecompileLimitExceeded):  # and it guards again
            train_step(jnp.ones(10))


def test_listeners_removed_and_nothing_compiled_after_is_said_when_the_guard_ends():
    from jax._src import monitoring

    guard = recompile_cli.guard(max_compiles=1, on="raise")
    with pytest.raises(GuardBlinded, match="noticed when the guard was removed"), guard:
        train_step(jnp.ones(11))
        monitoring._event_duration_secs_listeners.clear()
    assert guard.blind


def test_python_m_guards_script_that_clears_the_listeners(tmp_path):
    result = run_guarded(tmp_path, """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: x * 2)
        f(jnp.ones(2))
        jax.monitoring.clear_event_listeners()
        f(jnp.ones(3)); f(jnp.ones(4)); f(jnp.ones(5))
        print("not reached")
    """, "raise:1")
    assert result.returncode == 1
    assert "not reached" not in result.stdout
    assert "GuardBlinded" in result.stderr and "train.py:5" in result.stderr


def test_python_m_guards_script_that_removes_listeners_quietly_fails_at_exit(tmp_path):
    result = run_guarded(tmp_path, """
        import jax, jax.numpy as jnp
        from jax._src import monitoring
        f = jax.jit(lambda x: x * 2)
        f(jnp.ones(2))
        monitoring._event_duration_secs_listeners.clear()
        print("done")
    """, "raise:1")
    assert result.returncode == 1, result.stderr
    assert "done" in result.stdout
    assert result.stderr.startswith("recompile_cli.guards: recompile-cli guard: the guard's "
                                    "jax.monitoring listeners were removed")
    assert "Traceback" not in result.stderr


# -- 3. nesting the same guard ---------------------------------------------------------------------
@requires_private_hooks
def test_nesting_the_same_guard_keeps_the_outer_one_armed():
    guard = recompile_cli.guard(max_compiles=1, on="raise")
    with guard:
        with guard:
            train_step(jnp.ones(12))
        assert guard.installed
        with pytest.raises(RecompileLimitExceeded):
            train_step(jnp.ones(13))
    assert not guard.installed


# -- 4. a budget that matches nothing --------------------------------------------------------------
def test_a_glob_that_matches_no_function_warns_at_the_users_line():
    warned = pytest.warns(UnmatchedBudgetWarning, match="'trian_step' matched no function")
    with warned as caught, recompile_cli.guard(functions="trian_step") as guard:
        train_step(jnp.ones(14))
    assert caught[0].filename == __file__
    assert len(guard.unmatched) == 1


def test_check_warns_a_limit_that_matches_no_function():
    with recompile_cli.record() as rec:
        train_step(jnp.ones(15))
    with pytest.warns(UnmatchedBudgetWarning, match="trian_step=1 matches no function"):
        checked = rec.report.check(trian_step=1)
    assert checked.warnings


# -- 5. python -m recompile_cli.guards refuses what it cannot run ----------------------------------
@pytest.mark.parametrize("make, expected", [
    (lambda p: str(p / "missing.py"), "no such file or folder"),
    (lambda p: (p / "pkg").mkdir() or str(p / "pkg"), "a folder without a __main__.py"),
    (lambda p: (p / "bad.py").write_text("x = 1\ndef (:\n") and str(p / "bad.py"),
     "does not compile"),
])
def test_python_m_guards_refuses_what_it_cannot_run(tmp_path, make, expected):
    result = run_guarded(tmp_path, "", "raise:1", make(tmp_path))
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr and "recompile_cli/" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("recompile_cli.guards: ")
    if expected == "does not compile":  # the user's SyntaxError, as python shows it
        assert 'bad.py", line 2' in result.stderr and "SyntaxError" in result.stderr


def test_python_m_guards_refuses_a_bad_variable(tmp_path):
    result = run_guarded(tmp_path, "print('ran')", "raise:2,train_*=x")
    assert result.returncode == 2
    assert result.stderr.startswith(f"recompile_cli.guards: {ENV_VAR}=")
    assert "ran" not in result.stdout


# -- 6. hostile names and static values ------------------------------------------------------------
HOSTILE = "pwn\x1b[31m\n::error::owned"


@requires_private_hooks
@pytest.mark.parametrize("on", ["warn", "raise", "log"])
def test_guard_messages_from_hostile_names_and_values_are_inert(on, caplog):
    def step(x, mode):
        return x * 2

    step.__name__ = step.__qualname__ = HOSTILE
    jitted = jax.jit(step, static_argnames="mode")
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with recompile_cli.guard(max_compiles=1, on=on, functions="pwn*") as guard:
            jitted(jnp.ones(2), mode="\x1b[2J::warning::a")
            try:
                jitted(jnp.ones(2), mode="\x1b]8;;http://x\x07\n::error::b")
            except RecompileLimitExceeded as exc:
                texts.append(str(exc))
    texts += [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert guard.violations and texts
    for text in texts + [v.message for v in guard.violations]:
        assert "\x1b" not in text and "\x07" not in text and "\n" not in text
        assert not text.startswith("::")
        assert "pwn\\x1b[31m\\n::error::owned" in text
