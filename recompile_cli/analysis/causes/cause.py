"""One explanation of a cache miss (``Cause``): a cause code, the argument, its value before
and after, and a one-line detail. Made by ``causes`` and ``static_causes``; read by advice,
gates and every report."""

from __future__ import annotations

from dataclasses import dataclass

from recompile_cli.session.model import CauseCode

__all__ = ["Cause"]


@dataclass(frozen=True, slots=True)
class Cause:
    """One difference that explains a cache miss, e.g. ``shape`` at ``x``: f32[3] -> f32[4]."""

    code: CauseCode
    argument: str | None = None
    before: str | None = None
    after: str | None = None
    detail: str = ""
