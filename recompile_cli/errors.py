"""Errors that reach the user. Each carries the exit code the CLI returns for it (the codes
and the signals are owned by ``exits``). Only ``cli.output.user_errors`` turns these errors into
output.
"""

from __future__ import annotations

from recompile_cli.exits import ExitCode


class RecompileError(Exception):
    """A problem the user can fix; ``str(error)`` is the one-paragraph message to show."""

    exit_code = ExitCode.BAD_INPUT


class TargetError(RecompileError):
    """The TARGET or SCRIPT cannot be found or imported."""


class SpecError(RecompileError):
    """The argument spec is not valid YAML or does not follow the spec format."""


class BudgetError(RecompileError):
    """The budget file (or baseline file) cannot be read or does not follow its format."""


class SessionFileError(RecompileError):
    """A saved session or events log that cannot be read, or a report that cannot be written."""


class JitOptionError(RecompileError):
    """Jit options (static_argnames/argnums, donate_*) that do not fit the target's signature."""


class MergeError(RecompileError):
    """Reports that cannot be merged: not the processes of one run of one program."""
