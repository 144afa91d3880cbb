"""Compile cost without JAX (issue 20): attributing equations to lines and finding repeated
groups, the patterns and their messages, the session format, the report outputs, and the
``max_equations`` budget and ``--fail-on-compile-regression`` gate on hand-built sessions."""

from __future__ import annotations

import io

import msgspec
import pandas as pd
import pytest
from builders import event, session

from recompile_cli.analysis.compare import FunctionTotals, diff_reports
from recompile_cli.analysis.compile_cost import NO_PRIVATE_HOOKS, analyse_cost, size_text
from recompile_cli.analysis.report import build_report
from recompile_cli.capture.jax.programs import cost_lines
from recompile_cli.errors import BudgetError, SessionFileError
from recompile_cli.gate.against_baseline import NOISE_FLOOR_SECONDS, compile_regressions
from recompile_cli.gate.baseline import Baseline, load_baseline, save_baseline
from recompile_cli.gate.budgets import load_budget_file
from recompile_cli.gate.evaluate import Gated, Gates, Rule, evaluate
from recompile_cli.render import FORMATS, json_report
from recompile_cli.render import csv as csv_render
from recompile_cli.render.diff import render_diff
from recompile_cli.session import files
from recompile_cli.session.model import (
    CompileCost,
    ConstantCost,
    Environment,
    HookMode,
    LineCost,
)

LOOP = LineCost("heavy.py:14", 1200, 0, 4, 300)
COST = CompileCost(
    equations=1204, walked=1204, lines=(LOOP, LineCost("heavy.py:20", 4)), module_ops=1500,
    constants=1, constants_bytes=16 << 20,
    large_constants=(ConstantCost(16 << 20, (2048, 2048), "float32", "numpy array",
                                  "heavy.py:20", "TABLE", "heavy.py:8"),),
    inlined=(("helper@heavy.py:30", 400),))


def costed(seq=0, function="step", cost=COST, seconds=2.0, defined_at="heavy.py:12"):
    base = event(function=function, seq=seq, defined_at=defined_at)
    return msgspec.structs.replace(base, compile_seconds=seconds, cost=cost)


def test_a_line_repeating_one_group_is_found_with_its_count():
    assert cost_lines.repeated_group(["sin", "mul"] * 300) == 2
    assert cost_lines.repeated_group(["sin", "mul", "add"] * 20 + ["sin"]) == 3  # a tail
    assert cost_lines.repeated_group(["a", "b", "c", "d"]) == 0
    assert cost_lines.repeated_group(["add"] * 3) == 0  # too few repeats
    rows = cost_lines.line_costs([("p.py:3", "sin", False), ("p.py:3", "mul", False)] * 50
                                 + [("p.py:9", "add", True)])
    assert rows == (LineCost("p.py:3", 100, 0, 2, 50), LineCost("p.py:9", 1, 1, 0, 0))


def test_a_first_group_that_differs_still_counts_as_a_loop():
    sequence = ["convert_element_type", "mul"] + ["sin", "mul"] * 30
    assert cost_lines.repeated_group(sequence) == 2


def test_the_assignment_of_a_captured_variable_is_found(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text("import numpy as np\nTABLE = np.ones(3)\n\ndef f():\n    return TABLE\n"
                    "TABLE = np.zeros(3)\n")
    assert cost_lines.assignment_line(str(path), "TABLE", f"{path}:5") == 2
    assert cost_lines.assignment_line(str(path), "TABLE", None) == 6
    assert cost_lines.assignment_line(str(path), "missing", None) is None
    assert cost_lines.assignment_line(str(tmp_path / "gone.py"), "TABLE", None) is None


def test_the_patterns_name_the_line_the_constant_and_the_inlined_function():
    helper = costed(1, "helper", CompileCost(equations=400, walked=400), 0.1, "heavy.py:30")
    report = analyse_cost(session([costed(), helper]))
    step = report.functions[0]
    assert (step.function, step.equations, step.module_ops, step.constants_bytes) == (
        "step", 1204, 1500, 16 << 20)
    assert step.lines[0].seconds == pytest.approx(2.0 * 1200 / 1204)
    loop, table, inlined = report.patterns
    assert loop.message.startswith(
        "heavy.py:14 produced 1,200 of 1,204 equations (a Python loop unrolled 300 times): use "
        "jax.lax.scan or jax.lax.fori_loop; that leaves about 8 equations")
    assert loop.equations_saved == 1196
    assert table.message.startswith(
        "16.0 MB numpy array TABLE (float32[2048,2048]) (defined at heavy.py:8) captured at "
        "heavy.py:20 is embedded in the program of step: pass it as an argument")
    assert table.bytes_saved == 16 << 20
    assert inlined.kind == "inlined_twice" and inlined.message.startswith(
        "helper (400 equations) is compiled on its own (once) and again inside step: a jitted "
        "function called from another jitted function is inlined and compiled as part of it")
    assert "That is expected when helper is also used alone" in inlined.message


@pytest.mark.parametrize("equations", [199, 240])  # too few; under 20% of step's 1,204
def test_a_small_inlined_function_is_not_named(equations):
    cost = msgspec.structs.replace(COST, inlined=(("helper@heavy.py:30", equations),))
    helper = costed(1, "helper", CompileCost(equations=equations, walked=equations), 0.1,
                    "heavy.py:30")
    kinds = [p.kind for p in analyse_cost(session([costed(cost=cost), helper])).patterns]
    assert "inlined_twice" not in kinds


def test_a_capped_attribution_is_said():
    from recompile_cli.render.sections.compile_cost import section, summary

    capped = msgspec.structs.replace(COST, equations=90_000, walked=50_000)
    (line,) = summary(section(build_report(session([costed(cost=capped)]))))
    assert line.endswith("; lines attributed for the first 50,000 equations only (a bound on the "
                         "work for huge programs)")
    assert "90,000 equations" in line


def test_a_session_without_cost_says_why_only_in_public_only_mode():
    plain = session([event()])
    assert analyse_cost(plain).note is None and analyse_cost(plain).functions == ()
    public = msgspec.structs.replace(plain, environment=Environment("0.4.30", "3.11", "cpu",
                                                                HookMode.PUBLIC_ONLY))
    assert analyse_cost(public).note == NO_PRIVATE_HOOKS


@pytest.mark.parametrize("nbytes, text", [(16 << 20, "16.0 MB"), (2048, "2 KB"), (12, "12 B")])
def test_sizes(nbytes, text):
    assert size_text(nbytes) == text


def test_the_cost_survives_a_save_and_load(tmp_path):
    saved = session([costed()])
    path = tmp_path / "s.json"
    files.save_session(saved, path)
    assert files.load_session(path) == saved


def test_json_and_csv_carry_equations_and_the_lines():
    report = build_report(session([costed(), event(seq=1, function="other")]))
    data = json_report.to_dict(report)
    assert [(e["equations"], e["constants_bytes"]) for e in data["events"]] == [
        (1204, 16 << 20), (None, None)]
    assert data["compile_cost"]["patterns"][0]["kind"] == "unrolled_loop"
    frames = csv_render.render_files(report)
    events = pd.read_csv(io.StringIO(frames["events.csv"]))
    assert list(events["equations"].astype("Int64")) == [1204, pd.NA]
    lines = pd.read_csv(io.StringIO(frames["compile_cost.csv"]))
    assert list(lines["line"]) == ["heavy.py:14", "heavy.py:20"]
    assert list(lines["repeats"]) == [300, 0]


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_the_human_formats_have_the_section(fmt):
    from recompile_cli.render import html, table

    report = build_report(session([costed()]))
    text = {"table": table.render, "markdown": table.render_markdown,
            "html": html.render}[fmt](report)
    assert "Compile cost" in text and "1,204 equations" in text
    assert "a Python loop unrolled 300 times" in text and "16.0 MB" in text
    assert fmt in FORMATS


def test_max_equations_budget(tmp_path):
    path = tmp_path / "recompile-budget.yaml"
    path.write_text("targets:\n  - target: prog.py:main\n    budgets:\n"
                    "      step: {max_equations: 1000}\n")
    (budget,) = load_budget_file(path).targets[0].budgets
    assert budget.max_equations == 1000
    report = build_report(session([costed()]))
    result = evaluate([Gated("prog.py", report, Gates(budgets=(budget,)))])
    (row,) = result.rows
    assert (row.equations, row.max_equations, row.status) == (1204, 1000, "FAIL")
    (violation,) = row.violations
    assert violation.rule == Rule.MAX_EQUATIONS
    assert violation.message == ("step: a compiled program of 1,204 jaxpr equations, budget "
                                 "1,000; heavy.py:14 produced 1,200 of them (a group repeated "
                                 "300 times)")
    path.write_text("targets:\n  - target: prog.py:main\n    budgets:\n"
                    "      step: {max_equations: -1}\n")
    with pytest.raises(BudgetError, match="max_equations: must be a non-negative integer"):
        load_budget_file(path)


def test_compile_regression_compares_equations_and_seconds():
    before = FunctionTotals(1, 1, 1.0, 1000)
    assert compile_regressions("heavy.py:step", before, FunctionTotals(1, 1, 1.05, 1204),
                               10) == ["heavy.py:step: 1,204 equations, baseline 1,000 (+20%, "
                                       "more than 10%)"]
    assert compile_regressions("k", before, FunctionTotals(1, 1, 3.0, 1000), 100) == [
        "k: 3.000 s of compile, baseline 1.000 s (+200%, more than 100% and at least 0.25 s)"]
    assert compile_regressions("k", FunctionTotals(1, 1), FunctionTotals(1, 1, 9.0, 9), 0) == []
    # +48% of a 0.09 s compile is noise: growth under the floor never counts
    assert NOISE_FLOOR_SECONDS == 0.25
    assert compile_regressions("k", FunctionTotals(1, 1, 0.09), FunctionTotals(1, 1, 0.133),
                               10) == []
    assert compile_regressions("k", FunctionTotals(1, 1, 0.09), FunctionTotals(1, 1, 0.34),
                               10) != []
    baseline = Baseline("base.json", {"jax_version": "0.10.2", "backend": "cpu"},
                        {"heavy.py:step": before})
    report = build_report(session([costed()]))
    held = evaluate([Gated("p", report)], baseline, compile_regression=1e9)
    assert held.held
    failed = evaluate([Gated("p", report)], baseline, compile_regression=0)
    assert {v.rule for v in failed.violations} == {Rule.COMPILE_REGRESSION}
    assert not evaluate([Gated("p", report)], baseline).violations  # only when asked


def test_baselines_and_diff_keep_the_equations(tmp_path):
    report = build_report(session([costed()]))
    path = tmp_path / "base.json"
    save_baseline([report], path)
    assert load_baseline(path).functions["heavy.py:step"] == FunctionTotals(1, 1, 2.0, 1204)
    smaller = build_report(session([costed(cost=msgspec.structs.replace(COST, equations=602))]))
    changes, _ = diff_reports(smaller, report)
    assert changes[0].equations == (602, 1204)
    assert "602 -> 1,204 (+100%)" in render_diff(changes, [], "a", "b")


def public_only(events):
    env = Environment("0.4.30", "3.11", "cpu", HookMode.PUBLIC_ONLY)
    return build_report(msgspec.structs.replace(session(events), environment=env))


@pytest.mark.parametrize("allowed", [False, True])
def test_max_equations_without_recorded_equations_fails_unless_allowed(allowed):
    from recompile_cli.render.ci import gate_summary

    budget = load_budget_text("step: {max_equations: 0}")
    report = public_only([event(function="step", defined_at="heavy.py:12")])
    result = evaluate([Gated("prog.py", report, Gates(budgets=(budget,),
                                                      allow_unrecorded=allowed))])
    (row,) = result.rows
    problem = ("prog.py: the budget 'step' limits max_equations, but this run recorded no "
               "equations for step (equations need the private hooks: hook mode private, "
               "JAX >= 0.9); a limit that cannot be checked fails; to let it pass with a "
               "warning, set allow_unrecorded: true in the budget, or pass --allow-unrecorded")
    assert row.equations is None
    if allowed:
        assert result.warnings == (problem,) and result.held and row.status == "ok"
    else:
        assert [(v.rule, v.message) for v in row.violations] == [(Rule.NOT_RECORDED, problem)]
        assert not result.held and row.status == "FAIL"
    assert "not recorded / 0" in gate_summary(result)
    # the budget's own key does what the option does
    own = load_budget_text("step: {max_equations: 0, allow_unrecorded: true}")
    assert evaluate([Gated("prog.py", report, Gates(budgets=(own,)))]).held


def test_max_equations_with_one_compile_unrecorded_fails():
    """The largest of the recorded programs says nothing of a compile whose record is missing
    (the walk of a huge program failing): the limit cannot pass on the others."""
    budget = load_budget_text("step: {max_equations: 2000}")
    report = build_report(session([costed(), event(function="step", seq=1,
                                                   defined_at="heavy.py:12")]))
    (row,) = evaluate([Gated("prog.py", report, Gates(budgets=(budget,)))]).rows
    (violation,) = row.violations
    assert violation.rule == Rule.NOT_RECORDED and row.equations is None
    assert "recorded no equations for 1 of 2 compiles of step" in violation.message


def load_budget_text(budgets):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recompile-budget.yaml"
        path.write_text(f"targets:\n  - target: prog.py:main\n    budgets:\n      {budgets}\n")
        (budget,) = load_budget_file(path).targets[0].budgets
    return budget


@pytest.mark.parametrize("allowed", [False, True])
def test_compile_regression_fails_when_equations_were_not_compared(allowed):
    baseline = Baseline("base.json", {"jax_version": "0.4.30", "backend": "cpu"},
                        {"heavy.py:step": FunctionTotals(1, 1, 1.0, 1000)})
    report = public_only([event(function="step", defined_at="heavy.py:12", seconds=1.0)])
    result = evaluate([Gated("p", report, Gates(allow_unrecorded=allowed))], baseline,
                      compile_regression=10)
    problem = ("--fail-on-compile-regression: this run recorded no equations for heavy.py:step "
               "(equations need the private hooks: hook mode private, JAX >= 0.9), so they "
               "could not be compared; a limit that cannot be checked fails; to let it pass "
               "with a warning, set allow_unrecorded: true in the budget, or pass "
               "--allow-unrecorded")
    if allowed:
        assert problem in result.warnings and result.held
    else:
        assert [(v.rule, v.message) for v in result.violations] == [
            (Rule.NOT_RECORDED, problem)]
    assert not evaluate([Gated("p", report)], baseline).warnings  # only when asked


@pytest.mark.parametrize("baseline_equations, held", [(0, False), (40, True), (39, False)])
def test_a_zero_equation_baseline_is_compared_not_skipped(baseline_equations, held):
    """``equations: 0`` is a real count (an identity function has none): 40 is more than
    any percent above it."""
    baseline = Baseline("base.json", {"jax_version": "0.10.2", "backend": "cpu"},
                        {"heavy.py:step": FunctionTotals(1, 1, 2.0, baseline_equations)})
    report = build_report(session([costed(cost=msgspec.structs.replace(COST, equations=40))]))
    result = evaluate([Gated("p", report)], baseline, compile_regression=1)
    assert result.held is held, result.violations
    if baseline_equations == 0:
        (violation,) = result.violations
        assert violation.message == ("heavy.py:step: 40 equations, baseline 0 (from 0, more "
                                     "than 1%) (--fail-on-compile-regression)")


def test_a_baseline_without_compile_seconds_is_not_a_pass():
    """A function that compiled with 0 compile seconds (a forecast's baseline) has no seconds
    to compare: not a silent pass."""
    baseline = Baseline("base.json", {"jax_version": "0.10.2", "backend": "cpu"},
                        {"heavy.py:step": FunctionTotals(1, 1, 0.0, 1204)})
    report = build_report(session([costed()]))
    (violation,) = evaluate([Gated("p", report)], baseline, compile_regression=10).violations
    assert violation.rule == Rule.NOT_RECORDED
    assert violation.message.startswith("--fail-on-compile-regression: the baseline recorded no "
                                        "compile seconds for heavy.py:step (a forecast "
                                        "compiles nothing)")


def test_diff_shows_equations_a_run_did_not_record_as_a_dash():
    old = build_report(session([event(function="step", defined_at="heavy.py:12")]))
    changes, _ = diff_reports(old, build_report(session([costed()])))
    assert changes[0].equations == (None, 1204)
    text = render_diff(changes, [], "old.json", "new.json")
    assert text.splitlines()[-1].endswith("  - -> 1,204")


@pytest.mark.parametrize("field, value, message", [
    ("equations", -1, "field events[0].cost.equations: expected `int` >= 0"),
    ("repeats", 10**30, "field events[0].cost.lines[0].repeats: expected `int` <= "),
    ("repeats", 1e30, "field events[0].cost.lines[0].repeats: expected `int`, got `float`"),
])
def test_the_loader_refuses_impossible_costs(tmp_path, field, value, message):
    import json

    path = tmp_path / "s.json"
    files.save_session(session([costed()]), path)
    data = json.loads(path.read_text())
    cost = data["events"][0]["cost"]
    (cost if field == "equations" else cost["lines"][0])[field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError) as caught:
        files.load_session(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
