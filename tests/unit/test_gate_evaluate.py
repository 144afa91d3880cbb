"""The gate evaluator and ``diff`` on hand-built sessions: budgets, ``--max-compiles``,
``--fail-on``, the steady state, baselines, target errors, unmatched budgets. No JAX runs."""

from __future__ import annotations

import pytest
from builders import event, leaf, numbered, session, sig
from msgspec.structs import replace

from recompile_cli.analysis.compare import FunctionTotals, diff_reports
from recompile_cli.analysis.report import build_report
from recompile_cli.gate.baseline import Baseline
from recompile_cli.gate.evaluate import Gated, Gates, Rule, evaluate, verdicts
from recompile_cli.gate.limits import Budget
from recompile_cli.session.model import Event


def report_of(*events: Event, calls: dict[str, int] | None = None):
    return build_report(session(list(events), target="prog.py", wall_seconds=1.0, calls=calls or {}))


def three_shapes(function: str = "step"):
    """``step`` compiled for x of 3, 4 and 5 elements (3 compiles: first, shape, shape)."""
    return [replace(e, function=function) for e in numbered(
        sig(x=leaf("f32", 3)), sig(x=leaf("f32", 4)), sig(x=leaf("f32", 5)))]


def gate(report, **gates) -> object:
    return evaluate([Gated("prog.py", report, Gates(**gates))])


def test_max_compiles_names_the_excess_with_argument_and_values():
    result = gate(report_of(*three_shapes()), max_compiles=1)
    assert not result.held
    [row] = result.rows
    assert (row.function, row.compiles, row.max_compiles, row.ok) == ("step", 3, 1, False)
    [violation] = row.violations
    assert violation.rule == "max_compiles"
    # the cause named once, with each change, the place once, then the report's suggestion
    assert violation.message.startswith(
        "step: 3 compiles, budget 1. Excess: shape at x: f32[3] -> f32[4], then f32[4] -> "
        "f32[5] (prog.py:10 (<module>)). Suggestion: `x` dim 0 took 3 values (3..5): 3 "
        "compiles -> 2 with power-of-two buckets")
    assert violation.message.count("shape at") == 1
    assert gate(report_of(*three_shapes()), max_compiles=3).held


def test_budgets_glob_max_traces_allowed_causes_and_seconds():
    report = report_of(*three_shapes("train_step"))
    result = gate(report, budgets=(
        Budget("train_*", max_traces=2),
        Budget("train_step", allowed_causes=("first_compile",)),
        Budget("train_step", max_compile_seconds=0.1, tolerance=0.5),
    ))
    rules = [v.rule for row in result.rows for v in row.violations]
    assert rules == ["max_traces", "allowed_causes", "max_compile_seconds"]
    assert "causes outside first_compile: shape at x" in result.every_violation[1].message
    assert "0.300 s of XLA compile, budget 0.100 s (+50% tolerance)" in (
        result.every_violation[2].message)


def test_library_functions_count_for_budget_files_but_not_for_max_compiles():
    events = [replace(e, owner="library") for e in three_shapes()]
    assert gate(report_of(*events), max_compiles=0).held  # only your functions
    assert not gate(report_of(*events), budgets=(Budget("step", max_compiles=0),)).held
    assert gate(report_of(*events), budgets=(Budget("step", max_compiles=0),),
                budget_owners=("user",)).warnings  # no match among the user's


def test_a_budget_that_matches_nothing_warns_or_fails_when_strict():
    report = report_of(*three_shapes())
    result = gate(report, budgets=(Budget("stpe", max_compiles=1),))
    assert result.held and result.rows == ()
    assert "the budget 'stpe' matches no function" in result.warnings[0]
    strict = evaluate([Gated("prog.py", report, Gates(budgets=(Budget("stpe"),)))],
                      strict=True)
    assert not strict.held and strict.violations[0].rule == "no_match"


def test_fail_on_skips_jax_and_nested_events():
    events = three_shapes()
    nested = replace(events[2], depth=1)
    jax_own = replace(events[1], owner="jax", function="broadcast_in_dim")
    result = gate(report_of(events[0], events[1], nested), fail_on=("shape",))
    [violation] = result.violations
    assert violation.message.startswith("step: 1 event with cause shape (--fail-on)")
    assert gate(report_of(events[0], jax_own), fail_on=("shape",)).held


def test_steady_state_counts_compiles_after_the_warm_up():
    events = [replace(e, call_index=i, call_of="step@prog.py:3")
              for i, e in enumerate(three_shapes())]
    report = report_of(*events)
    [violation] = gate(report, steady_state_after=1).violations
    assert violation.message.startswith(
        "After a warm-up of 1 call of step, step compiled 2 more times, first during "
        "call 2: shape at x: f32[3] -> f32[4]")
    assert gate(report, steady_state_after=3).held


def test_a_steady_state_with_no_counted_call_fails_unless_allowed():
    """No call of the watched functions was counted (a script's functions jitted before it
    started): no compile can be placed after the warm-up, so the gate cannot pass."""
    events = [replace(e, call_index=i, call_of="step@prog.py:3")
              for i, e in enumerate(three_shapes())]
    for report, of in ((report_of(*events), frozenset({"other@prog.py:9"})),
                       (report_of(*three_shapes()), None)):
        [violation] = gate(report, steady_state_after=1, steady_state_of=of).violations
        assert violation.rule == Rule.NOT_RECORDED
        assert "this run counted no call of" in violation.message
        assert "allow_unrecorded: true" in violation.message
        allowed = gate(report, steady_state_after=1, steady_state_of=of,
                       allow_unrecorded=True)
        assert allowed.held and allowed.warnings == (violation.message,)


def test_a_target_that_raised_fails_the_gate_even_with_nothing_else_to_check():
    result = evaluate([Gated("prog.py", report_of(*three_shapes()), Gates(),
                             failure="prog.py raised ValueError: boom")])
    assert not result.held and result.every_violation == []
    assert result.errors[0].message == "prog.py raised ValueError: boom"


@pytest.mark.parametrize("before, held, improvement", [(3, True, False), (2, False, False),
                                                       (4, True, True)])
def test_baseline_regression_improvement_and_version_warning(before, held, improvement):
    baseline = Baseline("base.json", {"jax_version": "0.4.30", "backend": "cpu"},
                        {"prog.py:step": FunctionTotals(traces=before, compiles=before)})
    result = evaluate([Gated("prog.py", report_of(*three_shapes()))], baseline,
                      "recompile-cli check --save-baseline base.json")
    assert result.held is held
    assert bool(result.improvements) is improvement
    assert "made with jax_version 0.4.30, this run has 0.10.2" in result.warnings[0]
    if not held:
        assert result.violations[0].message == "prog.py:step: 3 compiles, baseline 2 (+1)"


def test_baseline_fails_on_a_new_function_that_compiles():
    baseline = Baseline("base.json", {"jax_version": "0.10.2", "backend": "cpu"}, {})
    result = evaluate([Gated("prog.py", report_of(*three_shapes()))], baseline)
    assert result.violations[0].message == ("prog.py:step: new function compiles 3 times; "
                                            "not in the baseline base.json")
    assert result.warnings == ()


def test_diff_reports_counts_and_new_causes():
    old = report_of(*three_shapes()[:1])
    new = report_of(*three_shapes(), event(sig(y=leaf("i32", 2)), function="other", seq=9))
    changes, new_causes = diff_reports(old, new)
    by_name = {c.function: c for c in changes}
    assert by_name["prog.py:step"].compiles == (1, 3) and by_name["prog.py:step"].regressed
    assert by_name["prog.py:other"].compiles == (0, 1)
    step_shape = [c for c in new_causes if c.function == "prog.py:step"]
    assert [(c.code, c.argument, c.before, c.after, c.count) for c in step_shape] == [
        ("shape", "x", "f32[3]", "f32[5]", 2)]


def test_diff_lists_your_functions_and_sums_a_librarys_in_one_line():
    """Issue 43: ``diff`` listed optax internals among the user's functions."""
    from recompile_cli.render.diff import render_diff
    from recompile_cli.session.model import Owner

    lib = "/venv/lib/python3.11/site-packages/optax/_src/transform.py:40"
    old = report_of(*three_shapes()[:1],
                    event(sig(g=leaf("f32", 2)), function="update_fn", owner=Owner.LIBRARY,
                          defined_at=lib, seq=7))
    new = report_of(*three_shapes(),
                    event(sig(g=leaf("f32", 2)), function="update_fn", owner=Owner.LIBRARY,
                          defined_at=lib, seq=7),
                    event(sig(g=leaf("f32", 3)), function="update_fn", owner=Owner.LIBRARY,
                          defined_at=lib, seq=8))
    changes, _ = diff_reports(old, new)
    assert {c.function: c.library for c in changes} == {
        "prog.py:step": None, "transform.py:update_fn": "optax"}
    text = render_diff(changes, [], "old.json", "new.json", width=200)
    table, _, rest = text.partition("+ libraries")
    assert "prog.py:step" in table and "update_fn" not in table
    assert rest.startswith(" (optax): 1 function, 1 -> 2 compiles; more in transform.py:update_fn")


def test_fail_on_counts_an_event_once_and_lists_all_its_changed_arguments():
    """One re-compile where two arguments changed shape is one event, not two."""
    report = report_of(*numbered(sig(x=leaf("f32", 3), y=leaf("f32", 3)),
                                 sig(x=leaf("f32", 4), y=leaf("f32", 4))))
    [violation] = gate(report, fail_on=("shape", "dtype")).violations
    assert violation.message.startswith(
        "f: 1 event with cause shape (--fail-on): shape at x: f32[3] -> f32[4], y: f32[3] -> "
        "f32[4] (prog.py:10 (<module>)).")


def test_rows_of_a_target_that_raised_are_errors_not_passes():
    result = evaluate([Gated("prog.py", report_of(*three_shapes()), Gates(max_compiles=5),
                             failure="prog.py raised ValueError: boom")])
    [row] = result.rows
    assert (row.ok, row.status, row.target_error) == (False, "ERROR", "prog.py raised "
                                                      "ValueError: boom")
    assert not result.held
    [row] = gate(report_of(*three_shapes()), max_compiles=5).rows
    assert (row.ok, row.status) == (True, "ok")


def test_a_row_is_ok_only_when_every_rule_on_the_function_held():
    """A broken steady state fails the function's row, though its budget held (issue 33)."""
    events = [replace(e, call_index=i, call_of="step@prog.py:3")
              for i, e in enumerate(three_shapes())]
    result = gate(report_of(*events), budgets=(Budget("step", max_compiles=5),),
                  steady_state_after=1)
    [row] = result.rows
    assert row.status == "ok"  # the budget's own verdict (its JUnit test case)
    [verdict] = verdicts(result)
    assert verdict.status == "FAIL steady_state"
    assert result.violations[0].target == "prog.py"
    held = gate(report_of(*events), budgets=(Budget("step", max_compiles=5),),
                steady_state_after=3)
    assert [v.status for v in verdicts(held)] == ["ok"]


def test_a_function_matched_by_several_budgets_is_one_row_with_each_verdict():
    result = gate(report_of(*three_shapes("train_step")), budgets=(
        Budget("train_*", max_compiles=1), Budget("*", max_compiles=5)))
    assert [(row.pattern, row.status) for row in result.rows] == [("train_*", "FAIL"),
                                                                  ("*", "ok")]
    [verdict] = verdicts(result)
    assert verdict.status == "FAIL train_*: max_compiles, *: ok"
    both = gate(report_of(*three_shapes("train_step")), budgets=(
        Budget("train_*", max_compiles=5), Budget("*", max_compiles=5)))
    assert [v.status for v in verdicts(both)] == ["ok"]


def test_a_baseline_violation_fails_the_row_of_that_function():
    baseline = Baseline("base.json", {"jax_version": "0.10.2", "backend": "cpu"},
                        {"prog.py:step": FunctionTotals(traces=2, compiles=2)})
    result = evaluate([Gated("prog.py", report_of(*three_shapes()), Gates(max_compiles=5))],
                      baseline)
    [verdict] = verdicts(result)
    assert verdict.status == "FAIL baseline"


def test_the_steady_state_names_each_function_that_compiled_late():
    events = [replace(e, call_index=i, call_of="step@prog.py:3")
              for i, e in enumerate(three_shapes())]
    helper = replace(events[2], function="helper", defined_at="prog.py:20")
    violations = gate(report_of(*events[:2], helper), steady_state_after=1).violations
    assert [(v.function, v.rule) for v in violations] == [("step", "steady_state"),
                                                          ("helper", "steady_state")]
    assert violations[1].message.startswith(
        "After a warm-up of 1 call of step, helper compiled 1 more time, first during call 3")


def test_violation_call_sites_are_relative_to_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    events = [replace(e, call_site=f"{tmp_path}/prog.py:10 (<module>)",
                      defined_at=f"{tmp_path}/prog.py:3") for e in three_shapes()]
    [violation] = gate(report_of(*events), max_compiles=1).every_violation
    assert violation.call_site == "prog.py:10 (<module>)"
    assert str(tmp_path) not in violation.message
