"""``RecompileReport``: an analysed recording for Python and notebooks, its gate (``check``,
the CLI's evaluator), its renderings, and its tables as DataFrames (``to_pandas``).

pandas loads only when a DataFrame is asked for; the pytest plugin imports this module, so
analysis, gate and guards are imported locally.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recompile_cli import options
from recompile_cli.render import FORMATS, render
from recompile_cli.session.files import save_session
from recompile_cli.session.locations import cells, relative_in
from recompile_cli.session.model import CauseCode, Owner, Session

if TYPE_CHECKING:
    import pandas as pd

    from recompile_cli.analysis.report import FunctionRow, Report
    from recompile_cli.gate.evaluate import GateResult, Gates, Violation


@dataclass(frozen=True)
class Frames:
    """The report's tables as pandas DataFrames (the columns of ``--format csv``).

    Attributes:
        functions: one row per function (``name``, ``defined_at``, ``owner``, ``calls``,
            ``traces``, ``compiles``, ``errors``, the seconds per stage, ``causes``).
        events: one row per trace/compile event, its primary cause spelled out (``cause``,
            ``argument``, ``before``, ``after``, ``detail``...).
        causes: the cost-ranked cause table (``function``, ``code``, ``argument``,
            ``call_site``, ``count``, ``seconds``, ``values``, ``first_event``, ``kind``:
            ``recompile`` or ``slow_calls``; ``also``: the row's other cause codes, as text).
        slow_calls: one row per group of slow calls (``function``, ``reason``, ``calls``,
            ``seconds``, ``avoidable_seconds``, ``line``, ``call_site``, ``why``, ``fix``...).
    """

    functions: pd.DataFrame
    events: pd.DataFrame
    causes: pd.DataFrame
    slow_calls: pd.DataFrame


class RecompileReport:
    """An analysed recording, for Python and notebooks.

    Wraps the ``Report`` that the command line renders (``.report``) and shows it: as the
    terminal tables in a console (``repr``, ``print(report.text())``) and as an inline HTML
    fragment in Jupyter (summary, gate violations, cost-ranked causes, suggestions, functions
    and events). Every value from the session is HTML-escaped; nothing is loaded from the
    network.

    Args:
        report: the analysed session (``recompile_cli.analysis.report.build_report``).
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
        from recompile_cli.analysis.dataframes import functions_frame  # pandas: only when asked for

        return _shown(functions_frame(self.report))

    @property
    def cause_table(self) -> pd.DataFrame:
        """Re-compilations by cost, most expensive first, a new DataFrame."""
        from recompile_cli.analysis.dataframes import causes_frame  # pandas: only when asked for

        return _shown(causes_frame(self.report))

    @property
    def events(self) -> pd.DataFrame:
        """One row per event with its primary cause, a new DataFrame."""
        from recompile_cli.analysis.dataframes import events_frame  # pandas: only when asked for

        return _shown(events_frame(self.report))

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
        """The ``functions``, ``events``, ``causes`` and ``slow_calls`` tables as DataFrames
        (copies)."""
        return to_pandas(self.report)

    def compiles(self, function: str | None = None) -> int:
        """Compiles of the functions named ``function`` (all your functions when None)."""
        return sum(f.compiles for f in self._functions_named(function))

    def traces(self, function: str | None = None) -> int:
        """Traces of the functions named ``function`` (all your functions when None)."""
        return sum(f.traces for f in self._functions_named(function))

    def slow_calls(self, function: str | None = None) -> int | None:
        """Slow calls (calls JAX ran through its Python dispatch without compiling) of the
        functions named ``function`` (all your functions when None); None, never 0, when
        this recording could not see them (the headline of its report says why)."""
        slow = self.report.slow_calls
        if slow.observable is not True:
            return None
        return sum(g.calls for g in slow.groups
                   if (g.owner == Owner.USER if function is None else g.function == function))

    def _functions_named(self, function: str | None) -> list[FunctionRow]:
        return [f for f in self.report.functions
                if (f.owner == Owner.USER if function is None else f.name == function)]

    def causes(self, function: str) -> list[str]:
        """The primary cause code of each top-level trace or compile of ``function``."""
        return [str(self.report.primary(e).code) for e in self.session.events
                if e.function == function and e.depth == 0]

    def check(self, max_compiles: int | None = None,
              fail_on: str | Iterable[str | CauseCode] = (),
              max_slow_calls: int | None = None,
              **per_function: int) -> RecompileReport:
        """This report with a gate evaluated on it (the same evaluator as ``--max-compiles``,
        ``--fail-on`` and the budget file); violations are listed in ``.violations`` and shown
        first in the display.

        Args:
            max_compiles: a limit on the compiles of every user function.
            fail_on: cause codes that fail wherever they occur: one (``"shape"``), a
                comma-separated text or a list (``CauseCode`` members or their values).
            max_slow_calls: a limit on the slow calls of every user function (a recording
                that could not see slow calls fails it).
            **per_function: a limit per function name or glob, e.g. ``train_step=1``.

        A per-function limit whose name matches no function guards nothing: it is warned
        (``recompile_cli.guards.UnmatchedBudgetWarning``) and listed in ``.warnings``.

        Raises:
            ValueError: a negative limit, or an unknown cause code.
            TypeError: a limit that is not an integer; ``fail_on`` neither a text nor a list.
        """
        from recompile_cli.guards.errors import UnmatchedBudgetWarning  # pytest plugin: light

        checked, unmatched = gated(self, max_compiles, per_function, fail_on, max_slow_calls)
        for message in unmatched:
            warnings.warn(UnmatchedBudgetWarning(message), stacklevel=2)
        return checked

    @property
    def warnings(self) -> list[str]:
        """The gate's warnings (a per-function limit that matched no function), if checked."""
        return [] if self.gate is None else list(self.gate.warnings)

    # -- text ------------------------------------------------------------------------------------
    def render(self, fmt: str = "table", show_all: bool | None = None) -> str:
        """The report in any format of ``render.FORMATS``, as ``--format`` writes it:
        ``table``, ``markdown``, ``json``, ``csv``, ``chrome-trace`` or ``html`` (a whole page).

        Raises:
            ValueError: an unknown format; TypeError: a ``fmt`` or ``show_all`` of a wrong type.
        """
        options.choice(fmt, "fmt", tuple(FORMATS))
        shown = self.show_all if show_all is None else options.flag(show_all, "show_all")
        return render(self.report, fmt, show_all=shown)

    def text(self, show_all: bool | None = None) -> str:
        """The terminal report, as ``recompile-cli run`` prints it (plus gate violations)."""
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
        from recompile_cli.render.html import fragment  # renderers load on first use

        return fragment(self.report, self.show_all, self.violations, cells)


def gated(report: RecompileReport, max_compiles: Any = None,
          per_function: dict[str, Any] | None = None,
          fail_on: str | Iterable[str | CauseCode] = (),
          max_slow_calls: Any = None) -> tuple[RecompileReport, list[str]]:
    """``report`` with the gate of ``RecompileReport.check`` evaluated, and the messages of the
    per-function limits that matched no function (for the caller to warn where it should)."""
    from recompile_cli.gate.evaluate import Gated, evaluate  # pytest plugin: light

    gates = compile_limits(max_compiles, per_function, fail_on)
    if max_slow_calls is not None:
        gates = replace(gates, max_slow_calls=options.limit(max_slow_calls, "max_slow_calls"))
    result = evaluate([Gated(report.session.target, report.report, gates,
                             report.session.target_exception)])
    patterns = {row.pattern for row in result.rows}
    unmatched = [f"recompile-cli: the limit {budget.pattern}={budget.max_compiles} matches no "
                 "function that was traced or compiled: it checks nothing; check the name "
                 "(globs allowed)" for budget in gates.budgets if budget.pattern not in patterns]
    return RecompileReport(report.report, show_all=report.show_all, gate=result), unmatched


def compile_limits(max_compiles: Any = None, per_function: dict[str, Any] | None = None,
                   fail_on: str | Iterable[str | CauseCode] = ()) -> Gates:
    """The gates of ``max_compiles=N`` and ``name=N`` limits on your functions (globs allowed
    in names), as ``RecompileReport.check`` and the pytest marker apply them.

    Raises:
        TypeError / ValueError: a limit that is not a non-negative integer, named in the
            message, or an unknown cause code.
    """
    from recompile_cli.gate.evaluate import Gates  # pytest plugin: light
    from recompile_cli.gate.limits import Budget  # pytest plugin: light

    per_function = dict(per_function or {})
    named = [("max_compiles", max_compiles)] if max_compiles is not None else []
    for name, value in [*named, *per_function.items()]:
        options.names(name, "function name")
        options.limit(value, name)
    budgets = tuple(Budget(name, max_compiles=limit) for name, limit in per_function.items())
    return Gates(budgets=budgets, max_compiles=max_compiles,
                 fail_on=options.cause_codes(fail_on, "fail_on"),
                 budget_owners=(Owner.USER,))


def to_pandas(report: Report | RecompileReport) -> Frames:
    """The ``functions``, ``events``, ``causes`` and ``slow_calls`` tables of a report as
    DataFrames.

    The frames are new: changing them changes nothing in the report. Paths are shown as
    reports show them: relative to the working folder when below it, and in a notebook a
    cell's temporary file as ``In[n]`` (``In[n], line 3``), as in the inline report.
    """
    from recompile_cli.analysis.dataframes import (  # pandas: only when asked for
        causes_frame,
        events_frame,
        functions_frame,
        slow_calls_frame,
    )
    from recompile_cli.analysis.report import Report  # pytest plugin: light

    inner = report.report if isinstance(report, RecompileReport) else report
    if not isinstance(inner, Report):
        raise TypeError(f"to_pandas(report): {type(report).__name__} is not a report; pass "
                        "recompile_cli.analyse(session) or a recording's .report")
    return Frames(functions=_shown(functions_frame(inner)), events=_shown(events_frame(inner)),
                  causes=_shown(causes_frame(inner)),
                  slow_calls=_shown(slow_calls_frame(inner)))


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the paths in its text columns as reports show them
    (``locations.relative_in``)."""
    from pandas.api.types import is_object_dtype, is_string_dtype  # pandas: a frame exists

    for column in frame.columns:
        if is_string_dtype(frame[column]) or is_object_dtype(frame[column]):
            frame[column] = frame[column].map(
                lambda v: relative_in(v) if isinstance(v, str) else v)
    return frame
