"""CSV: the events table, or ``functions.csv``, ``events.csv``, ``causes.csv``,
``compile_cost.csv``, ``slow_calls.csv`` and ``eager_lines.csv``, written from the DataFrames of
``analysis.dataframes`` (so the CSV files and ``to_pandas()`` agree).

Every file has a header row; ``pandas.read_csv`` reads them back. In ``functions.csv`` the
``causes`` column is ``code:count`` pairs separated by ``;``. Text cells that a spreadsheet
would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return) get a
leading ``'``; numbers, negative ones included, are written as they are.
"""

from __future__ import annotations

import pandas as pd

from recompile_cli.analysis.dataframes import (
    causes_frame,
    cost_lines_frame,
    eager_lines_frame,
    events_frame,
    functions_frame,
    slow_calls_frame,
)
from recompile_cli.analysis.report import Report
from recompile_cli.render import escape


def render(report: Report, show_all: bool = False) -> str:
    """The events table (one row per event)."""
    return _csv(events_frame(report))


def render_files(report: Report) -> dict[str, str]:
    """File name -> CSV text, for ``--output DIR/``."""
    functions = functions_frame(report)  # the columns of to_pandas().functions, key included
    functions["causes"] = [";".join(f"{code}:{n}" for code, n in causes.items())
                           for causes in functions["causes"]]
    return {"functions.csv": _csv(functions),
            "events.csv": render(report),
            "causes.csv": _csv(causes_frame(report)),
            "compile_cost.csv": _csv(cost_lines_frame(report)),
            "slow_calls.csv": _csv(slow_calls_frame(report)),
            "eager_lines.csv": _csv(eager_lines_frame(report))}


def _csv(frame: pd.DataFrame) -> str:
    """The frame as CSV, its text cells neutralised (``escape.csv_text``).

    Each distinct text is checked once (a column of 100,000 cells holds a few hundred distinct
    function names and call sites), and only the cells that need the ``'`` are rewritten."""
    safe = frame.copy()
    for column in safe.columns:
        values = safe[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        values = values.astype(object)
        changed = {text: escape.csv_text(text) for text in pd.unique(values)
                   if isinstance(text, str) and escape.csv_text(text) != text}
        if changed:
            flagged = values.isin(list(changed))
            values = values.where(~flagged, values[flagged].map(changed))
        safe[column] = values
    return safe.to_csv(index=False)
