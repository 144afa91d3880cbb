"""Hostile spec and budget files: encodings, sizes, nesting, duplicate keys, alias bombs, wrong
types, non-finite limits, resource limits, and the shared jit-option parser and check."""

from __future__ import annotations

import functools
import textwrap
import time
import tracemalloc

import pytest

from recompile_cli.errors import BudgetError, JitOptionError, RecompileError, SpecError
from recompile_cli.gate.budgets import load_budget_file
from recompile_cli.inputs.fields import Invalid
from recompile_cli.inputs.jit_options import check_static_args, parse_jit_options
from recompile_cli.inputs.spec import (
    ArrayKind,
    ArraySpec,
    Fill,
    load_spec,
)
from recompile_cli.inputs.yaml_doc import MAX_YAML_BYTES

BILLION_LAUGHS = textwrap.dedent("""\
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    calls: [{args: [*h]}]
""")


def write(tmp_path, text, name="spec.yaml"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text))
    return path


def spec_error(path, **limits) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(path, **limits)
    assert str(path) in str(info.value)
    return str(info.value)


def budget_error(path) -> str:
    with pytest.raises(BudgetError) as info:
        load_budget_file(path)
    assert str(path) in str(info.value)
    return str(info.value)


# -- reading YAML ------------------------------------------------------------------------------
def test_non_utf8_spec_names_the_line(tmp_path):
    message = spec_error(write(tmp_path, b"calls:\n  - args: [\xff\xfe]\n"))
    assert "line 2: the spec file is not UTF-8 text (byte 0xff" in message


def test_non_utf8_budget_file(tmp_path):
    message = budget_error(write(tmp_path, b"targets: \xe9\n", "recompile-budget.yaml"))
    assert "not UTF-8" in message


def test_oversized_spec_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as file:
        file.truncate(MAX_YAML_BYTES + 1)  # sparse: nothing is written
    message = spec_error(path)
    assert f"{MAX_YAML_BYTES + 1:,} bytes, more than the limit" in message


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "{a: " * 5000 + "1" + "}" * 5000,
                                  "".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300
                                  + "x: 1\n"])
def test_deep_nesting_is_an_error_not_a_recursion_error(tmp_path, text):
    message = spec_error(write(tmp_path, text))
    assert "nested more than 100 levels deep" in message and "line" in message


def test_duplicate_keys_name_both_lines(tmp_path):
    path = write(tmp_path, """
        calls:
          - args: [1]
            repeat: 2
            repeat: 3
    """)
    message = spec_error(path)
    assert "line 5" in message and "duplicate key 'repeat' (first given on line 4)" in message
    budget = write(tmp_path, "targets:\n  - target: a.py:f\n    budgets: {f: {max_compiles: 1, "
                             "max_compiles: 2}}\n", "recompile-budget.yaml")
    assert "duplicate key 'max_compiles'" in budget_error(budget)


def test_merge_keys_still_work(tmp_path):
    spec = load_spec(write(tmp_path, "defaults: &base {dtype: float16, fill: ones}\n"
                                     "calls: [{args: [{<<: *base, array: [2]}]}]\n"))
    assert spec.cases[0].args[0] == ArraySpec(ArrayKind.ARRAY, (2,), "float16", Fill.ONES, 0)


def test_billion_laughs_is_refused_quickly(tmp_path):
    assert len(BILLION_LAUGHS) < 600
    started = time.perf_counter()
    message = spec_error(write(tmp_path, BILLION_LAUGHS))
    assert time.perf_counter() - started < 5
    assert "expands to more than 100,000 values" in message
    assert "expands to" in budget_error(write(tmp_path, BILLION_LAUGHS, "b.yaml"))


def test_an_alias_that_contains_itself_is_refused(tmp_path):
    message = spec_error(write(tmp_path, "calls: &c [{args: *c}]\n"))
    assert "refers to a value that contains it" in message


def test_a_few_aliases_are_fine(tmp_path):
    spec = load_spec(write(tmp_path, """
        calls:
          - args: &xs [{array: [3]}, 1]
          - args: *xs
    """))
    assert len(spec.cases) == 2 and spec.cases[1].args[1] == 1


# -- spec fields ------------------------------------------------------------------------------
@pytest.mark.parametrize("text, field, words", [
    ("calls: [{args: [{array: [2], seed: -1}]}]\n", "calls[0].args[0].seed", "non-negative"),
    ("calls: [{args: [{array: [2], seed: 1.5}]}]\n", "calls[0].args[0].seed", "integer"),
    ("calls: [{args: [{array: [.nan]}]}]\n", "calls[0].args[0].array", "non-negative integers"),
    ("calls: [{args: [{array: [true]}]}]\n", "calls[0].args[0].array", "non-negative integers"),
    ("calls: [{kwargs: {1: 2}}]\n", "calls[0].kwargs[1]", "a keyword is a name"),
    ("calls: [{sweep: {'a-b': [1]}}]\n", "calls[0].sweep.a-b", "sweep variable"),
    ("calls: [{sweep: {n: {range: [5, 1]}}}]\n", "calls[0].sweep.n.range", "is empty"),
    ("jit: {static_argnames: [1]}\n", "jit.static_argnames[0]", "argument name"),
    ("jit: {static_argnames: 'not a name'}\n", "jit.static_argnames", "argument name"),
    ("jit: {static_argnums: true}\n", "jit.static_argnums", "int"),
    ("jit: [static_argnums]\n", "jit", "mapping"),
    ("defaults: [1]\n", "defaults", "mapping"),
])
def test_more_spec_fields(tmp_path, text, field, words):
    message = spec_error(write(tmp_path, text))
    assert f"field {field}:" in message and words in message


def test_repeat_beyond_the_call_limit_fails_before_expanding(tmp_path):
    tracemalloc.start()
    try:
        message = spec_error(write(tmp_path, "calls: [{args: [1], repeat: 100000000}]\n"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 ** 2
    assert "field calls[0]:" in message and "100,000,000 calls" in message
    assert "limit of 100,000 calls" in message and "--max-calls" in message


def test_sweep_product_beyond_the_call_limit(tmp_path):
    path = write(tmp_path, """
        calls:
          - args: [1]
          - sweep: {a: {range: [1000000000000]}, b: {range: [0, 1000000000000000000000, 1]}}
            args: ["${a}", "${b}"]
    """)
    message = spec_error(path)
    assert "field calls[1]:" in message and "line 4" in message and "more than the limit" in message


def test_call_limit_is_a_parameter(tmp_path):
    path = write(tmp_path, "calls: [{sweep: {n: {range: [50]}}, args: ['${n}'], repeat: 2}]\n")
    assert len(load_spec(path).cases) == 100
    assert len(load_spec(path, max_calls=100).cases) == 100
    assert "limit of 99 calls" in spec_error(path, max_calls=99)


def test_array_byte_limit(tmp_path):
    path = write(tmp_path, "calls: [{args: [{numpy: [100000, 100000]}]}]\n")
    message = spec_error(path)
    assert "field calls[0].args[0].numpy:" in message and "40,000,000,000 bytes" in message
    assert "--max-array-bytes" in message
    small = write(tmp_path, "calls: [{args: [{array: [16], dtype: float64}]}]\n", "s.yaml")
    assert load_spec(small, max_array_bytes=128).cases
    assert "more than the limit of 127 bytes" in spec_error(small, max_array_bytes=127)


def test_placeholder_shapes_are_checked_after_substitution(tmp_path):
    path = write(tmp_path, "calls: [{sweep: {n: [2, 1000000]}, args: [{array: ['${n}', '${n}']}]}]\n")
    message = spec_error(path, max_array_bytes=1024 ** 2)
    assert "shape [1000000, 1000000]" in message


# -- budget files -----------------------------------------------------------------------------
BUDGET = "targets:\n  - target: prog.py:step\n{extra}    budgets: {{step: {{{limits}}}}}\n"


@pytest.mark.parametrize("extra, limits, field, words", [
    ("    no_jit: 'false'\n", "max_compiles: 1", "targets[0].no_jit", "true or false"),
    ("    no_jit: 1\n", "max_compiles: 1", "targets[0].no_jit", "true or false"),
    ("", "tolerance: .nan", "targets[0].budgets.step.tolerance", "finite, non-negative"),
    ("", "max_compile_seconds: .inf", "targets[0].budgets.step.max_compile_seconds", "finite"),
    ("", "max_compile_seconds: -1", "targets[0].budgets.step.max_compile_seconds", "finite"),
    ("", "tolerance: 1e400", "targets[0].budgets.step.tolerance", "finite"),
    ("", "max_compiles: 1.5", "targets[0].budgets.step.max_compiles", "non-negative integer"),
    ("", "allowed_causes: [shape, 3]", "targets[0].budgets.step.allowed_causes[1]",
     "is not a cause code"),
    ("    static_argnums: [x]\n", "max_compiles: 1", "targets[0].static_argnums[0]", "int"),
    ("    static_argnames: 3\n", "max_compiles: 1", "targets[0].static_argnames", "name"),
    ("    script_args: [[1]]\n", "max_compiles: 1", "targets[0].script_args[0]", "string"),
    ("    args: ''\n", "max_compiles: 1", "targets[0].args", "non-empty string"),
    # past the range of ``ranges``: a limit that could never fail
    ("", "max_compiles: 1000000000001", "targets[0].budgets.step.max_compiles",
     "at most 1,000,000,000,000"),
    ("", f"max_equations: {10 ** 400}", "targets[0].budgets.step.max_equations",
     "at most 1,000,000,000,000"),
    ("", "max_traces: -1", "targets[0].budgets.step.max_traces", "non-negative integer"),
    ("", "max_compile_seconds: 1e300", "targets[0].budgets.step.max_compile_seconds",
     "at most 100,000,000"),
    ("", "tolerance: 1e300", "targets[0].budgets.step.tolerance", "at most 10,000"),
    ("    steady_state_after: 1000000000001\n", "max_compiles: 1",
     "targets[0].steady_state_after", "at most 1,000,000,000,000"),
    ("", "allow_unrecorded: 'yes'", "targets[0].budgets.step.allow_unrecorded",
     "true or false"),
])
def test_budget_field_errors(tmp_path, extra, limits, field, words):
    path = write(tmp_path, BUDGET.format(extra=extra, limits=limits), "recompile-budget.yaml")
    message = budget_error(path)
    assert f"field {field}:" in message and words in message and "line " in message


def test_budget_jit_options_go_through_the_shared_parser(tmp_path):
    path = write(tmp_path, BUDGET.format(extra="    static_argnames: [a, b]\n    static_argnums: "
                                               "1\n    no_jit: false\n",
                                         limits="max_compiles: 1"), "recompile-budget.yaml")
    target = load_budget_file(path).targets[0]
    assert target.jit_options == (("static_argnames", ("a", "b")), ("static_argnums", (1,)))
    assert target.no_jit is False


@pytest.mark.parametrize("toml, field, words", [
    ('no_jit = "false"\nbudgets = { step = { max_compiles = 1 } }', "targets[0].no_jit",
     "true or false"),
    ("budgets = { step = { tolerance = nan } }", "targets[0].budgets.step.tolerance", "finite"),
    ("budgets = { step = { max_compile_seconds = inf } }",
     "targets[0].budgets.step.max_compile_seconds", "finite"),
    (f"budgets = {{ step = {{ max_compiles = {10 ** 13} }} }}",
     "targets[0].budgets.step.max_compiles", "at most 1,000,000,000,000"),
    ('static_argnums = ["a"]\nbudgets = { step = { max_compiles = 1 } }',
     "targets[0].static_argnums[0]", "int"),
    ("budgets = { step = { max_compiles = 1979-05-27 } }",
     "targets[0].budgets.step.max_compiles", "non-negative integer"),
    ("script_args = [1979-05-27]\nbudgets = { step = { max_compiles = 1 } }",
     "targets[0].script_args[0]", "string"),
])
def test_toml_types_get_the_same_field_messages(tmp_path, toml, field, words):
    path = write(tmp_path, '[[tool.recompile-cli.targets]]\ntarget = "prog.py:step"\n' + toml
                 + "\n", "pyproject.toml")
    message = budget_error(path)
    assert f"field {field}:" in message and words in message


def test_toml_tool_that_is_not_a_table(tmp_path):
    assert "no [tool.recompile-cli] table" in budget_error(write(tmp_path, "tool = 3\n",
                                                                 "pyproject.toml"))


# -- jit options ---------------------------------------------------------------------------------
def test_parse_jit_options():
    assert parse_jit_options(None) == {}
    assert parse_jit_options({"static_argnames": "mode", "donate_argnums": [0, -1]}) == {
        "static_argnames": ("mode",), "donate_argnums": (0, -1)}
    with pytest.raises(Invalid) as info:
        parse_jit_options({"static_argnums": [0, "1"]}, ("jit",))
    assert info.value.where == ("jit", "static_argnums", 1)
    with pytest.raises(Invalid):
        parse_jit_options({"donate_argnames": ["a"]}, (), ("static_argnames",))


def plain(x, n, *, mode="fast"):
    return x


def positional_only(x, n, /):
    return x


def star_args(*args, **kwargs):
    return args


@pytest.mark.parametrize("fn, options", [
    (plain, {"static_argnames": ("n", "mode"), "static_argnums": (1, -2)}),
    (plain, {"donate_argnums": (0,), "donate_argnames": ("x",)}),
    (star_args, {"static_argnames": ("anything",), "static_argnums": (9,)}),
    (positional_only, {"static_argnums": (1,)}),
    (functools.partial(plain, 1), {"static_argnums": (0,)}),
    (len, {"static_argnums": (0,)}),
    (plain, {}),
])
def test_check_static_args_accepts(fn, options):
    check_static_args(fn, options)


@pytest.mark.parametrize("fn, options, words", [
    (plain, {"static_argnames": ("nn",)}, "static_argnames names 'nn'"),
    (plain, {"static_argnums": (2,)}, "positions run from 0 to 1"),
    (plain, {"static_argnums": (-3,)}, "takes 2 positional"),
    (positional_only, {"static_argnames": ("n",)}, "static_argnums for a positional-only"),
    (lambda: 0, {"donate_argnums": (0,)}, "no position is valid"),
    (plain, {"static_args": (0,)}, "Unknown jit option"),
])
def test_check_static_args_refuses(fn, options, words):
    with pytest.raises(JitOptionError) as info:
        check_static_args(fn, options, "spec.yaml")
    assert words in str(info.value) and "(from spec.yaml)" in str(info.value)
    assert isinstance(info.value, RecompileError) and info.value.exit_code == 2
