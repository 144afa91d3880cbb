"""The baseline rules of the gate: compile counts against a baseline file, and
``--fail-on-compile-regression`` (compile seconds and equations against the baseline's).

More compiles than the baseline, or a new function that compiles, fails; fewer is an
improvement; another JAX version or backend only warns. Equations are exact (the same program
always has the same count); compile seconds are noisy (a 0.09 s compile can take 0.13 s on the
next run), so growth under ``NOISE_FLOOR_SECONDS`` never counts as a regression. A baseline of
0 equations is compared like any other (a program can have none); a value that cannot be
compared because one side did not record it (equations without the private hooks, JAX < 0.9;
compile seconds of a forecast, which compiles nothing) is a ``NOT_RECORDED`` violation, which
the evaluator turns into a warning under ``allow_unrecorded``. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from recompile_cli.analysis.compare import FunctionTotals, baseline_key, function_totals
from recompile_cli.analysis.report import Report
from recompile_cli.analysis.shorten import counted
from recompile_cli.gate.baseline import Baseline, environment_of
from recompile_cli.gate.rules import ALLOW_UNRECORDED, Rule, Violation
from recompile_cli.session.locations import relative

NOISE_FLOOR_SECONDS = 0.25  # compile-seconds growth below this never counts as a regression
NEEDS_PRIVATE_HOOKS = "equations need the private hooks: hook mode private, JAX >= 0.9"


@dataclass
class BaselineFindings:
    """What comparing with the baseline found."""

    violations: list[Violation] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def compare_baseline(reports: list[Report], baseline: Baseline, update_command: str = "",
                     compile_regression: float | None = None) -> BaselineFindings:
    """Compile counts (and with ``compile_regression``, seconds and equations) of ``reports``
    against ``baseline``."""
    found = BaselineFindings()
    environment = environment_of(reports)
    for name in ("jax_version", "backend"):
        then, this = baseline.environment.get(name), environment.get(name)
        if then != this:
            found.warnings.append(f"the baseline {relative(baseline.path)} was made with {name} "
                                  f"{then}, this run has {this}: counts may differ for that "
                                  "reason")
    sites = {baseline_key(e.function, e.defined_at): e.call_site for r in reports
             for e in r.session.events if e.compiled}
    unchecked: dict[tuple[str, str], list[str]] = {}  # (where, what) -> keys
    for key, now in function_totals(reports).items():
        before = baseline.functions.get(key)
        if before is None and now.compiles > 0:
            found.violations.append(Violation(key, Rule.BASELINE, (
                f"{key}: new function compiles {counted(now.compiles, 'time')}; not in the "
                f"baseline {relative(baseline.path)}"), sites.get(key)))
        elif before is not None and now.compiles > before.compiles:
            found.violations.append(Violation(key, Rule.BASELINE, (
                f"{key}: {now.compiles} compiles, baseline {before.compiles} "
                f"(+{now.compiles - before.compiles})"), sites.get(key)))
        if before is not None and compile_regression is not None:
            found.violations += [
                Violation(key, Rule.COMPILE_REGRESSION, text + " (--fail-on-compile-regression)",
                          sites.get(key))
                for text in compile_regressions(key, before, now, compile_regression)]
            if now.compiles and before.compiles:
                for where, totals in (("this run", now), ("the baseline", before)):
                    for what in unrecorded(totals):
                        unchecked.setdefault((where, what), []).append(key)
        if before is not None and now.compiles < before.compiles:
            found.improvements.append(
                f"{key}: {now.compiles} compiles, baseline {before.compiles} "
                f"(-{before.compiles - now.compiles}). Update the baseline: {update_command}")
    for (where, what), keys in unchecked.items():
        found.violations.append(Violation(keys[0], Rule.NOT_RECORDED, _unchecked(where, what,
                                                                                  keys)))
    return found


def unrecorded(totals: FunctionTotals) -> list[str]:
    """What a compile regression compares that ``totals`` of a function that compiled lack:
    ``equations`` (None: not recorded), ``compile seconds`` (0: a compile always takes some
    time, so none were measured)."""
    return ([] if totals.equations is not None else ["equations"]) + (
        [] if totals.compile_seconds > 0 else ["compile seconds"])


def _unchecked(where: str, what: str, keys: list[str]) -> str:
    why = NEEDS_PRIVATE_HOOKS if what == "equations" else "a forecast compiles nothing"
    again = ("; record the baseline again with the private hooks on a real run"
             if where == "the baseline" else "")
    return (f"--fail-on-compile-regression: {where} recorded no {what} for "
            f"{', '.join(keys[:3])}{f' and {len(keys) - 3} more' if len(keys) > 3 else ''}"
            f" ({why}), so they could not be compared{again}; {ALLOW_UNRECORDED}")


def compile_regressions(key: str, before: FunctionTotals, now: FunctionTotals,
                        percent: float) -> list[str]:
    """What grew by more than ``percent`` % from ``before`` to ``now``: the largest program's
    equations (where both runs recorded them; a baseline of 0 included), and the compile seconds
    (where both were measured) when they also grew by at least ``NOISE_FLOOR_SECONDS``."""
    out = []
    limit = 1 + percent / 100
    if (before.equations is not None and now.equations is not None
            and now.equations > before.equations * limit):
        out.append(f"{key}: {now.equations:,} equations, baseline {before.equations:,} "
                   f"({_growth(before.equations, now.equations)}, more than {percent:g}%)")
    seconds = now.compile_seconds - before.compile_seconds
    if (before.compile_seconds > 0 and now.compile_seconds > before.compile_seconds * limit
            and seconds >= NOISE_FLOOR_SECONDS):
        out.append(f"{key}: {now.compile_seconds:.3f} s of compile, baseline "
                   f"{before.compile_seconds:.3f} s "
                   f"({_growth(before.compile_seconds, now.compile_seconds)}, more than "
                   f"{percent:g}% and at least {NOISE_FLOOR_SECONDS:g} s)")
    return out


def _growth(before: float, after: float) -> str:
    """``+20%``; ``from 0`` when the baseline is 0 (any growth is more than any percent)."""
    return f"{(after - before) / before:+.0%}" if before else "from 0"
