"""The command line (the only code that prints): commands in ``app`` and ``merge_command``,
output in ``output``, and the runs of ``check`` in ``check_runner``."""

from recompile_cli.cli.app import app, main

__all__ = ["app", "main"]
