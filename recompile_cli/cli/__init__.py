"""The command line (the only code that prints): commands in ``app``, output in ``output``."""

from recompile_cli.cli.app import app, main

__all__ = ["app", "main"]
