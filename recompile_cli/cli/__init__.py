"""The command line (the only code that prints): commands in ``app`` (the typer application is
``cli.app.app``) and ``merge_command``, output in ``output``, and the runs of ``check`` in
``check_runner``.

Importing this package imports none of its modules: the measured process (``cli.child``) lives
here too, and must not import the commands (typer, the report's modules). ``main`` is imported
on first access.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not ``typing``'s: the console script imports this package first thing
if TYPE_CHECKING:
    from typing import Any

    from recompile_cli.cli.app import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name != "main":
        raise AttributeError(f"module 'recompile_cli.cli' has no attribute {name!r}")
    return importlib.import_module("recompile_cli.cli.app").main
