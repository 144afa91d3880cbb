"""CSV (pandas): the events table, or ``functions.csv``, ``events.csv`` and ``causes.csv``.

Every file has a header row; ``pandas.read_csv`` reads them back. In ``functions.csv`` the
``causes`` column is ``code:count`` pairs separated by ``;``.
"""

from __future__ import annotations

from recompile_cli.analysis.report import FUNCTION_COLUMNS, Report, events_frame


def render(report: Report, show_all: bool = False) -> str:
    """The events table (one row per event)."""
    return events_frame(report).to_csv(index=False)


def render_files(report: Report) -> dict[str, str]:
    """File name -> CSV text, for ``--output DIR/``."""
    functions = report.functions[[c for c in FUNCTION_COLUMNS if c != "key"]].copy()
    functions["causes"] = [";".join(f"{code}:{n}" for code, n in causes.items())
                           for causes in functions["causes"]]
    return {"functions.csv": functions.to_csv(index=False),
            "events.csv": render(report),
            "causes.csv": report.cause_table.to_csv(index=False)}
