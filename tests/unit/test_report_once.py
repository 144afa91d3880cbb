"""A report is the single product of analysis: every analysis runs once per report, however
many formats render it and whichever gates read it (renderers and gates only read it)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from builders import f32_event, session

import recompile_cli.render.html
import recompile_cli.render.table  # noqa: F401  (the renderers: loaded before the count)
from recompile_cli.analysis import report as report_module
from recompile_cli.analysis import sweeps as sweeps_module
from recompile_cli.analysis.warmup import coverage as coverage_module
from recompile_cli.gate.evaluate import Gated, evaluate
from recompile_cli.gate.limits import Gates
from recompile_cli.render import FORMATS, render

# Each analysis behind a report, by the module attribute through which the report calls it.
ANALYSES = [(report_module, "explain_by_process"), (report_module, "analyse_slow_calls"),
            (report_module, "analyse_eager_lines"), (report_module, "cache_outcomes"),
            (report_module, "suggest"), (report_module, "analyse_cost"),
            (coverage_module, "coverage"), (sweeps_module, "sweeps")]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each analysis ran, wherever it is called from: every name in the package that
    is bound to one of them counts."""
    counted: Counter[str] = Counter()
    for module, name in ANALYSES:
        original = getattr(module, name)
        counting = _counting(original, name, counted)
        for loaded in list(sys.modules.values()):
            if getattr(loaded, "__name__", "").startswith("recompile_cli"):
                for attribute, value in list(vars(loaded).items()):
                    if value is original:
                        monkeypatch.setattr(loaded, attribute, counting)
    return counted


def _counting(function: Callable[..., Any], name: str, counted: Counter[str]
              ) -> Callable[..., Any]:
    def counting(*args: Any, **kwargs: Any) -> Any:
        counted[name] += 1
        return function(*args, **kwargs)
    return counting


def test_each_analysis_runs_once_however_many_formats_and_gates_read_the_report(calls):
    events = [f32_event(seq, "step", n=n) for seq, n in enumerate((3, 4, 5, 6))]
    report = report_module.build_report(session(events))
    for fmt in FORMATS:
        for show_all in (False, True):
            assert render(report, fmt, show_all=show_all)
    gates = Gates(max_compiles=1, after_warmup=True, max_slow_calls=0, max_eager_compiles=0)
    for _ in range(2):
        result = evaluate([Gated("prog.py", report, gates)])
        assert not result.held  # 4 compiles, no warm-up: the gates read the report, and fail
    assert calls == {name: 1 for _, name in ANALYSES}


def test_a_report_that_no_format_reads_pays_only_for_what_it_holds(calls):
    """Compile cost, warm-up coverage and sweeps are computed on first read, not before."""
    report_module.build_report(session([f32_event(0, "step")]))
    assert {name for name in calls} == {"explain_by_process", "analyse_slow_calls",
                                        "analyse_eager_lines", "cache_outcomes", "suggest"}
