"""Comparing runs: per-function totals keyed so that they match across runs
(``function_totals``, which baselines store and the gate compares), and what changed between two
saved runs (``diff_reports``, the ``diff`` command).

Functions are keyed ``file.py:name`` (``baseline_key``), which stays stable across checkouts and
line moves. Pure: no I/O.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.report import Report
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import CauseCode, Owner


@dataclass(frozen=True, slots=True)
class FunctionTotals:
    """One function's totals over one or more reports."""

    traces: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0
    # jaxpr equations of its largest compiled program; None: not recorded for every compile
    # (public-only hooks, JAX < 0.9, a session saved before the compile cost existed)
    equations: int | None = None

    def __add__(self, other: FunctionTotals) -> FunctionTotals:
        recorded = [n for n in (self.equations, other.equations) if n is not None]
        return FunctionTotals(self.traces + other.traces, self.compiles + other.compiles,
                              self.compile_seconds + other.compile_seconds,
                              max(recorded) if recorded else None)


def baseline_key(name: str, defined_at: str | None) -> str:
    """``file.py:function``: stable across checkouts and line moves."""
    path = path_of(defined_at)
    return f"{os.path.basename(path)}:{name}" if path else name


def function_totals(reports: Iterable[Report]) -> dict[str, FunctionTotals]:
    """``file.py:name`` -> totals of every function that is not JAX's own, over all reports."""
    out: dict[str, FunctionTotals] = {}
    for report in reports:
        equations: dict[str, int] = {}
        lacking = set()  # a compile without its cost record: the largest program is unknown
        for e in report.session.events:
            key = baseline_key(e.function, e.defined_at)
            if e.cost is not None:
                equations[key] = max(equations.get(key, 0), e.cost.equations)
            elif e.compiled:
                lacking.add(key)
        for key in lacking:
            equations.pop(key, None)
        for f in report.functions:
            if f.owner == Owner.JAX:
                continue
            key = baseline_key(f.name, f.defined_at)
            out[key] = out.get(key, FunctionTotals()) + FunctionTotals(
                f.traces, f.compiles, f.compile_seconds, equations.get(key))
    return out


@dataclass(frozen=True, slots=True)
class FunctionChange:
    function: str  # file.py:name
    traces: tuple[int, int]
    compiles: tuple[int, int]
    compile_seconds: tuple[float, float]
    # of the largest compiled program (None: not recorded in that run)
    equations: tuple[int | None, int | None] = (None, None)
    library: str | None = None  # the installed package of a library's function (not yours)

    @property
    def regressed(self) -> bool:
        return self.compiles[1] > self.compiles[0]


@dataclass(frozen=True, slots=True)
class NewCause:
    function: str
    code: CauseCode
    argument: str | None
    before: str | None
    after: str | None
    count: int


def diff_reports(old: Report, new: Report) -> tuple[list[FunctionChange], list[NewCause]]:
    """Per-function counts before and after (functions outside JAX), and the (function, cause,
    argument) triples NEW has that OLD has not."""
    before, after = function_totals([old]), function_totals([new])
    libraries = {baseline_key(f.name, f.defined_at): f.package
                 for report in (old, new) for f in report.functions if f.owner == Owner.LIBRARY}
    changes = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key, FunctionTotals()), after.get(key, FunctionTotals())
        changes.append(FunctionChange(key, (b.traces, a.traces), (b.compiles, a.compiles),
                                      (b.compile_seconds, a.compile_seconds),
                                      (b.equations, a.equations), libraries.get(key)))
    return changes, _new_causes(old, new)


def _new_causes(old: Report, new: Report) -> list[NewCause]:
    def causes(report: Report) -> dict[tuple[str, CauseCode, str | None], list[Cause]]:
        found: dict[tuple[str, CauseCode, str | None], list[Cause]] = {}
        for e in report.session.events:
            if e.owner == Owner.JAX or e.depth > 0:
                continue
            cause = report.primary(e)
            key = (baseline_key(e.function, e.defined_at), cause.code, cause.argument)
            found.setdefault(key, []).append(cause)
        return found

    seen, now = causes(old), causes(new)
    return [NewCause(fn, code, arg, items[0].before, items[-1].after, len(items))
            for (fn, code, arg), items in now.items() if (fn, code, arg) not in seen]
