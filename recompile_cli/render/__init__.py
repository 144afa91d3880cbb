"""Renderers: each turns a ``Report`` into text. ``FORMATS`` is the one registry of report
formats: each ``Format`` names its renderer and the output-file extensions that imply it, and the
command line (``--format`` choices, the ``--output`` help and errors), the Python API
(``RecompileReport.render``), ``merge`` and the docs (checked by a test) all read it.

Kept free of heavy imports: renderer modules are imported when first used, so that naming the
formats (``--help``) loads neither pandas nor any renderer.
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
