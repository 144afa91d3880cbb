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
