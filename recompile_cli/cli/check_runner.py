"""``recompile-cli check``: run every target of a budget file and pair each with its gates (the
orchestration of the measured process, analysis and gate that the command needs; ``gate``
itself stays pure).

Everything in the file (and every spec it names) is validated before anything runs; each target
runs in a measured process of its own (``cli.finish.supervised``) in the budget file's folder,
since its paths are relative to it. A target that raises, exits or does not finish is recorded as
that target's error (the gate fails); Ctrl-C or SIGTERM stops the whole check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

from recompile_cli import exits
from recompile_cli.analysis.report import Report
from recompile_cli.capture.running.warmup import check_plan
from recompile_cli.cli import finish
from recompile_cli.exits import ExitCode
from recompile_cli.gate.budgets import BudgetFile, TargetBudget
from recompile_cli.gate.evaluate import Gated, Gates
from recompile_cli.gate.limits import Budget
from recompile_cli.inputs.spec import Spec, load_spec, single_call
from recompile_cli.process.job import Job
from recompile_cli.session.model import FunctionKey, HookMode, Owner


def run_checks(budgets: BudgetFile, gates: Gates | None = None,
               hook_mode: HookMode = HookMode.PRIVATE, *, quiet: bool = False,
               timeout: float | None = None) -> tuple[list[Gated], ExitCode | None]:
    """Run the targets in order; returns each run with its gates (``gates``: the command
    line's, on every target, with each target's budgets, steady state and warm-up added), and
    the exit code of an interruption (130/143) that stopped the check early, if any.
    ``timeout`` applies to each target."""
    runs: list[Gated] = []
    gates = gates or Gates()
    with _working_dir(budgets.folder):
        specs = [_spec(t) for t in budgets.targets]  # fail fast on a bad spec, or plan
        plans = [check_plan(t.after_warmup, "after_warmup:") if t.after_warmup else None
                 for t in budgets.targets]
        for target, spec, plan in zip(budgets.targets, specs, plans, strict=True):
            try:
                outcome = finish.supervised(_job(target, spec, hook_mode, plan), quiet=quiet,
                                            timeout=timeout, cwd=Path(budgets.folder))
            except exits.INTERRUPTIONS as exc:  # a signal deferred before the target started
                return runs, exits.interruption_code(exc)
            report = finish.report_of(outcome.session)
            steady_of = _steady_state_keys(report, target)
            on_target = dataclasses.replace(
                gates, budgets=target.budgets, steady_state_after=target.steady_state_after,
                steady_state_of=steady_of, after_warmup=plan is not None)
            runs.append(Gated(target.label, report, on_target, outcome.failure))
            if outcome.interrupted:
                return runs, ExitCode(outcome.interrupted)
    return runs, None


def _spec(target: TargetBudget) -> Spec | None:
    if target.target is None:
        return None
    if target.args is None:
        return single_call()
    return load_spec(target.args, option="the budget file's 'args:'")


def _job(target: TargetBudget, spec: Spec | None, hook_mode: HookMode, plan: Path | None
         ) -> Job:
    warmup = str(plan) if plan is not None else None
    if target.script is not None:
        return Job(kind="script", target=target.script, script_args=tuple(target.script_args),
                   hook_mode=hook_mode.value, count_calls=target.steady_state_after is not None,
                   after_warmup=warmup)
    assert target.target is not None and spec is not None
    options = dict(spec.jit_options)
    options.update(dict(target.jit_options))
    return Job(kind="profile", target=target.target, spec=spec.path or None,
               spec_option="the budget file's 'args:'", jit_options=options,
               no_jit=target.no_jit, hook_mode=hook_mode.value, after_warmup=warmup)


def _steady_state_keys(report: Report, target: TargetBudget) -> frozenset[str] | None:
    """Whose calls count for the steady state: the profiled function (its calls are the only
    ones counted), or for a script the counted functions its budgets name (None: any). A
    budget that limits only the compiles at lines (``max_eager_compiles``) names no function,
    and a glob names your functions only (``*`` is not every library's internals; a library's
    function is named by its exact name)."""
    if target.steady_state_after is None:
        return None
    keys = {e.call_of for e in report.session.events if e.call_of}
    if target.target is not None:
        return frozenset(report.session.calls) or None
    owners = {f.key: f.owner for f in report.functions}
    naming = [b for b in target.budgets
              if dataclasses.replace(b, max_eager_compiles=None) != Budget(b.pattern)]
    matched = {k for k in keys for b in naming
               if fnmatch.fnmatchcase(FunctionKey.parse(k).name, b.pattern)
               and (owners.get(k, Owner.USER) == Owner.USER
                    or FunctionKey.parse(k).name == b.pattern)}
    return frozenset(matched) or None


@contextlib.contextmanager
def _working_dir(folder: str | Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
