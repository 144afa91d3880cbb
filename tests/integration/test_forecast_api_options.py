"""``recompile_cli.forecast()`` checks its arguments with ``recompile_cli.options`` before
anything is traced: a ``TypeError`` / ``ValueError`` naming the parameter, never JAX's error or
an ``'NoneType' object is not iterable``; jit options for a function that is already jitted are
refused, not silently ignored. And ``forecast --warmup`` names ``--warmup`` when its file cannot
be read."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recompile_cli

X = jax.ShapeDtypeStruct((4,), jnp.float32)


def scale(x, n=1):
    return x * n


@pytest.mark.parametrize(("fn", "calls", "kwargs", "error", "names"), [
    (None, [(X,)], {}, TypeError, "fn=None"),
    (scale, None, {}, TypeError, "calls=None"),
    (scale, "x", {}, TypeError, "calls='x'"),
    (scale, [], {}, ValueError, "calls is empty"),
    (scale, [(X,)], {"warmup": 3}, TypeError, "warmup=3"),
    (scale, [{"args": 5}], {}, TypeError, "calls[0]['args']=5"),
    (scale, [{"kwargs": [1]}], {}, TypeError, "calls[0]['kwargs']"),
    (scale, [{"arg": (X,)}], {}, TypeError, "calls[0]"),
    (scale, [X], {}, TypeError, "calls[0]"),
    (scale, [(X,)], {"hook_mode": "bogus"}, ValueError, "hook_mode='bogus'"),
    (scale, [(X,)], {"lower": "yes"}, TypeError, "lower='yes'"),
    (scale, [(X,)], {"keep_going": 1}, TypeError, "keep_going=1"),
    (jax.jit(scale), [(X, 2)], {"static_argnames": "n"}, TypeError, "static_argnames"),
    (scale, [(X,)], {"static_argnames": "m"}, ValueError, "static_argnames"),
])
def test_bad_arguments_are_refused_naming_the_parameter(fn, calls, kwargs, error, names):
    with pytest.raises(error) as info:
        recompile_cli.forecast(fn, calls, **kwargs)
    assert names in str(info.value)
    assert "\n" not in str(info.value)


def test_good_arguments_in_every_form_forecast():
    report = recompile_cli.forecast(scale, [(X,), [jnp.ones(4)], {"args": [X], "kwargs": {"n": 2}},
                                            {"kwargs": {"x": jnp.ones(5)}}],
                                    warmup=({"args": (X,)},), lower=True, keep_going=False,
                                    hook_mode="public-only")
    assert report.session.environment.hook_mode == "public-only"
    # the warm-up's x=(4,); then n passed by name (a new signature); then x=(5,) by name
    assert report.report.totals.compiles == 3


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.text(max_size=3),
                   st.sampled_from(["private", "public-only", (), [], {}, [()], [(X,)],
                                    [{"args": (X,)}], [{"args": 5}], object()]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(calls=VALUES, warmup=VALUES, lower=VALUES, keep_going=VALUES, hook_mode=VALUES)
def test_forecast_takes_any_value_or_refuses_it_naming_the_parameter(
        calls: Any, warmup: Any, lower: Any, keep_going: Any, hook_mode: Any) -> None:
    try:
        report = recompile_cli.forecast(scale, calls, warmup=warmup, lower=lower,
                                        keep_going=keep_going, hook_mode=hook_mode)
    except (TypeError, ValueError) as exc:
        assert any(name in str(exc) for name in ("calls", "warmup", "lower=", "keep_going=",
                                                 "hook_mode=")), exc
        return
    assert isinstance(lower, bool) and isinstance(keep_going, bool)
    assert report.report.totals.compiles >= 1


def test_an_unreadable_warmup_names_the_warmup_option(cli, tmp_path, program):
    path = program("fc_options", "import jax\n\n@jax.jit\ndef step(x):\n    return x\n")
    spec = tmp_path / "calls.yaml"
    spec.write_text("calls:\n  - args: [{array: [4]}]\n")
    result = cli("forecast", f"{path}:step", "--args", spec, "--warmup", tmp_path)
    assert result.exit_code == 2
    assert "with --warmup" in result.output and "with --args" not in result.output
    result = cli("forecast", f"{path}:step", "--args", tmp_path)
    assert result.exit_code == 2 and "with --args" in result.output
