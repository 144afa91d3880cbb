"""Renderers: each turns a ``Report`` into text. Pick one by name or by output file extension."""

from __future__ import annotations

from typing import Callable

from recompile_cli.analysis.report import Report
from recompile_cli.render import chrome_trace, csv, html, json_report, table

RENDERERS: dict[str, Callable[..., str]] = {
    "table": table.render,
    "json": json_report.render,
    "markdown": table.render_markdown,
    "csv": csv.render,
    "chrome-trace": chrome_trace.render,
    "html": html.render,
}
_EXTENSIONS = {".trace.json": "chrome-trace", ".json": "json", ".txt": "table",
               ".md": "markdown", ".csv": "csv", ".html": "html", ".htm": "html"}


def guess_format(path: str | None) -> str | None:
    """The format implied by an output file's extension, if any."""
    if not path:
        return None
    for extension, name in _EXTENSIONS.items():
        if str(path).lower().endswith(extension):
            return name
    return None


def render(report: Report, fmt: str, show_all: bool = False) -> str:
    return RENDERERS[fmt](report, show_all=show_all)
