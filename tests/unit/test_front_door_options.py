"""Issue 19 (part G), without JAX: every front door of the Python API and the guard checks its
options with ``recompile_cli.options`` (a ``TypeError``/``ValueError`` naming the parameter, or
a working result, never another exception and never a gate that guards nothing);
``RECOMPILE_CLI_GUARD`` keeps a plain limit next to globs; the guard's messages stay inert."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from builders import f32_event, session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recompile_cli
from recompile_cli import options
from recompile_cli.analysis.report import build_report as analyse_session
from recompile_cli.api import RecompileReport, Recording, to_pandas
from recompile_cli.guards import ENV_VAR, parse_guard_spec
from recompile_cli.guards.errors import (
    GuardBlinded,
    GuardViolation,
    RecompileLimitExceeded,
    RecompileWarning,
    UnmatchedBudgetWarning,
)
from recompile_cli.session.model import HookMode, Owner

# -- RECOMPILE_CLI_GUARD ---------------------------------------------------------------------------


def test_a_plain_limit_next_to_globs_is_the_limit_of_your_other_functions():
    config = parse_guard_spec("raise:2,train_*=1")
    assert config.on == "raise"
    assert config.limit_of("train_step", Owner.USER) == 1
    assert config.limit_of("eval_step", Owner.USER) == 2
    assert config.limit_of("eval_step", Owner.LIBRARY) is None  # a plain N: yours only
    assert config.limit_of("train_lib", Owner.LIBRARY) == 1  # a glob: libraries' too
    assert config.limit_of("train_x", Owner.JAX) is None
    # globs alone guard only what they match; the order of the items does not matter
    assert parse_guard_spec("raise:train_*=1").limit_of("eval_step", Owner.USER) is None
    assert parse_guard_spec("raise:train_*=1,2") == config


@pytest.mark.parametrize("text", ["raise:-1", "raise:two", "raise:train_*=x", "warn:1.5",
                                  "shout:1", "raise:=1", "raise:warmup_calls=-2",
                                  "raise:train_*=1e3"])
def test_bad_values_of_the_variable_are_one_error_naming_it(text):
    with pytest.raises(ValueError) as info:
        parse_guard_spec(text)
    message = str(info.value)
    assert message.startswith(f"{ENV_VAR}=") and "\n" not in message
    assert "MODE[:ITEM,...]" in message


def test_install_guard_refuses_a_bad_variable_before_installing(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "raise:train_*=-1")
    with pytest.raises(ValueError, match=ENV_VAR):
        recompile_cli.install_guard()


# -- the options module ----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "error"), [(-1, ValueError), (True, TypeError),
                                              (1.0, TypeError), ("1", TypeError),
                                              (None, TypeError)])
def test_a_limit_is_a_non_negative_integer(value, error):
    with pytest.raises(error, match=r"^max_compiles="):
        options.limit(value, "max_compiles")
    assert options.limit(3, "max_compiles") == 3


def test_limits_refuse_an_empty_mapping_and_bad_globs_or_values():
    assert options.limits({"train_*": 1}, "max_compiles") == {"train_*": 1}
    with pytest.raises(ValueError, match="empty mapping guards nothing"):
        options.limits({}, "max_compiles")
    with pytest.raises(TypeError, match=r"^max_compiles: 3 is not a function name"):
        options.limits({3: 1}, "max_compiles")
    with pytest.raises(ValueError, match=r"^max_compiles\['f'\]=-1"):
        options.limits({"f": -1}, "max_compiles")


def test_hook_modes_and_choices():
    assert options.hook_mode("public-only") is HookMode.PUBLIC_ONLY
    assert options.hook_mode(HookMode.PRIVATE) is HookMode.PRIVATE
    with pytest.raises(ValueError, match=r"^hook_mode='bogus': use one of private, public-only"):
        options.hook_mode("bogus")
    with pytest.raises(TypeError, match=r"^fmt=None"):
        options.choice(None, "fmt", ["table"])


# -- the API ---------------------------------------------------------------------------------------


def report() -> RecompileReport:
    events = [f32_event(0, "train_step", n=3, defined_at="prog.py:3"),
              f32_event(1, "train_step", n=4, defined_at="prog.py:3")]
    return RecompileReport(analyse_session(session(events)))


def test_record_refuses_a_bogus_hook_mode_instead_of_falling_back():
    with pytest.raises(ValueError, match="hook_mode='bogus'"):
        recompile_cli.record(hook_mode="bogus")  # type: ignore[arg-type]


def test_render_and_to_pandas_name_the_parameter():
    with pytest.raises(ValueError, match="fmt='bogus'"):
        report().render("bogus")
    with pytest.raises(TypeError, match=r"to_pandas\(report\)"):
        to_pandas(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"analyse\(session\)"):
        recompile_cli.analyse(None)  # type: ignore[arg-type]


def test_check_warns_a_limit_that_matches_no_function_and_keeps_it_in_the_result():
    with pytest.warns(UnmatchedBudgetWarning, match="trian_step=1 matches no function") as caught:
        checked = report().check(trian_step=1, train_step=5)
    assert caught[0].filename == __file__  # the user's call, not ours
    assert checked.violations == []
    assert any("'trian_step' matches no function" in w for w in checked.warnings)


# -- the guard's messages --------------------------------------------------------------------------

HOSTILE = "evil\x1b[31m\n::error::pwned\r\x07\u202e"


def violation(message: str) -> GuardViolation:
    return GuardViolation(function=HOSTILE, defined_at=None, compiles=2, limit=1, cause="shape",
                          argument=None, before=None, after=None, detail="", call_site=None,
                          suggestion=None, message=message)


@pytest.mark.parametrize("make", [
    lambda: RecompileWarning(violation(f"recompile-cli guard: {HOSTILE} compiled 2 times")),
    lambda: RecompileLimitExceeded(violation(f"recompile-cli guard: {HOSTILE} compiled")),
    lambda: GuardBlinded(f"recompile-cli guard: {HOSTILE}"),
    lambda: UnmatchedBudgetWarning(f"recompile-cli guard: the budget {HOSTILE}"),
])
def test_guard_messages_carry_no_control_characters_and_start_no_workflow_command(make):
    text = str(make())
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or c == "\u202e" for c in text)
    assert all(not line.lstrip().startswith("::") for line in text.splitlines())
    assert "\\x1b[31m\\n::error::pwned" in text  # shown, inert


# -- Hypothesis: arbitrary option values through every front door ----------------------------------

VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=True),
              st.text(max_size=8), st.binary(max_size=4),
              st.sampled_from(["warn", "raise", "log", "table", "json", "private",
                               "public-only", "shape", "train_*", "", "*", HOSTILE])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner),
                            st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), inner,
                                            max_size=3)),
    max_leaves=6)


def refused_naming(exc: BaseException, *parameters: str) -> bool:
    return isinstance(exc, (TypeError, ValueError)) and any(p in str(exc) for p in parameters)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(max_compiles=VALUES, warmup_calls=VALUES, on=VALUES, functions=VALUES,
       check_hosts=VALUES, host_timeout=st.one_of(VALUES, st.floats(-1, 1e6)))
def test_guard_takes_any_option_value_or_refuses_it_naming_the_parameter(
        max_compiles: Any, warmup_calls: Any, on: Any, functions: Any, check_hosts: Any,
        host_timeout: Any) -> None:
    try:
        guard = recompile_cli.guard(max_compiles, warmup_calls=warmup_calls, on=on,
                                    functions=functions, check_hosts=check_hosts,
                                    host_timeout=host_timeout)
    except Exception as exc:
        assert refused_naming(exc, "max_compiles", "warmup_calls", "on=", "functions",
                              "check_hosts=", "host_timeout="), exc
        return
    config = guard.config
    # check_hosts is a real bool; the wait is finite, above 0 and at most a day
    assert isinstance(check_hosts, bool)
    assert not isinstance(host_timeout, bool | str) and 0 < host_timeout <= 86400
    assert config.host_timeout == (float(host_timeout) if check_hosts else None)
    assert config.enabled and not guard.installed
    guards_something = (config.limit_of("train_step", Owner.USER) is not None
                        or bool(config.patterns()))
    assert guards_something  # never a guard that silently guards nothing
    assert config.on in ("warn", "raise", "log")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=VALUES, keep_caches=VALUES, hook_mode=VALUES, events_log=VALUES)
def test_record_takes_any_option_value_or_refuses_it_naming_the_parameter(
        target: Any, keep_caches: Any, hook_mode: Any, events_log: Any) -> None:
    try:
        recording = recompile_cli.record(target, keep_caches=keep_caches, hook_mode=hook_mode,
                                         events_log=events_log)
    except Exception as exc:
        assert refused_naming(exc, "target", "keep_caches", "hook_mode", "events_log"), exc
        return
    assert isinstance(recording, Recording) and not recording.running
    assert recording.hook_mode in tuple(HookMode)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(max_compiles=VALUES, fail_on=VALUES, per_function=st.dictionaries(
    st.sampled_from(["train_step", "train_*", "trian", "x"]), VALUES, max_size=2),
    fmt=VALUES, session_value=VALUES)
def test_check_render_analyse_take_any_value_or_refuse_it_naming_the_parameter(
        max_compiles: Any, fail_on: Any, per_function: dict[str, Any], fmt: Any,
        session_value: Any) -> None:
    base = report()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnmatchedBudgetWarning)
            checked = base.check(max_compiles, fail_on, **per_function)
    except Exception as exc:
        assert refused_naming(exc, "max_compiles", "fail_on", *per_function), exc
    else:
        assert checked.gate is not None
        if (isinstance(max_compiles, int) and max_compiles < 2) or per_function.get(
                "train_step", 2) in (0, 1):
            assert checked.violations  # train_step compiled twice: the gate saw it
    try:
        base.render(fmt)
    except Exception as exc:
        assert refused_naming(exc, "fmt"), exc
    with pytest.raises(TypeError, match=r"analyse\(session\)"):
        recompile_cli.analyse(session_value)
