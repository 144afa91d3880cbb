"""Baseline files (``--save-baseline`` / ``--baseline``): what is written reads back, and a file
that is not a baseline, or has a wrong field, is refused with the file and the field named."""

from __future__ import annotations

import json

import pytest
from builders import f32_event, session

from recompile_cli.analysis.compare import FunctionTotals
from recompile_cli.analysis.report import build_report
from recompile_cli.errors import BudgetError
from recompile_cli.gate.baseline import BASELINE_KIND, load_baseline, save_baseline


def test_a_saved_baseline_reads_back(tmp_path):
    report = build_report(session([f32_event(0, "step", n=3, defined_at="prog.py:3"),
                              f32_event(1, "step", n=4, defined_at="prog.py:3")]))
    path = tmp_path / "base.json"
    save_baseline([report], path)
    data = json.loads(path.read_text())
    assert data["kind"] == BASELINE_KIND and data["schema_version"] == 1
    assert data["functions"] == {"prog.py:step": {"traces": 2, "compiles": 2,
                                                  "compile_seconds": 0.02, "equations": None}}
    assert path.read_text().startswith('{\n  "kind": "recompile-cli-baseline",\n')
    loaded = load_baseline(path)
    assert loaded.functions == {"prog.py:step": FunctionTotals(2, 2, 0.02)}
    assert loaded.environment["jax_version"] == "0.10.2"


@pytest.mark.parametrize("content, words", [
    ("{}", "is not a recompile-cli baseline"),
    ("[1, 2]", "is not a recompile-cli baseline"),
    ('{"kind": "something-else", "functions": {}}', "is not a recompile-cli baseline"),
    ("{oops", "not JSON (JSON is malformed"),
    (json.dumps({"kind": BASELINE_KIND, "functions": {"a.py:f": {"traces": -1}}}),
     "field functions[...].traces: expected `int` >= 0"),
    (json.dumps({"kind": BASELINE_KIND, "functions": {"a.py:f": {"compiles": True}}}),
     "field functions[...].compiles: expected `int`, got `bool`"),
    (json.dumps({"kind": BASELINE_KIND, "functions": []}),
     "field functions: expected `object`, got `array`"),
    (json.dumps({"kind": BASELINE_KIND, "environment": "cpu"}),
     "field environment: expected `object`, got `str`"),
])
def test_what_is_not_a_baseline_is_refused_with_the_field(tmp_path, content, words):
    path = tmp_path / "base.json"
    path.write_text(content)
    with pytest.raises(BudgetError) as info:
        load_baseline(path)
    message = str(info.value)
    assert str(path) in message and words in message, message
    assert message.endswith("Create it with --save-baseline.")


GOOD = {"kind": BASELINE_KIND, "schema_version": 1,
        "environment": {"jax_version": "0.10.2", "backend": "cpu", "python_version": "3.11"},
        "functions": {"a.py:f": {"traces": 1, "compiles": 1, "compile_seconds": 0.5,
                                 "equations": 40}}}


def without(*path):
    document = json.loads(json.dumps(GOOD))
    inner = document
    for key in path[:-1]:
        inner = inner[key]
    del inner[path[-1]]
    return document


@pytest.mark.parametrize("document, words", [
    (without("schema_version"), "missing required field `schema_version`"),
    (without("environment"), "missing required field `environment`"),
    (without("functions"), "missing required field `functions`"),
    *[(without("functions", "a.py:f", name),
       f"field functions[...]: object missing required field `{name}`")
      for name in ("traces", "compiles", "compile_seconds", "equations")],
])
def test_a_baseline_with_a_field_missing_is_refused_not_read_as_zero(tmp_path, document, words):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(document))
    with pytest.raises(BudgetError) as info:
        load_baseline(path)
    assert str(path) in str(info.value) and words in str(info.value).lower(), str(info.value)


@pytest.mark.parametrize("field, text, words", [
    ("equations", "1" + "0" * 400, "expected `int` <= 1000000000000"),
    ("equations", "-1", "expected `int` >= 0"),
    ("traces", "1" + "0" * 13, "expected `int` <= 1000000000000"),
    ("compile_seconds", "1e400", "number out of range"),
    ("compile_seconds", "1e300", "expected `float` <= 100000000.0"),
    ("compile_seconds", "-0.5", "expected `float` >= 0.0"),
    ("compile_seconds", "NaN", "not json"),
    ("compile_seconds", "Infinity", "not json"),
])
def test_a_baseline_value_out_of_range_is_refused_with_its_field(tmp_path, field, text, words):
    """``equations: 10**400`` was an OverflowError traceback in the comparison; every count and
    number of seconds is checked against ``ranges`` as the file is read."""
    path = tmp_path / "base.json"
    document = json.loads(json.dumps(GOOD))
    document["functions"]["a.py:f"][field] = "VALUE"
    path.write_text(json.dumps(document).replace('"VALUE"', text))
    with pytest.raises(BudgetError) as info:
        load_baseline(path)
    message = str(info.value)
    assert str(path) in message and words in message.lower(), message
    if "not json" not in words:
        assert f"field functions[...].{field}" in message


def test_a_baseline_of_another_schema_version_is_refused(tmp_path):
    path = tmp_path / "base.json"
    path.write_text(json.dumps({**GOOD, "schema_version": 99}))
    with pytest.raises(BudgetError, match="field schema_version: 99; this recompile-cli reads "
                                          "baselines of version 1"):
        load_baseline(path)
    path.write_text(json.dumps(GOOD))
    assert load_baseline(path).functions == {"a.py:f": FunctionTotals(1, 1, 0.5, 40)}
