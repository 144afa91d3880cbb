"""``python -m recompile_cli.guards SCRIPT [ARGS]``: run a script as ``__main__`` with the guard
of ``RECOMPILE_CLI_GUARD`` installed (``guards.main`` parses the command line).

What cannot run is a one-paragraph message and exit 2, none of recompile-cli's frames: a bad
``RECOMPILE_CLI_GUARD``, a missing script, a folder without ``__main__.py``; a script that does
not compile shows its ``SyntaxError`` as Python shows it (file, line, caret), then the message.
A guard that could no longer see compiles (``GuardBlinded`` when it is removed) is exit 1.
What the script itself raises propagates as it would under ``python SCRIPT``.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from recompile_cli.exits import ExitCode
from recompile_cli.guards.errors import GuardBlinded
from recompile_cli.render.escape import terminal

_PROGRAM = "recompile_cli.guards"


def run_script(args: Sequence[str], install_guard: Callable[[], Any]) -> int:
    """Run ``args[0]`` with ``args`` as ``sys.argv`` under ``install_guard()`` (the guard of
    ``RECOMPILE_CLI_GUARD``; its handle has ``uninstall(raising=...)``); returns the exit
    code."""
    script = args[0]
    problem = _problem(script)
    if problem is not None:
        print(f"{_PROGRAM}: {terminal(problem)}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        handle = install_guard()
    except (TypeError, ValueError) as exc:
        print(f"{_PROGRAM}: {terminal(exc)}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException:  # the script's own exception (or exit) propagates unchanged
        sys.argv[:], sys.path[:] = saved_argv, saved_path
        handle.uninstall(raising=False)
        raise
    sys.argv[:], sys.path[:] = saved_argv, saved_path
    try:
        handle.uninstall()
    except GuardBlinded as exc:
        print(f"{_PROGRAM}: {exc}", file=sys.stderr)
        return ExitCode.GATE
    return ExitCode.OK


def _problem(script: str) -> str | None:
    """Why ``script`` cannot run (checked before the guard is installed), or None."""
    if not os.path.exists(script):
        return (f"cannot run {script!r}: no such file or folder. Give the path of a Python "
                "script (or of a folder or zip file with a __main__.py): python -m "
                "recompile_cli.guards SCRIPT [ARGS...]")
    if os.path.isdir(script):
        if not os.path.isfile(os.path.join(script, "__main__.py")):
            return (f"cannot run {script!r}: it is a folder without a __main__.py. Give a "
                    "script, or a folder with a __main__.py")
        return None
    try:
        with open(script, "rb") as file:
            source = file.read()
    except OSError as exc:
        return f"cannot read {script!r} ({exc.strerror or exc}); check the path and permissions"
    if source[:2] == b"PK":  # a zip application: runpy reads it
        return None
    try:
        compile(source, script, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        shown = "".join(traceback.format_exception_only(type(exc), exc))
        print(shown, end="" if shown.endswith("\n") else "\n", file=sys.stderr)
        return (f"{script!r} does not compile ({type(exc).__name__} above); fix the script "
                "and run it again")
    return None
