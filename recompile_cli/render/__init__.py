"""Renderers: each turns a ``Report`` into text; none analyses, prints or writes files, and
every value from a session goes through ``escape`` on its way out. ``FORMATS`` is the one
registry of formats (``--format``, ``--output``, the API, ``merge`` and the docs read it);
this module imports no renderer: they load when first used, so ``--help`` stays light.

Map: ``table.py`` (terminal and Markdown), ``json_report.py``, ``csv.py``, ``chrome_trace.py``,
``html/`` (the page and the notebook fragment), ``sections/`` (sections shared by the formats),
``fit.py`` (terminal layout), ``escape.py`` (untrusted text made inert), ``ci.py`` (gate tables,
JUnit, GitHub annotations), ``diff.py`` (``diff``), ``merged.py`` (``merge``),
``warmup_plan.py`` (a warm-up plan as Python source).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report

__all__ = ["FORMATS", "Format", "extensions_text", "guess_format", "render", "renderer"]


@dataclass(frozen=True, slots=True)
class Format:
    """One report format: its ``--format`` name, the output-file extensions that imply it, and
    its renderer, ``render.<module>.<function>(report, show_all) -> str``."""

    name: str
    extensions: tuple[str, ...]
    module: str
    function: str = "render"


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("table", (".txt",), "table"),
    Format("json", (".json",), "json_report"),
    Format("markdown", (".md",), "table", "render_markdown"),
    Format("csv", (".csv",), "csv"),
    Format("chrome-trace", (".trace.json",), "chrome_trace"),
    Format("html", (".html", ".htm"), "html"),
)}


def guess_format(path: str | None, among: Iterable[str] = FORMATS) -> str | None:
    """The format of ``among`` implied by an output file's extension, if any (the longest
    matching extension wins: ``x.trace.json`` is a Chrome trace, ``x.json`` JSON)."""
    if not path:
        return None
    name = str(path).lower()
    matches = [(len(ext), f) for f in among for ext in FORMATS[f].extensions if name.endswith(ext)]
    return max(matches)[1] if matches else None


def extensions_text(among: Iterable[str] = FORMATS) -> str:
    """The extensions of ``among``, as a help text or an error lists them: ``.txt, .json, ...``."""
    return ", ".join(ext for f in among for ext in FORMATS[f].extensions)


def renderer(fmt: str) -> Callable[..., str]:
    """The function that renders ``fmt`` (a name of ``FORMATS``)."""
    spec = FORMATS[fmt]
    module = importlib.import_module(f"{__name__}.{spec.module}")
    found: Callable[..., str] = getattr(module, spec.function)
    return found


def render(report: Report, fmt: str, show_all: bool = False) -> str:
    """The report as text in ``fmt``; ``show_all`` lists JAX's and libraries' functions too."""
    return renderer(fmt)(report, show_all=show_all)
