"""Renderers: each turns a ``Report`` into text. Pick one by name (``registry.FORMATS``) or by
an output file's extension (``registry.guess_format``).

Renderer modules are imported when first used, so that naming the formats (``--help``) loads
neither pandas nor any renderer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from recompile_cli.render.registry import FORMATS, guess_format

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report

__all__ = ["FORMATS", "guess_format", "render", "renderer"]

# format -> (module in this package, function): each function is render(report, show_all) -> str
_RENDERERS = {
    "table": ("table", "render"),
    "json": ("json_report", "render"),
    "markdown": ("table", "render_markdown"),
    "csv": ("csv", "render"),
    "chrome-trace": ("chrome_trace", "render"),
    "html": ("html", "render"),
}
assert tuple(_RENDERERS) == FORMATS


def renderer(fmt: str) -> Callable[..., str]:
    """The function that renders ``fmt`` (one of ``FORMATS``)."""
    module, function = _RENDERERS[fmt]
    found: Callable[..., str] = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    return found


def render(report: Report, fmt: str, show_all: bool = False) -> str:
    """The report as text in ``fmt``; ``show_all`` lists JAX's and libraries' functions too."""
    return renderer(fmt)(report, show_all=show_all)
