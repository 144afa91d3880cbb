"""CI gates on compile counts: budgets, steady state, quick flags and baselines.

Pure checks over ``Report``s. Each returns ``Violation``s whose message names the function, the
numbers and the causes of the excess compiles; an empty list means the gate holds. Counts are
deterministic, so they are what is gated; compile seconds only with a generous tolerance.
"""

from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from recompile_cli.analysis.report import Report
from recompile_cli.gate.budgets import Budget
from recompile_cli.analysis.causes import FIRST_COMPILE
from recompile_cli.errors import BudgetError
from recompile_cli.capture.frames import path_of, relative
from recompile_cli.session.model import SCHEMA_VERSION, Event, function_key

BASELINE_KIND = "recompile-cli-baseline"


@dataclass(frozen=True, slots=True)
class Violation:
    function: str
    rule: str  # max_compiles | max_traces | max_compile_seconds | allowed_causes | steady_state
    #            | fail_on | baseline
    message: str
    call_site: str | None = None  # where the first offending compile was triggered


@dataclass(frozen=True, slots=True)
class BudgetRow:
    """Budget against actual for one function of one target."""

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

    @property
    def ok(self) -> bool:
        return not self.violations


def check_budgets(report: Report, target: str, budgets: Iterable[Budget],
                  owners: tuple[str, ...] = ("user", "library")) -> list[BudgetRow]:
    """One row per (budget, matching function); functions matched by no budget are free."""
    rows = []
    functions = report.functions[report.functions["owner"].isin(owners)]
    for budget in budgets:
        matched = [f for f in functions.itertuples() if fnmatch.fnmatchcase(f.name, budget.pattern)]
        for f in matched:
            events = [e for e in report.session.events
                      if function_key(e.function, e.defined_at) == f.key]
            violations = tuple(_limits(report, budget, f, events))
            rows.append(BudgetRow(target, f.name, budget.pattern, int(f.compiles),
                                  budget.max_compiles, int(f.traces), budget.max_traces,
                                  float(f.compile_seconds), budget.max_compile_seconds,
                                  violations))
        if not matched:
            rows.append(BudgetRow(target, f"{budget.pattern} (no match)", budget.pattern, 0,
                                  budget.max_compiles, 0, budget.max_traces, 0.0,
                                  budget.max_compile_seconds))
    return rows


def _limits(report: Report, budget: Budget, f, events: list[Event]) -> Iterable[Violation]:
    compiled = [e for e in events if e.compiled]
    traced = [e for e in events if e.traced]
    if budget.max_compiles is not None and len(compiled) > budget.max_compiles:
        excess = compiled[budget.max_compiles:]
        yield Violation(f.name, "max_compiles", (
            f"{f.name}: {len(compiled)} compiles, budget {budget.max_compiles}. Excess: "
            f"{describe(report, excess)}"), excess[0].call_site)
    if budget.max_traces is not None and len(traced) > budget.max_traces:
        excess = traced[budget.max_traces:]
        yield Violation(f.name, "max_traces", (
            f"{f.name}: {len(traced)} traces, budget {budget.max_traces}. Excess: "
            f"{describe(report, excess)}"), excess[0].call_site)
    if budget.max_compile_seconds is not None:
        limit = budget.max_compile_seconds * (1 + budget.tolerance)
        if f.compile_seconds > limit:
            yield Violation(f.name, "max_compile_seconds", (
                f"{f.name}: {f.compile_seconds:.3f} s of XLA compile, budget "
                f"{budget.max_compile_seconds:.3f} s (+{budget.tolerance:.0%} tolerance)"),
                compiled[0].call_site if compiled else None)
    if budget.allowed_causes is not None:
        bad = [e for e in events if (e.traced or e.compiled) and e.depth == 0
               and report.primary(e).code not in budget.allowed_causes]
        if bad:
            yield Violation(f.name, "allowed_causes", (
                f"{f.name}: causes outside {', '.join(budget.allowed_causes)}: "
                f"{describe(report, bad)}"), bad[0].call_site)


def check_steady_state(report: Report, after: int, of: set[str] | None = None) -> list[Violation]:
    """No compile at all once call ``after`` (1-based count) of the target has completed.

    ``of`` limits which counted functions' calls count (function keys); None takes any.
    """
    late = [e for e in report.session.events
            if e.compiled and e.call_index is not None and e.call_index >= after
            and (of is None or e.call_of in of)]
    if not late:
        return []
    first = late[0]
    name = (first.call_of or "the target").split("@")[0]
    functions = sorted({e.function for e in late})
    return [Violation(name, "steady_state", (
        f"{len(late)} compile(s) after the first {after} calls of {name} (warm-up), first in "
        f"call {first.call_index + 1}: {', '.join(functions)}. {describe(report, late)}"),
        first.call_site)]


def check_max_compiles(report: Report, limit: int | None) -> list[BudgetRow]:
    """A row per user function, failing where it compiled more than ``limit`` (None: no limit,
    e.g. to list every function in a JUnit report)."""
    return check_budgets(report, report.session.target, [Budget("*", max_compiles=limit)],
                         owners=("user",))


def check_fail_on(report: Report, codes: Iterable[str]) -> list[Violation]:
    wanted = set(codes)
    found: dict[tuple[str, str], list[Event]] = {}
    for e in report.session.events:
        if e.owner == "jax" or e.depth > 0:
            continue
        for cause in report.causes[e.seq]:
            if cause.code in wanted:
                found.setdefault((e.function, cause.code), []).append(e)
    return [Violation(name, "fail_on", f"{name}: {len(events)} event(s) with cause {code} "
                      f"(--fail-on): {describe(report, events)}", events[0].call_site)
            for (name, code), events in found.items()]


def describe(report: Report, events: list[Event], limit: int = 3) -> str:
    """``shape at x: f32[3] -> f32[4] (prog.py:7 (main)); ...`` for the first few events."""
    parts = []
    for e in events[:limit]:
        cause = report.primary(e)
        text = cause.code if cause.code != FIRST_COMPILE else "first compile"
        if cause.argument:
            text += f" at {cause.argument}"
        if cause.before or cause.after:
            text += f": {cause.before} -> {cause.after}"
        if e.call_site:
            text += f" ({relative(e.call_site)})"
        parts.append(text)
    more = f"; ... {len(events) - limit} more" if len(events) > limit else ""
    return "; ".join(parts) + more


# -- baselines -------------------------------------------------------------------------------------
@dataclass
class BaselineResult:
    violations: list[Violation] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def baseline_key(name: str, defined_at: str | None) -> str:
    """``file.py:function``: stable across checkouts and line moves."""
    path = path_of(defined_at)
    return f"{os.path.basename(path)}:{name}" if path else name


def make_baseline(reports: Iterable[Report]) -> dict:
    reports = list(reports)
    functions: dict[str, dict[str, int]] = {}
    for report in reports:
        for f in report.functions[report.functions["owner"] != "jax"].itertuples():
            entry = functions.setdefault(baseline_key(f.name, f.defined_at),
                                         {"traces": 0, "compiles": 0})
            entry["traces"] += int(f.traces)
            entry["compiles"] += int(f.compiles)
    env = asdict(reports[0].session.environment) if reports else {}
    return {"kind": BASELINE_KIND, "schema_version": SCHEMA_VERSION,
            "environment": {k: env.get(k) for k in ("jax_version", "backend", "python_version")},
            "functions": dict(sorted(functions.items()))}


def save_baseline(reports: Iterable[Report], path: str | Path) -> None:
    Path(path).write_text(json.dumps(make_baseline(reports), indent=2) + "\n")


def load_baseline(path: str | Path) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise BudgetError(f"Cannot read the baseline {path}: {exc}. Create it with "
                          "--save-baseline.") from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise BudgetError(f"{path} is not a recompile-cli baseline. Create one with "
                          "--save-baseline.")
    return data


def compare_baseline(reports: Iterable[Report], baseline: dict, path: str,
                     update_command: str) -> BaselineResult:
    """More compiles than the baseline, or a new function that compiles, fails; fewer is an
    improvement; another JAX version or backend is only a warning."""
    reports = list(reports)
    current = make_baseline(reports)
    result = BaselineResult()
    for field_name in ("jax_version", "backend"):
        then, now = baseline["environment"].get(field_name), current["environment"][field_name]
        if then != now:
            result.warnings.append(f"the baseline {path} was made with {field_name} {then}, "
                                   f"this run has {now}: counts may differ for that reason")
    old = baseline.get("functions", {})
    events = {baseline_key(e.function, e.defined_at): (r, e) for r in reports
              for e in r.session.events if e.compiled}
    for key, now in current["functions"].items():
        before = old.get(key)
        if before is None and now["compiles"] > 0:
            report, event = events.get(key, (None, None))
            result.violations.append(Violation(key, "baseline", (
                f"{key}: new function compiles {now['compiles']} time(s); not in the baseline "
                f"{path}"), event.call_site if event else None))
        elif before is not None and now["compiles"] > before["compiles"]:
            report, event = events.get(key, (None, None))
            result.violations.append(Violation(key, "baseline", (
                f"{key}: {now['compiles']} compiles, baseline {before['compiles']} "
                f"(+{now['compiles'] - before['compiles']})"),
                event.call_site if event else None))
        elif before is not None and now["compiles"] < before["compiles"]:
            result.improvements.append(
                f"{key}: {now['compiles']} compiles, baseline {before['compiles']} "
                f"(-{before['compiles'] - now['compiles']}). Update the baseline: "
                f"{update_command}")
    return result
