"""The gate evaluator: every CI gate over analysed runs, in one place, with one result type.

``evaluate`` is used by ``profile``, ``run``, ``check`` and the pytest plugin. It applies budgets
(``--max-compiles``, ``--max-slow-calls`` and ``--max-wasted-compiles`` are budgets on every
user function), ``--fail-on`` cause codes, the steady
state, no compile after a warm-up plan (``after_warmup``), a baseline (its rules:
``gate.against_baseline``), and counts a target that raised as an
error, never as a pass: its run is in ``errors`` and each of its budget rows carries the error
(``BudgetRow.status`` is ``ERROR``). A limit that has no recorded value to check for a function
that compiled (equations without the private hooks or with a compile the cost walk missed,
compile seconds of a forecast, a steady state with no counted call, slow calls in a run that
could not see them, wasted compiles of compiles with no program fingerprint) fails with a
``NOT_RECORDED`` violation that says why, never passes; ``allow_unrecorded`` (the budget key or
``--allow-unrecorded``) makes it a warning instead. Pure: no I/O. Each problem is a
``Violation`` whose message names the function, the numbers and the causes of the excess
compiles (argument, before -> after, call site); events are counted once each, however many of
their arguments changed, and listed with all of them.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from recompile_cli.analysis.compare import baseline_key
from recompile_cli.analysis.compile_cost import largest_program, top_line_text
from recompile_cli.analysis.eager_lines import EagerLine
from recompile_cli.analysis.messages import advice, causes_text, describe
from recompile_cli.analysis.report import Report
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.slow_calls import SlowGroup
from recompile_cli.analysis.stale_statics import stale_static_text
from recompile_cli.analysis.warmup.plan import signature_label
from recompile_cli.gate.against_baseline import NEEDS_PRIVATE_HOOKS, compare_baseline
from recompile_cli.gate.baseline import Baseline
from recompile_cli.gate.limits import Budget
from recompile_cli.gate.limits import Gates as Gates  # re-exported: the options of a gate
from recompile_cli.gate.rules import ALLOW_UNRECORDED
from recompile_cli.gate.rules import Rule as Rule  # re-exported: the gate's vocabulary
from recompile_cli.gate.rules import Violation as Violation
from recompile_cli.session import locations
from recompile_cli.session.model import (
    CauseCode,
    Event,
    FunctionKey,
    HookMode,
    Owner,
    function_key,
)

if TYPE_CHECKING:
    from recompile_cli.analysis.warmup.coverage import Miss


@dataclass(frozen=True, slots=True)
class BudgetRow:
    """Budget against actual for one function of one target; ``target_error`` is the failure
    of a target that raised (its counts stop there, so the row cannot pass)."""

    target: str
    function: str
    pattern: str
    compiles: int
    max_compiles: int | None
    traces: int
    max_traces: int | None
    compile_seconds: float
    max_compile_seconds: float | None
    violations: tuple[Violation, ...] = ()
    target_error: str | None = None
    equations: int | None = None  # of its largest compiled program (None: not recorded)
    max_equations: int | None = None
    # limits with no recorded value, each a NOT_RECORDED violation unless allowed (then here)
    unrecorded_warnings: tuple[str, ...] = ()
    slow_calls: int | None = None  # None: not observable in this run
    max_slow_calls: int | None = None
    defined_at: str | None = None  # the function's (two of one name are two rows)

    @property
    def ok(self) -> bool:
        return not self.violations and self.target_error is None

    @property
    def status(self) -> str:
        """This budget's verdict: ``ERROR`` (the target raised), ``FAIL`` (a limit broken) or
        ``ok``."""
        return "ERROR" if self.target_error is not None else "FAIL" if self.violations else "ok"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One function of one target, as the gate's summary shows it: the rows of the budgets
    that matched it and every other rule it broke (steady state, ``--fail-on``, baseline)."""

    rows: tuple[BudgetRow, ...]
    others: tuple[Violation, ...] = ()

    @property
    def status(self) -> str:
        """``ok`` only when every rule on the function held; else ``FAIL`` (``ERROR``: its
        target raised) with what failed: ``FAIL max_compiles, steady_state``, and with several
        budgets each budget's verdict: ``FAIL train_*: max_compiles, *: ok``."""
        if any(row.target_error is not None for row in self.rows):
            return "ERROR"
        several = len(self.rows) > 1
        parts = [f"{row.pattern}: {_rules(row.violations) or 'ok'}" if several
                 else _rules(row.violations) for row in self.rows]
        parts = [part for part in parts if part]
        if self.others:
            parts.append(_rules(self.others))
        broken = self.others or any(row.violations for row in self.rows)
        return f"FAIL {', '.join(parts)}" if broken else "ok"


def _rules(violations: Iterable[Violation]) -> str:
    return ", ".join(dict.fromkeys(str(v.rule) for v in violations))


def verdicts(result: GateResult) -> list[Verdict]:
    """The result's rows, one per function of each target (in the order of the rows), with
    the violations outside budgets that are about it: found on its target (``--fail-on``, the
    steady state) or on it across targets (the baseline's ``file.py:name``)."""
    grouped: dict[tuple[str, str, str | None], list[BudgetRow]] = {}
    for row in result.rows:
        grouped.setdefault((row.target, row.function, row.defined_at), []).append(row)
    out = []
    for (target, function, defined_at), rows in grouped.items():
        key = baseline_key(function, defined_at)
        others = tuple(v for v in result.violations
                       if (v.target == target and v.function == function)
                       or (v.target is None and v.function == key))
        out.append(Verdict(tuple(rows), others))
    return out


@dataclass(frozen=True, slots=True)
class TargetFailure:
    """A target that raised, exited non-zero or was interrupted: the gate cannot pass."""

    target: str
    message: str


@dataclass(frozen=True, slots=True)
class Gated:
    """One target's analysed run, the gates that apply to it, and its failure, if any."""

    label: str
    report: Report
    gates: Gates = field(default_factory=Gates)
    failure: str | None = None


@dataclass(frozen=True, slots=True)
class GateResult:
    """Everything the gate found; ``held`` is what decides exit 0 or 1."""

    rows: tuple[BudgetRow, ...] = ()
    violations: tuple[Violation, ...] = ()  # besides the rows' own
    errors: tuple[TargetFailure, ...] = ()
    improvements: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def every_violation(self) -> list[Violation]:
        return [v for row in self.rows for v in row.violations] + list(self.violations)

    @property
    def held(self) -> bool:
        return not self.every_violation and not self.errors

    @property
    def empty(self) -> bool:
        return not (self.rows or self.violations or self.errors or self.improvements
                    or self.warnings)


@dataclass
class _Found:
    rows: list[BudgetRow] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    errors: list[TargetFailure] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def evaluate(runs: Sequence[Gated], baseline: Baseline | None = None,
             update_command: str = "", strict: bool = False,
             compile_regression: float | None = None) -> GateResult:
    """Apply each run's gates, then the baseline to all runs together.

    Args:
        runs: the analysed runs with their gates (one for ``profile``/``run``, one per target
            for ``check``).
        baseline: compile counts to compare with; more compiles or a new compiling function
            fails, fewer is an improvement, another JAX version or backend only warns.
        update_command: the command that updates the baseline, shown with improvements.
        strict: a budget pattern that matches no recorded function fails instead of warning.
        compile_regression: with a baseline, fail where a function's compile seconds or its
            largest program's equations grew by more than this many percent.

    Returns:
        The rows, violations, target errors, improvements and warnings; ``held`` is False when
        any violation or target error was found.
    """
    found = _Found()
    for run in runs:
        gates = run.gates
        budgets = [(budget, gates.budget_owners) for budget in gates.budgets]
        if (gates.max_compiles is not None or gates.max_slow_calls is not None
                or gates.max_wasted_compiles is not None or gates.list_all
                or gates.max_stale_statics is not None):
            budgets.append((Budget("*", max_compiles=gates.max_compiles,
                                   max_slow_calls=gates.max_slow_calls,
                                   max_wasted_compiles=gates.max_wasted_compiles,
                                   max_stale_statics=gates.max_stale_statics),
                            (Owner.USER,)))
        if gates.max_eager_compiles is not None:  # on lines, not functions: no rows
            found.violations += _on(run.label, check_eager_lines(
                run.report, "*", gates.max_eager_compiles))
        for budget, owners in budgets:
            if budget.max_eager_compiles is not None:
                found.violations += _on(run.label, check_eager_lines(
                    run.report, budget.pattern, budget.max_eager_compiles))
            rows = check_budget(run.report, run.label, budget, owners, gates.allow_unrecorded)
            found.rows += [dataclasses.replace(row, target_error=run.failure) for row in rows]
            found.warnings += [text for row in rows for text in row.unrecorded_warnings]
            if (not rows and budget.pattern != "*"
                    and not (budget.max_eager_compiles is not None
                             and lines_in(run.report, budget.pattern))):
                _no_match(found, run.label, budget.pattern, strict)
            if budget.max_slow_calls is not None and run.report.slow_calls.observable is not True:
                _split_unrecorded(found, [_slow_calls_unseen(run.report, run.label, budget)],
                                  gates.allow_unrecorded or budget.allow_unrecorded)
        if gates.fail_on:
            found.violations += _on(run.label, check_fail_on(run.report, gates.fail_on))
        if gates.steady_state_after is not None:
            steady = check_steady_state(run.report, gates.steady_state_after,
                                        gates.steady_state_of)
            _split_unrecorded(found, _on(run.label, steady), gates.allow_unrecorded)
        if gates.after_warmup or gates.max_compiles_after_warmup is not None:
            _split_unrecorded(found, _on(run.label, check_after_warmup(
                run.report, gates.max_compiles_after_warmup, switch=gates.after_warmup)),
                gates.allow_unrecorded)
        for budget in gates.budgets:
            if budget.max_compiles_after_warmup is not None:
                _split_unrecorded(found, _on(run.label, check_after_warmup(
                    run.report, budget.max_compiles_after_warmup, budget.pattern)),
                    gates.allow_unrecorded or budget.allow_unrecorded)
        if run.failure:
            found.errors.append(TargetFailure(run.label, run.failure))
    if baseline is not None:
        against = compare_baseline([run.report for run in runs], baseline, update_command,
                                   compile_regression)
        # the baseline's limits with no recorded value warn where a run's gates allow it
        _split_unrecorded(found, against.violations,
                          any(run.gates.allow_unrecorded for run in runs))
        found.improvements += against.improvements
        found.warnings += against.warnings
    return GateResult(tuple(found.rows), tuple(found.violations), tuple(found.errors),
                      tuple(found.improvements), tuple(found.warnings))


def _on(target: str, violations: Iterable[Violation]) -> tuple[Violation, ...]:
    """The violations, found on ``target``."""
    return tuple(dataclasses.replace(v, target=target) for v in violations)


def _no_match(found: _Found, target: str, pattern: str, strict: bool) -> None:
    message = (f"{target}: the budget {pattern!r} matches no function that was traced or "
               "compiled; check the name (globs match function names) or remove the budget")
    if strict:
        found.violations.append(Violation(pattern, Rule.NO_MATCH, message))
    else:
        found.warnings.append(message)


def _slow_calls_unseen(report: Report, target: str, budget: Budget) -> Violation:
    """A limit on slow calls where the run could not see them: a ``NOT_RECORDED`` violation
    (once per budget, whatever functions it matches)."""
    limit = ("--max-slow-calls" if budget.pattern == "*"
             else f"the budget {budget.pattern!r} (max_slow_calls)")
    return Violation(budget.pattern, Rule.NOT_RECORDED, (
        f"{target}: {limit} {budget.max_slow_calls} cannot be checked: "
        f"{report.slow_calls.note}; {ALLOW_UNRECORDED}"))


def _split_unrecorded(found: _Found, violations: Iterable[Violation], allowed: bool) -> None:
    """``violations`` into ``found``; those of ``NOT_RECORDED`` as warnings when ``allowed``."""
    for violation in violations:
        if allowed and violation.rule == Rule.NOT_RECORDED:
            found.warnings.append(violation.message)
        else:
            found.violations.append(violation)


def check_budget(report: Report, target: str, budget: Budget,
                 owners: tuple[Owner, ...] = (Owner.USER, Owner.LIBRARY),
                 allow_unrecorded: bool = False) -> list[BudgetRow]:
    """One row per function of ``owners`` whose name matches the budget's glob (a function
    that only made slow calls, compiled before the recording, included); a limit with no
    recorded value to check is a ``NOT_RECORDED`` violation of its row, or one of its
    ``unrecorded_warnings`` when allowed (``allow_unrecorded`` or the budget's own)."""
    events = _events_by_function(report)
    allowed = allow_unrecorded or budget.allow_unrecorded
    slow = _slow_groups_by_function(report)
    observable = report.slow_calls.observable is True
    named = [(f.key, f.name, f.owner, f.compiles, f.traces, f.compile_seconds, f.defined_at)
             for f in report.functions]
    seen = {key for key, *_ in named}
    named += [(key, groups[0].function, groups[0].owner, 0, 0, 0.0, groups[0].defined_at)
              for key, groups in slow.items() if key not in seen]
    rows = []
    for key, name, owner, compiles, traces, compile_seconds, defined_at in named:
        if owner not in owners or not fnmatch.fnmatchcase(name, budget.pattern):
            continue
        members = events.get(key, [])
        compiled = [e for e in members if e.compiled]
        equations, largest = largest_program(compiled)
        recorded = largest is not None and all(e.cost is not None for e in compiled)
        groups = slow.get(key, [])
        violations = tuple(_limits(report, budget, name, compile_seconds, members))
        if budget.max_slow_calls is not None and observable:
            violations += tuple(_slow_limit(name, groups, budget.max_slow_calls))
        if budget.max_wasted_compiles is not None:
            violations += tuple(_wasted_limit(report, key, name, members,
                                              budget.max_wasted_compiles))
        if budget.max_stale_statics is not None:
            violations += tuple(_stale_statics_limit(report, key, name,
                                                     budget.max_stale_statics))
        missing = tuple(Violation(name, Rule.NOT_RECORDED, f"{target}: {text}",
                                  _site(compiled[0]) if compiled else None)
                        for text in _unrecorded(report, budget, name, compiled))
        rows.append(BudgetRow(target, name, budget.pattern, compiles, budget.max_compiles,
                              traces, budget.max_traces, compile_seconds,
                              budget.max_compile_seconds,
                              _on(target, violations + (() if allowed else missing)),
                              equations=equations if recorded else None,
                              max_equations=budget.max_equations,
                              unrecorded_warnings=tuple(v.message for v in missing)
                              if allowed else (),
                              slow_calls=sum(g.calls for g in groups) if observable else None,
                              max_slow_calls=budget.max_slow_calls, defined_at=defined_at))
    return rows


def lines_in(report: Report, pattern: str) -> list[tuple[str, EagerLine]]:
    """The lines of yours that compiled code not yours inside a function whose name matches
    ``pattern`` (a module's own lines are in ``<module>``), each with that function's name."""
    out = []
    for line in report.eager_lines.lines:
        where = locations.parse(line.line)
        function = (where.function if where is not None else None) or "<module>"
        if fnmatch.fnmatchcase(function, pattern):
            out.append((function, line))
    return out


def check_eager_lines(report: Report, pattern: str, limit: int) -> Iterable[Violation]:
    """Each line of yours, inside a function whose name matches ``pattern``, where code not
    yours compiled more than ``limit`` times: its operations, what changed, and its fix."""
    for function, line in lines_in(report, pattern):
        if line.compiles <= limit:
            continue
        shown = locations.relative(line.line)
        fix = next((s.message for s in report.suggestions if s.function == line.line), None)
        yield Violation(function, Rule.MAX_EAGER_COMPILES, (
            f"{shown}: {counted(line.compiles, 'compile')} of code not yours at this line "
            f"({line.seconds:.3f} s; {line.again} again for new inputs), max_eager_compiles "
            f"{limit}" + (f": {fix}" if fix else "")), shown)


def _slow_groups_by_function(report: Report) -> dict[str, list[SlowGroup]]:
    out: dict[str, list[SlowGroup]] = {}
    for g in report.slow_calls.groups:
        out.setdefault(g.key, []).append(g)
    return out


def _slow_limit(name: str, groups: list[SlowGroup], limit: int) -> Iterable[Violation]:
    """A function's slow calls beyond ``limit``: the groups that cost most, each with its
    reason and fix; annotated at the line responsible (else the first call's site)."""
    calls = sum(g.calls for g in groups)
    if calls <= limit:
        return
    shown = "; ".join(f"{counted(g.calls, 'call')} {g.reason}: {g.why}"
                      + (f" (first at {locations.relative(g.call_site)})" if g.call_site else "")
                      + (f". Fix: {g.fix}" if g.fix else "")
                      for g in groups[:3])
    more = f"; ... {len(groups) - 3} more" if len(groups) > 3 else ""
    avoidable = math.fsum(g.avoidable_seconds for g in groups)
    yield Violation(name, Rule.MAX_SLOW_CALLS, (
        f"{name}: {counted(calls, 'slow call')} (run through JAX's Python dispatch without "
        f"compiling), budget {limit}, {avoidable:.3f} s avoidable in all. {shown}{more}"),
        locations.relative(groups[0].line or groups[0].call_site))


def _wasted_limit(report: Report, key: str, name: str, events: list[Event], limit: int
                  ) -> Iterable[Violation]:
    """A function's wasted compiles (programs it had compiled already, compiled again) beyond
    ``limit``: the groups that cost most, each with its reason and fix; annotated at the call
    of the first of them."""
    groups = [g for g in report.wasted_compiles.groups if g.key == key]
    wasted = sum(g.compiles for g in groups)
    if wasted <= limit:
        return
    seconds = math.fsum(g.seconds for g in groups)
    shown = "; ".join(g.why + (f" (fix: {g.fix})" if g.fix else "") for g in groups[:3])
    more = f"; ... {len(groups) - 3} more" if len(groups) > 3 else ""
    first = min(seq for g in groups for seq in g.events)
    event = next((e for e in events if e.seq == first), None)
    yield Violation(name, Rule.MAX_WASTED_COMPILES, (
        f"{name}: {counted(wasted, 'wasted compile')} (a program it had compiled already, "
        f"compiled again), budget {limit}, {seconds:.3f} s in all: {shown}{more}."),
        _site(event) if event is not None else None)


def _stale_statics_limit(report: Report, key: str, name: str, limit: int
                         ) -> Iterable[Violation]:
    """A function's stale statics (equal to the one an executable was compiled for, with
    other state) beyond ``limit``, each with the fields that differed."""
    found = [s for s in report.session.stale_statics
             if function_key(s.function, s.defined_at) == key]
    if len(found) <= limit:
        return
    shown = " ".join(stale_static_text(s) for s in found[:3])
    yield Violation(name, Rule.MAX_STALE_STATICS, (
        f"{name}: {counted(len(found), 'stale static')} (an executable compiled for other "
        f"values), budget {limit}: {shown}"), locations.relative(found[0].defined_at))


def _unrecorded(report: Report, budget: Budget, name: str, compiled: list[Event]
                ) -> Iterable[str]:
    """Why each limit of ``budget`` that needs a recorded value cannot be checked on the
    ``compiled`` events of ``name``: equations for ``max_equations`` (every compile needs its
    compile-cost record), measured compile seconds for ``max_compile_seconds``."""
    where = f"the budget {budget.pattern!r} limits"
    if budget.max_equations is not None:
        lacking = [e for e in compiled if e.cost is None]
        if lacking:
            why = _unless_public(report, "a compile that was not lowered through jit's hooked "
                                 "path, or a compile-cost walk that failed: see the report's "
                                 "warnings")
            yield (f"{where} max_equations, but this run recorded no equations for "
                   f"{_of(lacking, compiled)}{name} ({why}); {ALLOW_UNRECORDED}")
    if budget.max_wasted_compiles is not None:
        lacking = [e for e in compiled if e.program_fingerprint is None]
        if lacking:
            why = _unless_public(report, "a program too large to fingerprint within the "
                                 "compile-cost bound, a compile that was not lowered through "
                                 "jit's hooked path, or a session saved before programs were "
                                 "fingerprinted")
            yield (f"{where} max_wasted_compiles, but this run has no program fingerprint for "
                   f"{_of(lacking, compiled)}{name} ({why}); {ALLOW_UNRECORDED}")
    if budget.max_compile_seconds is not None:
        lacking = [e for e in compiled if not e.compile_seconds and e.compile_start_seconds is None]
        if lacking:
            yield (f"{where} max_compile_seconds, but this run measured no compile seconds "
                   f"for {_of(lacking, compiled)}{name} (a forecast compiles nothing); "
                   f"{ALLOW_UNRECORDED}")
    if budget.max_stale_statics is not None and compiled:
        key = function_key(compiled[0].function, compiled[0].defined_at)
        if _public(report) or key not in report.session.calls:
            why = _unless_public(report, "a cached call runs none of the tool's code, so a "
                                 "stale static is seen at every call only when calls are "
                                 "counted: run with --count-calls")
            yield (f"{where} max_stale_statics, but this run did not watch the calls of "
                   f"{name} ({why}); {ALLOW_UNRECORDED}")


def _public(report: Report) -> bool:
    return report.session.environment.hook_mode == HookMode.PUBLIC_ONLY


def _unless_public(report: Report, reason: str) -> str:
    """Why a value was not recorded: the public-only hook mode, else ``reason``."""
    return NEEDS_PRIVATE_HOOKS if _public(report) else reason


def _of(lacking: list[Event], compiled: list[Event]) -> str:
    """``2 of 3 compiles of `` when only some lack the value, else ``""``."""
    return "" if len(lacking) == len(compiled) else (
        f"{len(lacking)} of {counted(len(compiled), 'compile')} of ")


def _events_by_function(report: Report) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for e in report.session.events:
        out.setdefault(function_key(e.function, e.defined_at), []).append(e)
    return out


def _limits(report: Report, budget: Budget, name: str, compile_seconds: float,
            events: list[Event]) -> Iterable[Violation]:
    compiled = [e for e in events if e.compiled]
    traced = [e for e in events if e.traced]
    if budget.max_compiles is not None and len(compiled) > budget.max_compiles:
        excess = compiled[budget.max_compiles:]
        yield Violation(name, Rule.MAX_COMPILES, (
            f"{name}: {counted(len(compiled), 'compile')}, budget {budget.max_compiles}. Excess: "
            f"{describe(report, excess)}.{advice(report, name, excess)}"), _site(excess[0]))
    if budget.max_traces is not None and len(traced) > budget.max_traces:
        excess = traced[budget.max_traces:]
        yield Violation(name, Rule.MAX_TRACES, (
            f"{name}: {counted(len(traced), 'trace')}, budget {budget.max_traces}. Excess: "
            f"{describe(report, excess)}.{advice(report, name, excess)}"), _site(excess[0]))
    if budget.max_compile_seconds is not None:
        limit = budget.max_compile_seconds * (1 + budget.tolerance)
        if compile_seconds > limit:
            yield Violation(name, Rule.MAX_COMPILE_SECONDS, (
                f"{name}: {compile_seconds:.3f} s of XLA compile, budget "
                f"{budget.max_compile_seconds:.3f} s (+{budget.tolerance:.0%} tolerance)"),
                _site(compiled[0]) if compiled else None)
    if budget.max_equations is not None:
        equations, event = largest_program(compiled)
        if event is not None and equations > budget.max_equations:
            yield Violation(name, Rule.MAX_EQUATIONS, (
                f"{name}: a compiled program of {equations:,} jaxpr equations, budget "
                f"{budget.max_equations:,}{'; ' if event.cost and event.cost.lines else ''}"
                f"{top_line_text(event)}"), _site(event))
    if budget.allowed_causes is not None:
        bad = [e for e in events if (e.traced or e.compiled) and e.depth == 0
               and report.primary(e).code not in budget.allowed_causes]
        if bad:
            yield Violation(name, Rule.ALLOWED_CAUSES, (
                f"{name}: causes outside {', '.join(budget.allowed_causes)}: "
                f"{describe(report, bad)}.{advice(report, name, bad)}"), _site(bad[0]))


def check_steady_state(report: Report, after: int, of: frozenset[str] | None = None
                       ) -> list[Violation]:
    """No compile at all once call ``after`` (1-based count) of the target has completed: a
    violation per function that compiled after it.

    ``of`` limits which counted functions' calls count (function keys); None takes any. A run
    that counted no call of them cannot be checked: a ``NOT_RECORDED`` violation.
    """
    calls = report.session.calls
    if not (any(n for key, n in calls.items() if of is None or key in of)
            or any(e.call_index is not None and (of is None or e.call_of in of)
                   for e in report.session.events)):
        whose = ", ".join(sorted(FunctionKey.parse(k).name for k in of)) if of else "any function"
        return [Violation(whose, Rule.NOT_RECORDED, (
            f"steady_state_after {after}: this run counted no call of {whose} (calls are "
            "counted only for functions jitted after the script starts: see docs/ci.md), "
            f"so no compile could be placed after the warm-up; {ALLOW_UNRECORDED}"))]
    late: dict[str, list[Event]] = {}
    for e in report.session.events:
        if (e.compiled and e.call_index is not None and e.call_index >= after
                and (of is None or e.call_of in of)):
            late.setdefault(function_key(e.function, e.defined_at), []).append(e)
    out = []
    for events in late.values():
        first = events[0]
        counted_of = FunctionKey.parse(first.call_of).name if first.call_of else "the target"
        assert first.call_index is not None
        out.append(Violation(first.function, Rule.STEADY_STATE, (
            f"After a warm-up of {counted(after, 'call')} of {counted_of}, {first.function} "
            f"compiled {counted(len(events), 'more time')}, first during call "
            f"{first.call_index + 1}: {describe(report, events)}."
            f"{advice(report, first.function, events)}"), _site(first)))
    return out


def check_after_warmup(report: Report, limit: int | None = None, pattern: str = "*",
                       switch: bool = False) -> list[Violation]:
    """One violation per function of yours (matching ``pattern``) that compiled after the
    warm-up plan more than ``limit`` times (None: 0, ``--after-warmup``'s own gate), naming the
    signatures the plan lacked, their causes against the closest planned one and what would
    have covered them. Without a recorded warm-up: one violation (``switch``: the
    ``after_warmup`` gate's; else ``NOT_RECORDED``), never a pass."""
    found = report.warmup_coverage
    rule = Rule.AFTER_WARMUP if limit is None else Rule.MAX_COMPILES_AFTER_WARMUP
    if found is None:
        if switch:
            return [Violation("the warm-up", Rule.AFTER_WARMUP, (
                "after_warmup: this run recorded no warm-up plan, so nothing shows that it "
                "covers the workload; run the plan first (run --after-warmup PLAN.py)"))]
        return [Violation(pattern, Rule.NOT_RECORDED, (
            f"max_compiles_after_warmup {limit} cannot be checked: this run recorded no "
            f"warm-up plan (run --after-warmup PLAN.py); {ALLOW_UNRECORDED}"))]
    if found.warmup.error is not None:
        return []  # the plan raised: the run's failure, an error of the gate already
    by_function: dict[str, list[Miss]] = {}
    for miss in found.misses:
        if fnmatch.fnmatchcase(miss.event.function, pattern):
            by_function.setdefault(function_key(miss.event.function, miss.event.defined_at),
                                   []).append(miss)
    plan = found.warmup.plan
    shown_plan = locations.relative(plan) or plan
    allowed = limit or 0
    out = []
    for members in by_function.values():
        if len(members) <= allowed:
            continue
        name = members[0].event.function
        over = f", limit {allowed}" if limit is not None else ""
        out.append(Violation(name, rule, (
            f"{name}: {counted(len(members), 'compile')} after the warm-up ({shown_plan}{over}): "
            + "; ".join(describe_miss(m) for m in members[:3])
            + (f"; ... {len(members) - 3} more" if len(members) > 3 else "")
            + f". To cover it: {_covered_by(members[0])}"),
            _site(members[0].event)))
    return out


def _covered_by(miss: Miss) -> str:
    if miss.planned is None:
        return miss.fix
    return ("add its lines to the plan (the report's \"Compiles after the warm-up\" table "
            f"writes them), or {miss.fix}")


def describe_miss(miss: Miss) -> str:
    """``the plan lacks f(x=f32[7,8]): shape at x: f32[8,8] -> f32[7,8] against the closest
    planned signature (prog.py:7 (main))``."""
    event = miss.event
    against = ("" if miss.causes[0].code == CauseCode.FIRST_COMPILE
               else " against the closest planned signature")
    text = (f"the plan lacks {event.function}({signature_label(event.signature)}): "
            f"{causes_text(list(miss.causes))}{against}")
    if miss.skipped is not None:
        text += f" (the plan skipped a signature of it here: {miss.skipped.reason})"
    if miss.nearest is not None:
        text += f" [nearest warmed: {signature_label(miss.nearest)}]"
    if miss.unplayable is not None:
        text += f" (not replayable: {miss.unplayable})"
    if event.call_site:
        text += f" ({locations.relative(event.call_site)})"
    return text


def _site(event: Event) -> str | None:
    """A violation's place in the source (GitHub annotates that line), as people read it
    (``locations.relative``): the call site, else where the function is defined (a spec's call,
    ``shapes.yaml calls[1]``, has no line)."""
    if locations.parse(event.call_site) is None and event.defined_at:
        return locations.relative(event.defined_at)
    return locations.relative(event.call_site)


def check_fail_on(report: Report, codes: Iterable[CauseCode]) -> list[Violation]:
    """A violation per function for its top-level events outside JAX with any of those causes:
    each event counted once, with all its arguments that changed in one of the ``codes``."""
    wanted = tuple(dict.fromkeys(codes))
    found: dict[str, list[Event]] = {}
    for e in report.session.events:
        if e.owner != Owner.JAX and e.depth == 0 and any(
                cause.code in wanted for cause in report.causes[e.seq]):
            found.setdefault(function_key(e.function, e.defined_at), []).append(e)
    out = []
    for events in found.values():
        name = events[0].function
        seen = {cause.code for e in events for cause in report.causes[e.seq]}
        named = ", ".join(code for code in wanted if code in seen)
        out.append(Violation(name, Rule.FAIL_ON, (
            f"{name}: {counted(len(events), 'event')} with cause {named} (--fail-on): "
            f"{describe(report, events, codes=wanted)}.{advice(report, name, events, wanted)}"),
            _site(events[0])))
    return out
