"""The measured process, started before its job is known: for ``run``, ``profile`` and ``forecast``
the console script starts it first (``start``), so it imports the recorder while the command line
is parsed, then waits for ``take`` to give it the job. It must never import JAX or run anything
of the target before the job (a script may set JAX's variables before its ``import jax``); a
command that stops early ends it (``discard``), and a job it cannot serve gets a new child.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Mapping, Sequence

from recompile_cli.process import spawn

TYPE_CHECKING = False  # imports as little as ``spawn`` does: this runs before anything else
if TYPE_CHECKING:
    from pathlib import Path

COMMANDS = ("run", "profile", "forecast")  # one measured process each, in this folder
_HELP = ("--help", "-h", "--version")

_waiting: spawn.Started | None = None
_discard_at_exit: list[bool] = []  # registered once


def start(argv: Sequence[str]) -> None:
    """Start the measured process of ``recompile-cli ARGV`` now, when ARGV is a command that
    runs one (never raises: a child that cannot be started now is started later as usual)."""
    if not argv or argv[0] not in COMMANDS or any(arg in _HELP for arg in argv):
        return
    ahead(os.environ)


def ahead(env: Mapping[str, str]) -> None:
    """Start a measured process with ``env`` to wait for the next job, unless one waits
    (never raises)."""
    global _waiting
    if _waiting is not None:
        return
    try:
        _waiting = spawn.start(env)
    except Exception:  # no pipe or process to spare: the usual start will say
        return
    if not _discard_at_exit:
        _discard_at_exit.append(True)
        atexit.register(discard)


def take(env: Mapping[str, str], *, cwd: Path | None) -> spawn.Started | None:
    """The waiting child, if it serves a job with ``env`` in ``cwd`` (it is then no longer this
    module's); else None, and a waiting child is ended."""
    global _waiting
    waiting, _waiting = _waiting, None
    if waiting is None:
        return None
    if not waiting.serves(env, cwd):
        waiting.discard()
        return None
    return waiting


def discard() -> None:
    """End the waiting child if no run took it (at exit)."""
    global _waiting
    waiting, _waiting = _waiting, None
    if waiting is not None:
        waiting.discard()
