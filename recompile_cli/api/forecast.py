"""Forecasts: how many compiles a workload needs, and which a warm-up misses, before it runs.

Wires ``capture.forecast`` (tracing on abstract arguments under the recorder) to the same
analysis, reports and gates as ``profile``: ``forecast_target`` serves ``recompile-cli
forecast``, ``forecast`` is the Python API and returns the ``RecompileReport`` of ``analyse()``::

    import jax, recompile_cli

    report = recompile_cli.forecast(step, [(jax.ShapeDtypeStruct((32, 8), "float32"),),
                                           (jax.ShapeDtypeStruct((4, 8), "float32"),)])
    report.report.totals.compiles   # 2: nothing ran, nothing compiled

A warm-up (``warmup=``) is a list of calls made first, with the same function object; every
compile of the workload after it is a signature that the warm-up does not cover, listed in the
session's warnings with the call that first needs it and its cause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from recompile_cli import options
from recompile_cli.session.model import Event, HookMode, Session

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report
    from recompile_cli.api.report import RecompileReport
    from recompile_cli.capture.forecast import Forecaster
    from recompile_cli.capture.runner import Outcome, Progress
    from recompile_cli.inputs.spec import Spec

__all__ = ["Forecast", "forecast", "forecast_target"]


@dataclass(frozen=True, slots=True)
class Forecast:
    """A finished forecast: the outcome of tracing (its session holds the predicted compiles)
    and how many of its calls were the warm-up's (they come first)."""

    outcome: Outcome
    warmup_calls: int = 0


def forecast_target(target: str, spec: Spec, jit_options: dict[str, Any], *,
                    warmup: Spec | None = None, lower: bool = False, keep_going: bool = False,
                    hook_mode: HookMode = HookMode.PRIVATE, progress: Progress | None = None
                    ) -> Forecast:
    """Import ``target`` and trace every call of ``warmup`` (if any), then of ``spec``.

    Raises:
        TargetError: the target's module, file or function does not exist or cannot be imported.
    """
    from recompile_cli.capture import runner
    from recompile_cli.capture.forecast import Forecaster, spec_array

    calls = _after_warmup(warmup, spec)
    forecaster = Forecaster(lower)
    outcome = runner.profile(target, calls, jit_options, False, keep_going,
                             runner.RunOptions(hook_mode, progress=progress, invoke=forecaster,
                                               spec_array=spec_array))
    return _finished(outcome, forecaster, calls, warmup)


def forecast(fn: Callable[..., Any], calls: Iterable[Any], *,
             warmup: Iterable[Any] | None = None, lower: bool = False,
             keep_going: bool = False, hook_mode: HookMode = HookMode.PRIVATE,
             **jit_options: Any) -> RecompileReport:
    """Forecast the compiles of calling ``fn`` (jitted with ``jit_options`` unless it already
    is) with each of ``calls``, without executing or compiling anything.

    Each call is a tuple of positional arguments or a mapping ``{"args": (...), "kwargs":
    {...}}``; arrays may be real (``jax.Array``, numpy) or ``jax.ShapeDtypeStruct``. The
    report is ``analyse()``'s: per-function compiles, causes, suggestions; a trace that raises
    is the session's ``target_exception`` (and ends the forecast unless ``keep_going``).

    Raises:
        TypeError, ValueError: a bad argument (``options``), named in the message; jit options
            for a function that is already jitted (they would not apply), or naming a parameter
            that ``fn`` does not have.
    """
    from recompile_cli.analysis.report import build_report
    from recompile_cli.api.report import RecompileReport
    from recompile_cli.capture import runner
    from recompile_cli.capture.forecast import Forecaster

    fn = options.function(fn, "fn")
    warm = _api_spec(warmup, "warmup") if warmup is not None else None
    spec = _after_warmup(warm, _api_spec(calls, "calls"))
    forecaster = Forecaster(options.flag(lower, "lower"))
    run = runner.RunOptions(options.hook_mode(hook_mode, "hook_mode"), invoke=forecaster)
    keep_going = options.flag(keep_going, "keep_going")
    _check_jit_options(fn, jit_options)
    label = getattr(fn, "__qualname__", None) or repr(fn)
    outcome = runner.profile_function(fn, label, spec, jit_options, keep_going, run)
    done = _finished(outcome, forecaster, spec, warm)
    return RecompileReport(build_report(done.outcome.session))


def _check_jit_options(fn: Callable[..., Any], jit_options: dict[str, Any]) -> None:
    """Jit options apply to a plain function only, and name its parameters."""
    from recompile_cli.capture.runner import is_jitted
    from recompile_cli.errors import JitOptionError
    from recompile_cli.inputs.jit_options import check_static_args

    if not jit_options:
        return
    if is_jitted(fn):
        raise TypeError(f"{', '.join(sorted(jit_options))}: fn is already jitted, so these jit "
                        "options would not apply; pass the plain function, or jit it with "
                        "them yourself and pass no jit options")
    try:
        check_static_args(fn, jit_options, "forecast's jit options")
    except JitOptionError as exc:
        raise ValueError(str(exc)) from None


def _api_spec(calls: Any, name: str) -> Spec:
    from recompile_cli.inputs.spec import Case, Spec

    cases = [Case(i, f"{name}[{i}]", args, kwargs, f"{name}[{i}]")
             for i, (args, kwargs) in enumerate(options.calls(calls, name))]
    return Spec("", {}, tuple(cases))


def _after_warmup(warmup: Spec | None, spec: Spec) -> Spec:
    """One spec: the warm-up's calls, then the workload's, numbered in that order."""
    if warmup is None:
        return spec
    cases = (*warmup.cases, *spec.cases)
    return replace(spec, cases=tuple(replace(c, index=i) for i, c in enumerate(cases)))


def _finished(outcome: Outcome, forecaster: Forecaster, spec: Spec, warmup: Spec | None
              ) -> Forecast:
    """The outcome with its predicted session, and the warm-up's coverage in its warnings."""
    from recompile_cli.capture.forecast import predicted

    keys = list(outcome.session.calls)
    session = outcome.session
    if keys:  # none when importing the target failed: nothing was traced
        session = predicted(session, forecaster, spec, keys[0])
    count = len(warmup.cases) if warmup is not None else 0
    if count:
        session = replace(session, warnings=(*session.warnings,
                                             *coverage_notes(session, spec, count)))
    return Forecast(replace(outcome, session=session), count)


def coverage_notes(session: Session, spec: Spec, warmup_calls: int) -> list[str]:
    """One line per compile of the workload after the first ``warmup_calls`` calls of ``spec``
    (the warm-up's): a signature the warm-up does not cover, the call that first needs it, and
    why (its cause)."""
    from recompile_cli.analysis.report import build_report

    report = build_report(session)
    missed = [e for e in session.events if e.compiled and e.depth == 0
              and e.call_index is not None and e.call_index >= warmup_calls]
    if not missed:
        return [f"warm-up: its {warmup_calls} call(s) cover every signature of the workload; "
                "the workload compiles nothing more"]
    return [f"warm-up: {len(missed)} signature(s) of the workload are not covered and compile "
            "at run time:"] + [_miss(report, e, spec.cases[e.call_index].label)
                               for e in missed if e.call_index is not None]


def _miss(report: Report, event: Event, call: str) -> str:
    cause = report.primary(event)
    where = f" at {cause.argument}" if cause.argument else ""
    change = f" ({cause.before} -> {cause.after})" if cause.before or cause.after else ""
    return (f"warm-up miss: {event.function} compiles at {call}: "
            f"{cause.code}{where}{change}")
