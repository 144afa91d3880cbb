"""The Python API: record a block or a function, analyse it, read the tables as DataFrames.

Everything here runs on the same ``Recorder``, ``Session``, ``analyse`` and renderers as the
command line; this module only wires them together for use from Python and notebooks::

    import recompile_cli

    with recompile_cli.record() as rec:
        step(x)
        step(y)
    rec.report                       # in Jupyter: the report inline (summary, causes, tips)
    print(rec.report.text())         # the terminal report of ``recompile-cli run``
    frames = rec.report.to_pandas()  # functions / events / causes DataFrames
    recompile_cli.save_session(rec.session, "run.json")   # ``recompile-cli report run.json``

JAX is imported when a recording starts, and pandas only when a DataFrame is asked for
(``to_pandas``, ``.functions``, ``.cause_table``, ``.events``); neither on import.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from recompile_cli import options
from recompile_cli.session.files import load_session, save_session
from recompile_cli.session.model import CauseCode, HookMode, Owner, Session

if TYPE_CHECKING:
    import pandas as pd

    from recompile_cli.analysis.report import FunctionRow, Report
    from recompile_cli.capture.recorder import Recorder
    from recompile_cli.gate.evaluate import GateResult, Gates, Violation

__all__ = ["Frames", "RecompileReport", "Recording", "analyse", "load_session", "record",
           "save_session", "to_pandas"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Frames:
    """The report's tables as pandas DataFrames (the columns of ``--format csv``).

    Attributes:
        functions: one row per function (``name``, ``defined_at``, ``owner``, ``calls``,
            ``traces``, ``compiles``, ``errors``, the seconds per stage, ``causes``).
        events: one row per trace/compile event, its primary cause spelled out (``cause``,
            ``argument``, ``before``, ``after``, ``detail``...).
        causes: the cost-ranked cause table (``function``, ``code``, ``argument``,
            ``call_site``, ``count``, ``seconds``, ``values``, ``first_event``).
    """

    functions: pd.DataFrame
    events: pd.DataFrame
    causes: pd.DataFrame


class RecompileReport:
    """An analysed recording, for Python and notebooks.

    Wraps the ``Report`` that the command line renders (``.report``) and shows it: as the
    terminal tables in a console (``repr``, ``print(report.text())``) and as an inline HTML
    fragment in Jupyter (summary, gate violations, cost-ranked causes, suggestions, functions
    and events). Every value from the session is HTML-escaped; nothing is loaded from the
    network.

    Args:
        report: the analysed session (``recompile_cli.analysis.report.analyse``).
        show_all: list JAX's and libraries' internal functions too (``--all``).
        gate: the result of a gate evaluated on this report; its violations are shown first.
    """

    def __init__(self, report: Report, *, show_all: bool = False,
                 gate: GateResult | None = None) -> None:
        self.report = report
        self.show_all = show_all
        self.gate = gate

    # -- data ------------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The frozen recording this report analyses."""
        return self.report.session

    @property
    def functions(self) -> pd.DataFrame:
        """Per-function totals (user functions first, then by compile time), a new DataFrame."""
        from recompile_cli.analysis.dataframes import functions_frame

        return functions_frame(self.report)

    @property
    def cause_table(self) -> pd.DataFrame:
        """Re-compilations by cost, most expensive first, a new DataFrame."""
        from recompile_cli.analysis.dataframes import causes_frame

        return causes_frame(self.report)

    @property
    def events(self) -> pd.DataFrame:
        """One row per event with its primary cause, a new DataFrame."""
        from recompile_cli.analysis.dataframes import events_frame

        return events_frame(self.report)

    @property
    def totals(self) -> dict[str, Any]:
        """Counts and seconds over the whole recording (``traces``, ``compiles``,
        ``first_compiles``, ``recompiles``...), and ``by_owner``: the same per owner
        (``{"user": {"compiles": 2, "recompiles": 1, ...}, "jax": {...}}``)."""
        return asdict(self.report.totals)

    @property
    def violations(self) -> list[Violation]:
        """The gate's violations (empty without a gate, or when it held)."""
        return [] if self.gate is None else self.gate.every_violation

    def to_pandas(self) -> Frames:
        """The ``functions``, ``events`` and ``causes`` tables as DataFrames (copies)."""
        return to_pandas(self.report)

    def compiles(self, function: str | None = None) -> int:
        """Compiles of the functions named ``function`` (all your functions when None)."""
        return sum(f.compiles for f in self._functions_named(function))

    def traces(self, function: str | None = None) -> int:
        """Traces of the functions named ``function`` (all your functions when None)."""
        return sum(f.traces for f in self._functions_named(function))

    def _functions_named(self, function: str | None) -> list[FunctionRow]:
        return [f for f in self.report.functions
                if (f.owner == Owner.USER if function is None else f.name == function)]

    def causes(self, function: str) -> list[str]:
        """The primary cause code of each top-level trace or compile of ``function``."""
        return [str(self.report.primary(e).code) for e in self.session.events
                if e.function == function and e.depth == 0]

    def check(self, max_compiles: int | None = None,
              fail_on: str | Iterable[str | CauseCode] = (),
              **per_function: int) -> RecompileReport:
        """This report with a gate evaluated on it (the same evaluator as ``--max-compiles``,
        ``--fail-on`` and the budget file); violations are listed in ``.violations`` and shown
        first in the display.

        Args:
            max_compiles: a limit on the compiles of every user function.
            fail_on: cause codes that fail wherever they occur: one (``"shape"``), a
                comma-separated text or a list (``CauseCode`` members or their values).
            **per_function: a limit per function name or glob, e.g. ``train_step=1``.

        Raises:
            ValueError: a limit that is not a non-negative integer, or an unknown cause code.
            TypeError: ``fail_on`` that is neither a text nor a list.
        """
        from recompile_cli.gate.evaluate import Gated, evaluate

        gates = compile_limits(max_compiles, per_function, fail_on)
        result = evaluate([Gated(self.session.target, self.report, gates,
                                 self.session.target_exception)])
        return RecompileReport(self.report, show_all=self.show_all, gate=result)

    # -- text ------------------------------------------------------------------------------------
    def render(self, fmt: str = "table", show_all: bool | None = None) -> str:
        """The report in any CLI format: ``table``, ``markdown``, ``json``, ``csv``,
        ``chrome-trace`` or ``html`` (a whole page)."""
        from recompile_cli.render import render

        return render(self.report, fmt, show_all=self.show_all if show_all is None
                      else show_all)

    def text(self, show_all: bool | None = None) -> str:
        """The terminal report, as ``recompile-cli run`` prints it (plus gate violations)."""
        from recompile_cli.session.locations import relative_in

        lines = [f"recompile-cli gate: FAILED - {relative_in(v.message)}"
                 for v in self.violations]
        return "\n".join(lines) + ("\n" if lines else "") + self.render("table", show_all)

    def save(self, path: str | Path) -> None:
        """Save the session (``recompile-cli report PATH`` renders it again)."""
        save_session(self.session, path)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("RecompileReport(...)" if cycle else self.text().rstrip("\n"))

    def _repr_html_(self) -> str:
        """The inline report of a notebook, its cells named as IPython names them."""
        from recompile_cli.render.html import fragment
        from recompile_cli.render.notebook_cells import notebook_labels

        return fragment(self.report, self.show_all, self.violations, notebook_labels())


def compile_limits(max_compiles: Any = None, per_function: dict[str, Any] | None = None,
                   fail_on: str | Iterable[str | CauseCode] = ()) -> Gates:
    """The gates of ``max_compiles=N`` and ``name=N`` limits on your functions (globs allowed
    in names), as ``RecompileReport.check`` and the pytest marker apply them.

    Raises:
        ValueError: a limit that is not a non-negative integer, named in the message, or an
            unknown cause code.
    """
    from recompile_cli.gate.budgets import Budget
    from recompile_cli.gate.evaluate import Gates

    per_function = dict(per_function or {})
    named = [("max_compiles", max_compiles)] if max_compiles is not None else []
    for name, value in [*named, *per_function.items()]:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}={value!r} is not a compile limit: use a non-negative "
                             "integer (max_compiles=N for every function of yours, or "
                             "function_name=N, globs allowed)")
    budgets = tuple(Budget(name, max_compiles=limit) for name, limit in per_function.items())
    return Gates(budgets=budgets, max_compiles=max_compiles,
                 fail_on=options.cause_codes(fail_on, "fail_on"),
                 budget_owners=(Owner.USER,))


def analyse(session: Session) -> RecompileReport:
    """Analyse a session (recorded, or loaded with ``load_session``): causes, per-function
    totals, the cost-ranked cause table and suggestions, as the command line reports them."""
    from recompile_cli.analysis.report import analyse as analyse_session

    if not isinstance(session, Session):
        hint = (f" (a path? load it first: recompile_cli.load_session({session!r}))"
                if isinstance(session, (str, os.PathLike)) else "")
        raise TypeError(f"analyse() takes a Session, from record() or load_session(path); got "
                        f"{type(session).__name__}{hint}")
    return RecompileReport(analyse_session(session))


def to_pandas(report: Report | RecompileReport) -> Frames:
    """The ``functions``, ``events`` and ``causes`` tables of a report as DataFrames.

    The frames are new: changing them changes nothing in the report.
    """
    from recompile_cli.analysis.dataframes import causes_frame, events_frame, functions_frame

    inner = report.report if isinstance(report, RecompileReport) else report
    return Frames(functions=functions_frame(inner), events=events_frame(inner),
                  causes=causes_frame(inner))


class Recording:
    """Records everything JAX traces and compiles inside a ``with`` block or a decorated
    function; made by ``record()``.

    Each use starts a new recording: after the block (or call), ``.session`` is the frozen
    ``Session`` and ``.report`` its analysis. While the block runs, both give what was recorded
    so far. An exception raised inside the block is recorded as the session's
    ``target_exception`` and propagates unchanged.
    """

    def __init__(self, target: str = "", *, keep_caches: bool = False,
                 hook_mode: HookMode = HookMode.PRIVATE,
                 events_log: str | Path | None = None) -> None:
        self.target = target
        self.keep_caches = keep_caches
        self.hook_mode = HookMode(hook_mode)
        self.events_log = events_log
        self._recorder: Recorder | None = None
        self._session: Session | None = None
        self._report: RecompileReport | None = None

    def __enter__(self) -> Recording:
        import jax

        from recompile_cli.capture.recorder import Recorder

        if self._recorder is not None:
            raise RuntimeError("this recording is already running; use a new "
                               "recompile_cli.record() for a nested block")
        if not self.keep_caches:
            jax.clear_caches()
        self._session, self._report = None, None
        self._recorder = Recorder(self.target or _caller_label(), hook_mode=self.hook_mode,
                                  events_log=self.events_log).start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is not None:
            recorder.__exit__(exc_type, exc, tb)
            self._session = recorder.session

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` is recorded (``.session`` is the last's)."""

        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            if not self.target:
                self.target = getattr(fn, "__qualname__", repr(fn))
            with self:
                return fn(*args, **kwargs)

        recorded.recording = self  # type: ignore[attr-defined]
        return recorded  # type: ignore[return-value]

    @property
    def running(self) -> bool:
        return self._recorder is not None

    @property
    def session(self) -> Session:
        """The frozen session: final after the block, a snapshot while it runs."""
        if self._recorder is not None:
            return self._recorder.snapshot()
        if self._session is None:
            raise RuntimeError("nothing recorded yet: use `with recompile_cli.record() as rec:` "
                               "(or decorate a function) before reading .session")
        return self._session

    @property
    def report(self) -> RecompileReport:
        """The analysed session (cached once the recording has ended)."""
        if self._recorder is not None:
            return analyse(self.session)
        if self._report is None:
            self._report = analyse(self.session)
        return self._report


@overload
def record(target: F, /) -> F: ...


@overload
def record(target: str = "", /, *, keep_caches: bool = False, hook_mode: HookMode = ...,
           events_log: str | Path | None = None) -> Recording: ...


def record(target: Any = "", /, *, keep_caches: bool = False,
           hook_mode: HookMode = HookMode.PRIVATE, events_log: str | Path | None = None) -> Any:
    """Record what JAX traces and compiles in a block, or in each call of a function.

    ``with record() as rec: ...`` then ``rec.session`` / ``rec.report``; as a decorator,
    ``@record`` or ``@record("label")`` records each call and the wrapper's ``.recording``
    holds the last one.

    Args:
        target: a label kept in the session (default: the file and line of the block);
            or the function to decorate.
        keep_caches: keep JAX's in-memory caches. By default they are cleared
            (``jax.clear_caches()``) so that counts are those of a cold process, like the CLI's.
        hook_mode: ``HookMode.PRIVATE`` (default; signatures and causes) or
            ``HookMode.PUBLIC_ONLY``; their values ``"private"``, ``"public-only"`` work too.
        events_log: also stream every event to this JSON-lines file as it happens.

    Returns:
        A ``Recording`` (context manager and decorator), or the decorated function.
    """
    if callable(target):
        return Recording(keep_caches=keep_caches, hook_mode=hook_mode,
                         events_log=events_log)(target)
    return Recording(str(target), keep_caches=keep_caches, hook_mode=hook_mode,
                     events_log=events_log)


def _caller_label() -> str:
    """``file:line`` of the first frame outside recompile_cli and contextlib (the ``with``)."""
    from recompile_cli.session.locations import relative

    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_PACKAGE_DIR) and not name.endswith("contextlib.py"):
            return f"{relative(name)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "recorded block"


_PACKAGE_DIR = str(Path(__file__).resolve().parent)
