"""Fuzzing the readers of user files: generated and mutated spec documents, budget files (YAML
and TOML) and saved sessions (JSON and events logs). Each must give a valid object or a clean
``RecompileError`` (exit code 2), never another exception."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recompile_cli.capture.running.loader import resolver
from recompile_cli.errors import BudgetError, RecompileError, SessionFileError, SpecError
from recompile_cli.gate.budgets import BudgetFile, load_budget_file
from recompile_cli.inputs.materialize import materialize
from recompile_cli.inputs.spec import ArraySpec, Spec, TupleSpec, load_spec
from recompile_cli.session.files import load_session, session_to_dict
from recompile_cli.session.model import Session

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "tests" / "data" / "session.json"
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
FUZZ_HEAVY = settings(FUZZ, max_examples=80)  # two files an example, or a whole session
LIMITS = {"max_calls": 500, "max_array_bytes": 1 << 16}  # keep valid examples cheap

SPEC_WORDS = ["calls", "args", "kwargs", "repeat", "sweep", "range", "jit", "defaults", "array",
              "numpy", "scalar", "tuple", "dict", "call", "dtype", "fill", "seed",
              "static_argnames", "static_argnums", "donate_argnums", "donate_argnames", "n",
              "float32", "int8", "uint16", "bfloat16", "complex64", "bool", "normal", "uniform",
              "ones", "zeros", "arange", "${n}", "${m}", "x", "numpy:zeros", "mode"]
BUDGET_WORDS = ["targets", "target", "args", "script", "script_args", "steady_state_after",
                "budgets", "static_argnames", "static_argnums", "no_jit", "max_compiles",
                "max_traces", "max_compile_seconds", "tolerance", "allowed_causes", "shape",
                "first_compile", "prog.py:step", "step", "train_*", "x.py", "spec.yaml"]


def _values(words: list[str]) -> st.SearchStrategy:
    keys = st.one_of(st.sampled_from(words), st.integers(-3, 3), st.none(), st.booleans(),
                     st.text(max_size=4))
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 40), st.integers(),
                        st.floats(), st.sampled_from(words), st.text(max_size=6))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)), max_leaves=25)


def _documents(words: list[str], top: list[str]) -> st.SearchStrategy:
    return st.one_of(_values(words),
                     st.dictionaries(st.sampled_from(top), _values(words), max_size=len(top)))


def _mutated(texts: list[str]) -> st.SearchStrategy:
    """A valid text with a few random edits: cuts, insertions of YAML/JSON punctuation and
    words, duplicated lines, and bytes that are not UTF-8."""
    pieces = st.one_of(st.sampled_from(list("[]{}:,-&*!|>'\"#%@\n \t0123456789.e")),
                       st.sampled_from([" &a", " *a", "<<: ", "\n  - ", ": .nan", ": .inf",
                                        ": -1", ": true", ": 'x'", "null", "1e999", "NaN",
                                        "[[[[[[[[", "{", "\"\\u0000\"", "\xe9"]))

    @st.composite
    def build(draw):
        data = draw(st.sampled_from(texts)).encode()
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data)))
            kind = draw(st.sampled_from(["cut", "insert", "duplicate", "byte"]))
            if kind == "cut":
                data = data[:at] + data[at + draw(st.integers(1, 30)):]
            elif kind == "insert":
                data = data[:at] + draw(pieces).encode() + data[at:]
            elif kind == "duplicate":
                lines = data.split(b"\n")
                i = draw(st.integers(0, len(lines) - 1))
                data = b"\n".join(lines[:i + 1] + lines[i:])
            else:
                data = data[:at] + bytes([draw(st.integers(0x80, 0xff))]) + data[at:]
        return data

    return build()


def _write(tmp: Path, name: str, content: bytes | str) -> Path:
    path = tmp / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def _check_spec(path: Path) -> None:
    try:
        spec = load_spec(path, **LIMITS)
    except SpecError:
        return
    assert isinstance(spec, Spec) and 1 <= len(spec.cases) <= LIMITS["max_calls"]
    for case in spec.cases[:3]:  # the arrays of a valid spec can be built
        for value in (*case.args, *case.kwargs.values()):
            while isinstance(value, TupleSpec) and value.items:
                value = value.items[0]
            if isinstance(value, ArraySpec):
                array = materialize(dataclasses.replace(value, kind="numpy"), resolver())
                assert array.shape == value.shape and array.dtype.name == value.dtype


def _check_budget(path: Path) -> None:
    try:
        budget = load_budget_file(path)
    except BudgetError:
        return
    assert isinstance(budget, BudgetFile) and budget.targets
    for target in budget.targets:
        assert isinstance(target.no_jit, bool)
        for limit in target.budgets:
            for value in (limit.max_compile_seconds, limit.tolerance):
                assert value is None or (math.isfinite(value) and value >= 0)


def _check_session(path: Path) -> None:
    try:
        session = load_session(path)
    except SessionFileError:
        return
    assert isinstance(session, Session)


# -- specs --------------------------------------------------------------------------------------
SPEC_TEXTS = [p.read_text() for p in sorted((ROOT / "sample_programs").glob("*.yaml"))] + [
    "jit: {static_argnames: [mode]}\ndefaults: {dtype: float32, fill: normal, seed: 0}\n"
    "calls:\n  - args: [{array: [4, 4]}, 3]\n    kwargs: {mode: fast}\n    repeat: 2\n"
    "  - sweep: {n: {range: [1, 5]}}\n    args: [{numpy: ['${n}', 2], dtype: int8}, "
    "{tuple: [1, {scalar: 2.0, dtype: float16}]}, {dict: {a: {array: 1}}}]\n",
]


@FUZZ
@given(document=_documents(SPEC_WORDS, ["jit", "defaults", "calls"]))
def test_generated_specs(tmp_path, document):
    _check_spec(_write(tmp_path, "spec.yaml", yaml.safe_dump(document)))


_SHAPES = st.lists(st.one_of(st.integers(0, 6), st.just("${n}")), max_size=3)
_DTYPES = st.sampled_from(["float32", "bfloat16", "float16", "int8", "uint32", "bool",
                           "complex128", "float64", "int64"])
_FORMS = st.recursive(
    st.one_of(st.integers(), st.floats(), st.just("${n}"),
              st.fixed_dictionaries({"array": _SHAPES}, optional={
                  "dtype": _DTYPES, "fill": st.sampled_from(["normal", "uniform", "zeros",
                                                             "ones", "arange"]),
                  "seed": st.integers(0, 2 ** 70)}),
              st.fixed_dictionaries({"numpy": _SHAPES}, optional={"dtype": _DTYPES}),
              st.fixed_dictionaries({"scalar": st.one_of(st.integers(-5, 5), st.floats())},
                                    optional={"dtype": _DTYPES})),
    lambda inner: st.one_of(st.fixed_dictionaries({"tuple": st.lists(inner, max_size=3)}),
                            st.lists(inner, max_size=3)), max_leaves=8)
_PLAUSIBLE = st.fixed_dictionaries({"calls": st.lists(st.fixed_dictionaries(
    {"args": st.lists(_FORMS, max_size=3)},
    optional={"repeat": st.integers(1, 3),
              "sweep": st.fixed_dictionaries({"n": st.one_of(
                  st.lists(st.integers(0, 5), min_size=1, max_size=3),
                  st.fixed_dictionaries({"range": st.lists(st.integers(-2, 6), min_size=1,
                                                           max_size=3)}))}),
              "kwargs": st.dictionaries(st.sampled_from(["a", "mode"]), _FORMS, max_size=2)}),
    min_size=1, max_size=3)}, optional={
        "jit": st.fixed_dictionaries({}, optional={
            "static_argnums": st.one_of(st.integers(-2, 3), st.lists(st.integers(0, 3))),
            "static_argnames": st.one_of(st.just("mode"), st.lists(st.just("a")))}),
        "defaults": st.fixed_dictionaries({}, optional={"dtype": _DTYPES,
                                                        "seed": st.integers(-1, 5)})})


@FUZZ
@given(document=_PLAUSIBLE)
def test_plausible_specs(tmp_path, document):
    _check_spec(_write(tmp_path, "spec.yaml", yaml.safe_dump(document)))


@FUZZ
@given(content=_mutated(SPEC_TEXTS))
def test_mutated_specs(tmp_path, content):
    _check_spec(_write(tmp_path, "spec.yaml", content))


# -- budget files -------------------------------------------------------------------------------
BUDGET_YAML = (ROOT / "recompile-budget.yaml").read_text()
BUDGET_TOML = """\
[project]
name = "demo"

[[tool.recompile-cli.targets]]
target = "prog.py:step"
args = "two_shapes.yaml"
static_argnames = ["mode"]
no_jit = false
budgets = { step = { max_compiles = 1, tolerance = 0.5, allowed_causes = ["shape"] } }

[[tool.recompile-cli.targets]]
script = "train.py"
script_args = ["--epochs", "3"]
steady_state_after = 4
budgets = { "train_*" = { max_compile_seconds = 2.5 } }
"""


@FUZZ_HEAVY
@given(document=_documents(BUDGET_WORDS, ["targets"]),
       target=st.dictionaries(st.sampled_from(BUDGET_WORDS), _values(BUDGET_WORDS), max_size=6))
def test_generated_budget_files(tmp_path, document, target):
    _check_budget(_write(tmp_path, "recompile-budget.yaml", yaml.safe_dump(document)))
    _check_budget(_write(tmp_path, "recompile-budget.yaml", yaml.safe_dump({"targets": [target]})))


_NUMBERS = st.one_of(st.integers(0, 5), st.floats(0, 10), st.integers(0, 5), st.floats(0, 10),
                     st.integers(-2, 5), st.floats(), st.booleans(), st.just("1"))
_PLAUSIBLE_BUDGET = st.fixed_dictionaries({"targets": st.lists(st.fixed_dictionaries(
    {"target": st.sampled_from(["prog.py:step", "mod:f", "prog.py:step", "nocolon", ""]),
     "budgets": st.dictionaries(st.sampled_from(["step", "train_*", "f"]), st.fixed_dictionaries(
         {}, optional={"max_compiles": _NUMBERS, "max_traces": _NUMBERS,
                       "max_compile_seconds": _NUMBERS, "tolerance": _NUMBERS,
                       "allowed_causes": st.lists(st.sampled_from(["shape", "dtype", "nope"]),
                                                  max_size=2)}), min_size=1, max_size=2)},
    optional={"no_jit": st.one_of(st.booleans(), st.booleans(), st.just("false"),
                                  st.integers(0, 1)),
              "static_argnums": st.one_of(st.integers(-1, 2), st.lists(_NUMBERS, max_size=2)),
              "static_argnames": st.one_of(st.just("mode"), st.lists(st.text(max_size=3),
                                                                     max_size=2)),
              "steady_state_after": st.integers(-1, 5),
              "args": st.sampled_from(["spec.yaml", "spec.yaml", 3])}),
    min_size=1, max_size=2)})


@FUZZ
@given(document=_PLAUSIBLE_BUDGET)
def test_plausible_budget_files(tmp_path, document):
    _check_budget(_write(tmp_path, "recompile-budget.yaml", yaml.safe_dump(document)))


@FUZZ
@given(content=_mutated([BUDGET_YAML]))
def test_mutated_budget_yaml(tmp_path, content):
    _check_budget(_write(tmp_path, "recompile-budget.yaml", content))


@FUZZ
@given(content=_mutated([BUDGET_TOML]))
def test_mutated_budget_toml(tmp_path, content):
    _check_budget(_write(tmp_path, "pyproject.toml", content))


# -- saved sessions -----------------------------------------------------------------------------
def _small_session() -> dict:
    data = json.loads(SESSION.read_text())
    data["events"] = data["events"][:4] + data["events"][46:50]
    return data


SMALL = _small_session()


def _log_text(data: dict) -> str:
    lines = [{"type": "header", **{k: data[k] for k in ("schema_version", "environment",
                                                        "target", "base_context")}}]
    lines += [{"type": "event", "id": e["seq"], "event": e} for e in data["events"]]
    lines.append({"type": "end", "wall_seconds": 1.0, "calls": data["calls"],
                  "warnings": data["warnings"], "stale_captures": data["stale_captures"],
                  "target_exception": None})
    return "".join(json.dumps(line) + "\n" for line in lines)


@st.composite
def _replaced(draw, data: dict) -> dict:
    """``data`` with one value somewhere inside replaced by a random JSON value (or deleted)."""
    data = json.loads(json.dumps(data))
    node = data
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return data
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, (dict, list)) and child and draw(st.booleans()):
            node = child
            continue
        if isinstance(node, dict) and draw(st.integers(0, 5)) == 0:
            del node[key]
        else:
            node[key] = draw(_values(["x", "shape", "float32", "user"]))
        return data


def test_the_small_session_is_valid(tmp_path):
    assert isinstance(load_session(_write(tmp_path, "s.json", json.dumps(SMALL))), Session)
    assert isinstance(load_session(_write(tmp_path, "s.jsonl", _log_text(SMALL))), Session)


@FUZZ_HEAVY
@given(data=_replaced(SMALL))
def test_sessions_with_a_value_replaced(tmp_path, data):
    _check_session(_write(tmp_path, "s.json", json.dumps(data)))
    if isinstance(data.get("events"), list) and all(isinstance(e, dict) and "seq" in e
                                                      for e in data["events"]):
        try:
            _check_session(_write(tmp_path, "s.jsonl", _log_text(data)))
        except (KeyError, TypeError):
            pass  # the test's own log writer needs the top-level fields


@FUZZ
@given(content=_mutated([json.dumps(SMALL, indent=1), _log_text(SMALL)]))
def test_mutated_session_files(tmp_path, content):
    name = "s.jsonl" if content.startswith(b'{"type"') else "s.json"
    _check_session(_write(tmp_path, name, content))


@FUZZ
@given(document=_values(["events", "environment", "schema_version", "seq", "type", "header"]))
def test_generated_json_documents(tmp_path, document):
    text = json.dumps(document)  # may hold NaN: not standard JSON, refused
    _check_session(_write(tmp_path, "s.json", text))


def test_a_saved_session_round_trips(tmp_path):
    session = load_session(_write(tmp_path, "s.json", json.dumps(SMALL)))
    again = load_session(_write(tmp_path, "again.json", json.dumps(session_to_dict(session))))
    assert again == session


@pytest.mark.parametrize("error", [SpecError, BudgetError, SessionFileError])
def test_every_refusal_is_a_recompile_error_with_exit_code_2(error):
    assert issubclass(error, RecompileError) and error.exit_code == 2
