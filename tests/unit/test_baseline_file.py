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
