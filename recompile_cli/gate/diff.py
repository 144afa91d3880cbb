"""``recompile-cli diff OLD NEW``: what changed between two saved runs, per function."""

from __future__ import annotations

from dataclasses import dataclass

from recompile_cli.analysis.causes import Cause
from recompile_cli.analysis.report import Report
from recompile_cli.gate.baseline import Totals, baseline_key, function_totals
from recompile_cli.session.model import Owner


@dataclass(frozen=True, slots=True)
class FunctionChange:
    function: str  # file.py:name
    traces: tuple[int, int]
    compiles: tuple[int, int]
    compile_seconds: tuple[float, float]

    @property
    def regressed(self) -> bool:
        return self.compiles[1] > self.compiles[0]


@dataclass(frozen=True, slots=True)
class NewCause:
    function: str
    code: str
    argument: str | None
    before: str | None
    after: str | None
    count: int


def diff_reports(old: Report, new: Report) -> tuple[list[FunctionChange], list[NewCause]]:
    """Per-function counts before and after (functions outside JAX), and the (function, cause,
    argument) triples NEW has that OLD has not."""
    before, after = function_totals([old]), function_totals([new])
    changes = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key, Totals()), after.get(key, Totals())
        changes.append(FunctionChange(key, (b.traces, a.traces), (b.compiles, a.compiles),
                                      (b.compile_seconds, a.compile_seconds)))
    return changes, _new_causes(old, new)


def _new_causes(old: Report, new: Report) -> list[NewCause]:
    def causes(report: Report) -> dict[tuple[str, str, str | None], list[Cause]]:
        found: dict[tuple[str, str, str | None], list[Cause]] = {}
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
