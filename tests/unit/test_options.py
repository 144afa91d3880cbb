"""Option values given through the Python API, the guard and the CLI: one validation
(``recompile_cli.options``). A string where a list is expected is one item, never its
characters; a wrong type or an unknown value is refused naming the parameter."""

from __future__ import annotations

import pytest

from recompile_cli import options
from recompile_cli.guards.config import GuardConfig
from recompile_cli.session.model import CauseCode


@pytest.mark.parametrize("value, expected", [
    (None, None), ("train_step", ("train_step",)), (["a", "b*"], ("a", "b*")),
    (("x",), ("x",)), ([], ()),
])
def test_names_take_one_name_or_a_list(value, expected):
    assert options.names(value, "functions") == expected


@pytest.mark.parametrize("value", [5, [1], ["ok", ""], [None]])
def test_names_refuse_what_is_not_a_name(value):
    with pytest.raises(TypeError, match=r"^functions: "):
        options.names(value, "functions")


@pytest.mark.parametrize("value, expected", [
    (None, ()), ("shape", (CauseCode.SHAPE,)), ("shape, dtype", (CauseCode.SHAPE, CauseCode.DTYPE)),
    (["weak_type"], (CauseCode.WEAK_TYPE,)), ((CauseCode.SHAPE,), (CauseCode.SHAPE,)), ([], ()),
])
def test_cause_codes_take_one_code_a_comma_list_or_a_list(value, expected):
    assert options.cause_codes(value, "fail_on") == expected


@pytest.mark.parametrize("value, error", [
    ("bogus", ValueError), (["shape", "sahpe"], ValueError), ([1], ValueError), (3, TypeError),
])
def test_cause_codes_refuse_unknown_codes_naming_the_parameter(value, error):
    with pytest.raises(error, match=r"^fail_on: "):
        options.cause_codes(value, "fail_on")


def test_an_empty_mapping_of_limits_guards_nothing_and_is_refused():
    with pytest.raises(ValueError, match="an empty mapping guards nothing"):
        GuardConfig(max_compiles={})


HUGE = 10 ** 400


@pytest.mark.parametrize("value, error", [
    (-1, ValueError), (10 ** 12 + 1, ValueError), (HUGE, ValueError), (1.5, TypeError),
    (float("inf"), TypeError), (float("nan"), TypeError), (True, TypeError), ("3", TypeError),
])
def test_a_count_limit_is_an_integer_in_range(value, error):
    """Every count limit of the API, the guard and the magics (``options.limit``)."""
    with pytest.raises(error, match=r"^max_compiles=.* is not a limit: it must be a "
                                    "non-negative integer, at most 1,000,000,000,000"):
        options.limit(value, "max_compiles")
    with pytest.raises(error, match=r"^max_compiles\['train_\*'\]="):
        options.limits({"train_*": value}, "max_compiles")
    assert options.limit(10 ** 12, "max_compiles") == 10 ** 12


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e309, -0.5, HUGE, 1e7])
def test_a_percentage_is_finite_and_in_range(value):
    with pytest.raises(ValueError, match="is not a percentage: it must be a finite, "
                                         "non-negative number, at most 1,000,000"):
        options.percent(value, "compile_regression")
    assert options.percent(0, "compile_regression") == 0.0


@pytest.mark.parametrize("value", [float("inf"), float("nan"), HUGE, 0, -1, 86401])
def test_a_host_timeout_is_finite_and_in_range(value):
    with pytest.raises(ValueError, match="use a number of seconds above 0, at most 86400"):
        options.host_timeout(value)


@pytest.mark.parametrize("text", ["raise:" + "9" * 20, "warn:train_*=" + "9" * 20,
                                  "raise:warmup_calls=" + "9" * 20, "raise:1,other=" + "9" * 400])
def test_the_guard_variable_refuses_limits_out_of_range(text):
    from recompile_cli.guards import parse_guard_spec

    with pytest.raises(ValueError, match="at most 1,000,000,000,000"):
        parse_guard_spec(text)
