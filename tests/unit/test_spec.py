"""Reading the argument spec: the value forms, sweeps and placeholders, and every validation
error. (The values built for real, JAX arrays among them, are tested in
``tests/integration/test_spec_values.py``.)"""

from __future__ import annotations

import pytest
from builders import write

from recompile_cli.errors import SpecError
from recompile_cli.inputs.spec import (
    ArrayKind,
    ArraySpec,
    Fill,
    load_spec,
)


def test_issue_example_expands_repeat_and_sweeps(tmp_path):
    spec = load_spec(write(tmp_path, """
        jit:
          static_argnames: [mode]
        defaults: {dtype: float32, fill: normal, seed: 0}
        calls:
          - args: [{array: [100, 100]}, 3]
            kwargs: {mode: "fast"}
            repeat: 2
          - sweep: {n: [32, 32, 17]}
            args: [{array: ["${n}", 128], dtype: bfloat16}]
          - sweep: {n: {range: [1, 41]}}
            args: [{array: ["${n}"]}]
    """))
    assert spec.jit_options == {"static_argnames": ("mode",)}
    assert len(spec.cases) == 2 + 3 + 40
    first = spec.cases[0]
    assert first.args == (ArraySpec(ArrayKind.ARRAY, (100, 100), "float32", Fill.NORMAL, 0), 3)
    assert first.kwargs == {"mode": "fast"}
    assert first.label == "spec.yaml calls[0] (repeat 1/2)"
    assert spec.cases[4].args[0] == ArraySpec(ArrayKind.ARRAY, (17, 128), "bfloat16", Fill.NORMAL, 0)
    assert spec.cases[4].label == "spec.yaml calls[1] n=17"
    assert [c.args[0].shape for c in spec.cases[5:]] == [(n,) for n in range(1, 41)]


def test_whole_placeholder_keeps_the_type(tmp_path):
    spec = load_spec(write(tmp_path, """
        calls:
          - sweep: {n: [3]}
            args: ["${n}", {array: ["${n}"]}]
    """))
    assert spec.cases[0].args[0] == 3
    assert spec.cases[0].args[1].shape == (3,)


def test_missing_calls_means_one_call_without_arguments(tmp_path):
    spec = load_spec(write(tmp_path, "jit: {static_argnums: 1}"))
    assert [(c.args, c.kwargs) for c in spec.cases] == [((), {})]
    assert spec.jit_options == {"static_argnums": (1,)}


@pytest.mark.parametrize("text, field, line, words", [
    ("calls:\n  - args: [{array: [2, -1]}]\n", "calls[0].args[0].array", 2, "non-negative"),
    ("calls:\n  - args: [{array: [2], dtype: float31}]\n", "calls[0].args[0].dtype", 2,
     "unknown dtype 'float31'"),
    ("calls:\n  - args: [{array: [2], fill: random}]\n", "calls[0].args[0].fill", 2,
     "unknown fill"),
    ("calls:\n  - args: [1]\n    repeat: 0\n", "calls[0].repeat", 3, "positive integer"),
    ("calls:\n  - args: [1]\n    repaet: 2\n", "calls[0].repaet", 3, "unknown field 'repaet'"),
    ("calls:\n  - sweep: {n: [1]}\n    args: [\"${m}\"]\n", "calls[0].args[0]", 3,
     "placeholder ${m}"),
    ("calls:\n  - sweep: {n: {range: [1, 5, 0]}}\n", "calls[0].sweep.n.range", 2, "step"),
    ("calls:\n  - sweep: {n: []}\n", "calls[0].sweep.n", 2, "non-empty"),
    ("calls: []\n", "calls", 1, "non-empty list"),
    ("", "(top level)", None, "the spec is empty"),
    ("# only a comment\n", "(top level)", None, "the spec is empty"),
    ("calls:\n  - args: {a: 1}\n", "calls[0].args", 2, "list"),
    ("jit: {static_argnums: [a]}\n", "jit.static_argnums[0]", 1, "int"),
    ("jit: {static: [1]}\n", "jit.static", 1, "unknown field 'static'"),
    ("defaults: {dtype: f32}\n", "defaults.dtype", 1, "unknown dtype"),
    ("calls:\n  - args: [{array: [2], numpy: [2]}]\n", "calls[0].args[0]", 2, "one form"),
    ("calls:\n  - args: [{scalar: abc}]\n", "calls[0].args[0].scalar", 2, "number"),
    # a scalar its dtype cannot hold: exit 2 here, not an OverflowError while building the call
    ("calls:\n  - args: [{scalar: 100000000000000000000, dtype: int8}]\n",
     "calls[0].args[0].scalar", 2, "an int8 scalar is a whole number from -128 to 127"),
    ("calls:\n  - args: [{scalar: .inf, dtype: int32}]\n", "calls[0].args[0].scalar", 2,
     "got inf"),
    ("calls:\n  - args: [{scalar: -1, dtype: uint8}]\n", "calls[0].args[0].scalar", 2,
     "a uint8 scalar is a whole number from 0 to 255"),
    ("calls:\n  - args: [{scalar: 2.5, dtype: int32}]\n", "calls[0].args[0].scalar", 2,
     "got 2.5"),
    ("calls:\n  - args: [{scalar: 2, dtype: bool}]\n", "calls[0].args[0].scalar", 2,
     "a bool scalar is true or false"),
    ("calls:\n  - args: [{call: nocolon}]\n", "calls[0].args[0].call", 2, "module:function"),
    ("calls:\n  - args: [{call: 'm:f', fresh: 'yes'}]\n", "calls[0].args[0].fresh", 2,
     "must be true or false, got 'yes': true builds a new object for every call"),
    ("calls:\n  - args: [{call: 'm:f', fresh: 1}]\n", "calls[0].args[0].fresh", 2,
     "true or false"),
    ("- just\n- a list\n", "(top level)", None, "mapping"),
])
def test_spec_errors_name_file_field_and_line(tmp_path, text, field, line, words):
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert str(path) in message and f"field {field}:" in message and words in message
    if line is not None:
        assert f"line {line}," in message


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "calls:\n  - args: [1, 2\n  - x\n")
    with pytest.raises(SpecError, match=r"spec.yaml, line \d+: not valid YAML"):
        load_spec(path)


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError, match="Cannot read the spec file"):
        load_spec(tmp_path / "nope.yaml")
