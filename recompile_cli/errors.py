"""Errors that reach the user. Each carries the exit code the CLI returns for it.

Exit codes (documented in the README): 0 ran, 1 a gate failed, 2 bad input (target, spec, file,
flag) or an output that could not be written, 3 the profiled target raised or exited, 130/143
Ctrl-C/SIGTERM. Only ``cli.app.user_errors`` turns these errors into output.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE = 1
EXIT_BAD_INPUT = 2
EXIT_TARGET_RAISED = 3
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class RecompileError(Exception):
    """A problem the user can fix; ``str(error)`` is the one-paragraph message to show."""

    exit_code = EXIT_BAD_INPUT


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


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM while a command runs, to stop it and report."""
