"""``recompile-cli check``: run every target of a budget file and gate each on its budgets.

Everything in the file (and every spec it names) is validated before anything runs; targets run
from the budget file's folder, since its paths are relative to it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from recompile_cli.gate import evaluate as gate
from recompile_cli.target import loader
from recompile_cli.capture import runner
from recompile_cli.analysis.report import Report, analyse
from recompile_cli.gate.budgets import BudgetFile, TargetBudget
from recompile_cli.capture.frames import function_key_of
from recompile_cli.target.spec import Spec, load_spec, single_call


@dataclass
class CheckResult:
    reports: list[tuple[TargetBudget, Report]] = field(default_factory=list)
    rows: list[gate.BudgetRow] = field(default_factory=list)
    violations: list[gate.Violation] = field(default_factory=list)  # outside per-function rows
    failures: list[str] = field(default_factory=list)  # targets that raised


def run_checks(budgets: BudgetFile, hook_mode: str = "private") -> CheckResult:
    result = CheckResult()
    with _working_dir(budgets.folder):
        specs = [_spec(t) for t in budgets.targets]  # fail fast on a bad spec
        for target, spec in zip(budgets.targets, specs):
            outcome, target_key = _run(target, spec, hook_mode)
            report = analyse(outcome.session)
            result.reports.append((target, report))
            result.rows += gate.check_budgets(report, target.label, target.budgets)
            if target.steady_state_after is not None:
                keys = {target_key} if target_key else _counted_keys(report, target)
                result.violations += gate.check_steady_state(report, target.steady_state_after,
                                                              keys)
            if outcome.failure:
                result.failures.append(f"{target.label}: {outcome.failure}")
    return result


def _spec(target: TargetBudget) -> Spec | None:
    if target.target is None:
        return None
    return load_spec(target.args) if target.args is not None else single_call()


def _run(target: TargetBudget, spec: Spec | None, hook_mode: str):
    if target.script is not None:
        outcome = runner.run_script(target.script, list(target.script_args), runner.RunOptions(
            hook_mode, count_calls=target.steady_state_after is not None))
        return outcome, None
    found = loader.load_target(target.target)
    options = dict(spec.jit_options)
    options.update(dict(target.jit_options))
    return (runner.profile(found, spec, options, target.no_jit,
                           options=runner.RunOptions(hook_mode)),
            function_key_of(found.function))


def _counted_keys(report: Report, target: TargetBudget) -> set[str] | None:
    """For a script: the counted functions matched by the target's budgets (None: any)."""
    import fnmatch

    keys = {e.call_of for e in report.session.events if e.call_of}
    matched = {k for k in keys for b in target.budgets
               if fnmatch.fnmatchcase(k.split("@")[0], b.pattern)}
    return matched or None


@contextlib.contextmanager
def _working_dir(folder: str | Path):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
