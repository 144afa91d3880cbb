"""The measured process, started before its job is known.

A run's measured process spends its first tenth of a second starting Python and importing the
recorder, which needs nothing from the command line; the command's process spends as long
importing typer and checking every option. So for ``run``, ``profile`` and ``forecast`` the
console script starts the measured process first (``start``, before the application is
imported): it imports the recorder and then waits, running nothing of the target, until the
launcher gives it the job (``take``). It does not import JAX before the job: a script may set
JAX's variables before its own ``import jax``, and must see them as under ``python``. A command
that never gets that far (a bad option, ``--help``) ends the waiting child at exit
(``discard``), and the target never runs: every option is still checked before it does.

The job carries its folder, environment and standard streams (``spawn.Started.send``), so the
waiting child serves any job whose start-up variables it was started with
(``spawn.Started.serves``); else it is ended and a child is started as usual, so that this is
never a difference a run can see. ``ahead`` starts one for the next job (a test session keeps
one waiting so, ``launchers.Subprocess(spare_env=...)``).
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
