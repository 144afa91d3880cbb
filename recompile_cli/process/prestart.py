"""The measured process, started before the command line is parsed.

A run's measured process spends its first second importing JAX, which needs nothing from the
command line; the command's process spends its first tenth of a second importing typer and
checking every option, which needs nothing from JAX. So for ``run``, ``profile`` and
``forecast`` the console script starts the measured process first (``start``, before the
application is imported): it imports JAX and the recorder and then waits, running nothing of
the target, until the supervisor gives it the job (``take``). A command that never gets that
far (a bad option, ``--help``) ends the waiting child at exit (``discard``), and the target never
runs: every option is still checked before it does.

The early child is taken only when it was started exactly as the supervisor would start it
now: the same environment, the same output file descriptors, no other working folder. Else
it is ended and a child is started as usual, so that this is never a difference a run can see.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Mapping, Sequence

from recompile_cli.process import spawn

TYPE_CHECKING = False  # imports as little as ``spawn`` does: this runs before anything else
if TYPE_CHECKING:
    from pathlib import Path

COMMANDS = ("run", "profile", "forecast")  # one measured process each, in this folder
_HELP = ("--help", "-h", "--version")


class _Waiting:
    """The early child and what it was started with."""

    def __init__(self, started: spawn.Started, env: dict[str, str],
                 outputs: tuple[int, int]) -> None:
        self.started, self.env, self.outputs = started, env, outputs


_waiting: _Waiting | None = None


def start(argv: Sequence[str]) -> None:
    """Start the measured process of ``recompile-cli ARGV`` now, when ARGV is a command that
    runs one (never raises: a child that cannot be started now is started later as usual)."""
    global _waiting
    if (_waiting is not None or not argv or argv[0] not in COMMANDS
            or any(arg in _HELP for arg in argv)):
        return
    try:
        outputs = (sys.stdout.fileno(), sys.stderr.fileno())
        env = dict(os.environ)
        started = spawn.start(None, env, cwd=None, stdout=outputs[0], stderr=outputs[1])
    except Exception:  # no real stdout, no pipe or process to spare: the usual start will say
        return
    _waiting = _Waiting(started, env, outputs)
    atexit.register(discard)


def take(env: Mapping[str, str], *, cwd: Path | None, stdout: int, stderr: int
         ) -> spawn.Started | None:
    """The early child, if it was started as ``spawn.start`` would start one now (it is then
    no longer this module's); else None, and an early child is ended."""
    global _waiting
    waiting, _waiting = _waiting, None
    if waiting is None:
        return None
    if (cwd is not None or (stdout, stderr) != waiting.outputs or dict(env) != waiting.env
            or waiting.started.process.poll() is not None):
        waiting.started.discard()
        return None
    return waiting.started


def discard() -> None:
    """End the early child if no run took it (at exit)."""
    global _waiting
    waiting, _waiting = _waiting, None
    if waiting is not None:
        waiting.started.discard()
