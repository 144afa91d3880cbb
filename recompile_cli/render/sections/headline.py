"""The opening of every human report (terminal, Markdown, the HTML page and the notebook's
inline report): what a public-only recording cannot tell, when it is one; your functions first,
one line each (``train_step: 2 compiles, 1 re-compile (shape)``), then what JAX's and
libraries' own functions compiled, then the run's totals; a verdict line when your functions
compiled a program they already had (``render.sections.wasted_compiles``).

A first compile is called a first compile and never counts as a re-compile (``Tally``
draws the line). The lines are plain text quoting values from the session; each format makes
them inert where it writes them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from recompile_cli.analysis.report import FunctionRow, OwnerTotals, Report, Tally
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.slow_calls import verdict
from recompile_cli.render.sections.eager_lines import storm_lines
from recompile_cli.render.sections.wasted_compiles import verdict as wasted_verdict
from recompile_cli.session.model import CauseCode, HookMode, Owner, function_key

LISTED = 5  # functions of yours with a line of their own; the rest are summed up in one


@dataclass(frozen=True, slots=True)
class Headline:
    """The opening lines: ``functions`` (one per function of yours that compiled, re-traced or
    raised, most re-compiles first), ``yours`` (their sum, when there is more than one), ``others``
    (JAX's and libraries' compiles, when there are any) and ``overall`` (the run's totals)."""

    functions: list[str]
    yours: str | None
    others: str | None
    overall: str
    mode: str | None = None  # public-only: what the report cannot tell, said before anything
    slow: str | None = None  # your slow calls, or that they could not be seen
    storms: tuple[str, ...] = ()  # lines of yours where code not yours compiles again and again
    wasted: str | None = None  # compiles of yours that compiled a program they already had

    @property
    def lines(self) -> list[str]:
        return [*([self.mode] if self.mode else []), *self.functions,
                *([self.yours] if self.yours else []), *([self.wasted] if self.wasted else []),
                *([self.slow] if self.slow else []), *self.storms,
                *([self.others] if self.others else []), self.overall]


def headline(report: Report) -> Headline:
    """The report's opening lines."""
    tallies = function_tallies(report)
    busy = [(row, t) for row, t in tallies
            if t.compiles or t.error_count or t.retrace_count or t.refused]
    busy.sort(key=lambda item: -item[1].recompile_count)  # stable: then by compile seconds
    functions = [describe(row.label, t) for row, t in busy[:LISTED]]
    rest = [t for _, t in busy[LISTED:]]
    if rest:
        functions.append(f"... {len(rest)} more of yours: "
                         f"{counted(sum(t.compiles for t in rest), 'compile')}, "
                         f"{counted(sum(t.recompile_count for t in rest), 're-compile')}")
    if not functions:
        functions = ["none of your functions was compiled" if tallies
                     else "no function of yours was traced or compiled"]
    user = report.totals.by_owner.get(Owner.USER)
    yours = _yours(user) if user is not None and len(busy) > 1 else None
    return Headline(functions, yours, _others(report.functions), _overall(report),
                    public_only_note(report), verdict(report.slow_calls),
                    tuple(storm_lines(report.eager_lines)), wasted_verdict(report))


def public_only_note(report: Report) -> str | None:
    """What a public-only recording cannot tell, and why it is one; ``None`` for private."""
    env = report.session.environment
    if env.hook_mode != HookMode.PUBLIC_ONLY:
        return None
    version = tuple(int(part) for part in re.findall(r"\d+", env.jax_version)[:2])
    why = (f"JAX {env.jax_version} lacks the internals of JAX >= 0.9" if version < (0, 9)
           else "chosen with --hook-mode public-only")
    return (f"public-only mode ({why}): counts and times only; causes are unknown, with no "
            "argument changes; locations and call counts only with --count-calls")


def function_tallies(report: Report) -> list[tuple[FunctionRow, Tally]]:
    """Each function of yours (in the report's order) with the tally of its events."""
    rows = {row.key: row for row in report.functions if row.owner == Owner.USER}
    found: dict[str, Tally] = {key: Tally() for key in rows}
    keys: dict[tuple[str, str | None], str] = {}
    for event in report.session.events:
        where = (event.function, event.defined_at)
        key = keys.get(where)
        if key is None:
            key = keys[where] = function_key(*where)
        if key in found:
            found[key].add(event, report.causes[event.seq][0])
    return [(row, found[key]) for key, row in rows.items()]


def describe(name: str, t: Tally) -> str:
    """``train_step: 2 compiles, 1 re-compile (shape)``."""
    parts = [counted(t.compiles, "compile")]
    if t.recompile_count:
        parts.append(f"{counted(t.recompile_count, 're-compile')} ({_causes(t.recompiles)})")
    if t.first_compiles > 1:
        parts.append(counted(t.first_compiles, "first compile"))
    if t.retrace_count:
        parts.append(f"{counted(t.retrace_count, 're-trace')} that compiled nothing "
                     f"({_causes(t.retraces)})")
    if t.error_count:
        parts.append(f"{counted(t.error_count, 'trace')} raised ({_causes(t.errors)})")
    if t.refused:
        parts.append(f"{counted(sum(t.refused.values()), 'call')} refused by JAX "
                     f"({_causes(t.refused)})")
    if len(parts) == 1 and t.compiles:
        parts.append("no re-compile")
    return f"{name}: " + ", ".join(parts)


def _yours(user: OwnerTotals) -> str:
    compiles, functions = counted(user.compiles, "compile"), counted(user.functions, "function")
    first, again = counted(user.first_compiles, "first compile"), counted(user.recompiles,
                                                                          "re-compile")
    return (f"yours: {compiles} of {functions} ({first}, {again}), "
            f"{counted(user.errors, 'error')}; {user.compile_seconds:.3f} s compile")


def _others(rows: tuple[FunctionRow, ...]) -> str | None:
    """``not yours: jax 14 compiles of 9 functions (0.630 s compile)``: per package, those that
    compiled (XLA compile seconds, as ``yours``; the eager line counts trace and lower too)."""
    compiles: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    for row in rows:
        if row.owner != Owner.USER and row.compiles:
            compiles[row.package] += row.compiles
            functions[row.package] += 1
            seconds[row.package] = seconds.get(row.package, 0.0) + row.compile_seconds
    if not compiles:
        return None
    return "not yours: " + ", ".join(
        f"{package} {counted(n, 'compile')} of {counted(functions[package], 'function')} "
        f"({seconds[package]:.3f} s compile)" for package, n in sorted(compiles.items()))


def _overall(report: Report) -> str:
    t = report.totals
    return (f"in all, {t.wall_seconds:.3f} s: {counted(t.traces, 'trace')}, "
            f"{counted(t.compiles, 'compile')}, {counted(t.errors, 'error')}; trace "
            f"{t.trace_seconds:.3f} s, lower {t.lower_seconds:.3f} s, compile "
            f"{t.compile_seconds:.3f} s")


def _causes(counts: Counter[CauseCode] | Counter[str]) -> str:
    """``shape`` for one kind, ``shape 2, dtype 1`` for several."""
    if len(counts) == 1:
        return str(next(iter(counts)))
    return ", ".join(f"{code} {n}" for code, n in counts.most_common())

