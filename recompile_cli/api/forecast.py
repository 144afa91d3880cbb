"""``forecast()``: the compiles a list of calls needs, and which a warm-up misses, traced on
abstract arguments and never executed or compiled (``capture.running.forecast``), analysed as
``analyse()`` does. ``recompile-cli forecast`` runs the same steps in its measured child.

A warm-up's misses become the session's warnings (``analysis.warmup.coverage``). JAX and
PyYAML load on a forecast, never on import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from recompile_cli import options
from recompile_cli.analysis.report import build_report
from recompile_cli.analysis.warmup.coverage import coverage_notes
from recompile_cli.api.report import RecompileReport
from recompile_cli.capture.running import runner
from recompile_cli.errors import JitOptionError
from recompile_cli.inputs.jit_options import check_static_args
from recompile_cli.session.model import HookMode

if TYPE_CHECKING:
    from recompile_cli.inputs.spec import Spec

__all__ = ["forecast"]


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
    # JAX (capture.running.forecast) and PyYAML (inputs.spec): on a forecast, never on import
    from recompile_cli.capture.running.forecast import Forecaster, forecast_session
    from recompile_cli.inputs.spec import after_warmup

    fn = options.function(fn, "fn")
    warm = _api_spec(warmup, "warmup") if warmup is not None else None
    spec = after_warmup(warm, _api_spec(calls, "calls"))
    forecaster = Forecaster(options.flag(lower, "lower"))
    run = runner.RunOptions(options.hook_mode(hook_mode, "hook_mode"), invoke=forecaster)
    keep_going = options.flag(keep_going, "keep_going")
    _check_jit_options(fn, jit_options)
    label = getattr(fn, "__qualname__", None) or repr(fn)
    outcome = runner.profile_function(fn, label, spec, jit_options, keep_going, run)
    session = forecast_session(outcome.session, forecaster, spec)
    if warm is not None and warm.cases:
        notes = coverage_notes(session, build_report(session).causes,
                               [c.label for c in spec.cases], len(warm.cases))
        session = replace(session, warnings=(*session.warnings, *notes))
    return RecompileReport(build_report(session))


def _check_jit_options(fn: Callable[..., Any], jit_options: dict[str, Any]) -> None:
    """Jit options apply to a plain function only, and name its parameters."""
    if not jit_options:
        return
    if runner.is_jitted(fn):
        raise TypeError(f"{', '.join(sorted(jit_options))}: fn is already jitted, so these jit "
                        "options would not apply; pass the plain function, or jit it with "
                        "them yourself and pass no jit options")
    try:
        check_static_args(fn, jit_options, "forecast's jit options")
    except JitOptionError as exc:
        raise ValueError(str(exc)) from None


def _api_spec(calls: Any, name: str) -> Spec:
    from recompile_cli.inputs.spec import Case, Spec  # PyYAML: not on import

    cases = [Case(i, f"{name}[{i}]", args, kwargs, f"{name}[{i}]")
             for i, (args, kwargs) in enumerate(options.calls(calls, name))]
    return Spec("", {}, tuple(cases))
