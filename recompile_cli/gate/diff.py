"""``recompile-cli diff OLD NEW``: what changed between two saved runs, per function."""

from __future__ import annotations

from dataclasses import dataclass

from recompile_cli.analysis.report import Report
from recompile_cli.gate.evaluate import baseline_key


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
    def totals(report: Report) -> dict[str, tuple[int, int, float]]:
        out: dict[str, tuple[int, int, float]] = {}
        for f in report.functions[report.functions["owner"] != "jax"].itertuples():
            t, c, s = out.get(baseline_key(f.name, f.defined_at), (0, 0, 0.0))
            out[baseline_key(f.name, f.defined_at)] = (t + int(f.traces), c + int(f.compiles),
                                                       s + float(f.compile_seconds))
        return out

    before, after = totals(old), totals(new)
    zero = (0, 0, 0.0)
    changes = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key, zero), after.get(key, zero)
        changes.append(FunctionChange(key, (b[0], a[0]), (b[1], a[1]), (b[2], a[2])))
    return changes, _new_causes(old, new)


def _new_causes(old: Report, new: Report) -> list[NewCause]:
    def causes(report: Report) -> dict[tuple, list]:
        found: dict[tuple, list] = {}
        for e in report.session.events:
            if e.owner == "jax" or e.depth > 0:
                continue
            cause = report.primary(e)
            key = (baseline_key(e.function, e.defined_at), cause.code, cause.argument)
            found.setdefault(key, []).append(cause)
        return found

    seen, now = causes(old), causes(new)
    return [NewCause(fn, code, arg, items[0].before, items[-1].after, len(items))
            for (fn, code, arg), items in now.items() if (fn, code, arg) not in seen]
