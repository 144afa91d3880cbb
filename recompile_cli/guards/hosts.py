"""The multi-host pre-flight as its front doors build it: ``run --check-hosts`` and
``guard(check_hosts=True)`` (``RECOMPILE_CLI_GUARD=...,check_hosts=SECONDS``).

``host_check`` joins the exchange of ``capture.host_check`` to the messages of
``analysis.host_mismatch``. What a stopped process does is its caller's: the command line passes
``finish`` (write the report, evaluate the gates, then exit 3) and ends its run with
``conclude``; the guard passes none, so a process stopped by a peer while it waits in a
collective prints the message on stderr and exits 3; the process that compiled raises
``HostsDiverged`` from its jitted call.

Every message is one line of inert text, escaped as the guard's are (``render.escape.terminal``):
function names, argument paths and static values come from the user's program (and a peer's
message from the job's store), so no escape sequence or line break reaches a terminal or a log,
and no line of it can start a GitHub workflow command (``::error::``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from recompile_cli import options
from recompile_cli.analysis.hosts import mismatch as host_mismatch
from recompile_cli.capture.host_check import HostCheck, HostsDiverged
from recompile_cli.exits import ExitCode
from recompile_cli.guards.errors import inert
from recompile_cli.session.host_entries import Entry
from recompile_cli.session.model import Session

if TYPE_CHECKING:
    from recompile_cli.capture.runner import Outcome

__all__ = ["HostCheck", "HostsDiverged", "conclude", "host_check", "mismatch", "missing"]

Finish = Callable[["Outcome"], None]  # writes the report; raises typer.Exit / SystemExit


def mismatch(entries: Mapping[int, Entry]) -> str | None:
    """``host_mismatch.mismatch``, inert."""
    message = host_mismatch.mismatch(entries)
    return None if message is None else inert(message)


def missing(mine: Entry, absent: Sequence[int], last: Mapping[int, Entry | None],
            seconds: float) -> str:
    """``host_mismatch.missing``, inert."""
    return inert(host_mismatch.missing(mine, absent, last, seconds))


def host_check(timeout: float, finish: Finish | None = None) -> HostCheck:
    """A check that waits ``timeout`` seconds for the peers' compiles (see the module doc);
    ``timeout`` as ``options.host_timeout`` checks it."""
    timeout = options.host_timeout(timeout)
    written = None
    if finish is not None:
        def written(session: Session, failure: str) -> int:
            from recompile_cli.capture.runner import Outcome

            return _finished(finish, Outcome(session, failure))

    return HostCheck(timeout, mismatch, missing, written, shown=inert)


def conclude(check: HostCheck, outcome: Outcome, finish: Finish) -> None:
    """Finish a run's report with ``finish``. When the check stopped the job, the check's
    message is the run's failure and the process ends with the report's exit code, without
    JAX's exit-time shutdown; when the watcher is reporting already, wait for it to end it."""
    if not check.claim():
        while True:
            time.sleep(1)
    message = check.notice() if outcome.failure is not None else check.stopped
    if message is None:
        finish(outcome)
        return
    if outcome.failure is None or message not in outcome.failure:  # not this process's raise
        outcome = replace(outcome, failure=message, traceback=None,
                          session=replace(outcome.session, target_exception=message))
    check.leave(_finished(finish, outcome))


def _finished(finish: Finish, outcome: Outcome) -> int:
    """The exit code ``finish`` ends with (it raises ``typer.Exit`` or ``SystemExit``)."""
    try:
        finish(outcome)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(ExitCode.TARGET_RAISED)
    except BaseException as exc:
        code = getattr(exc, "exit_code", None)
        if isinstance(code, int):
            return code
        raise
    return int(ExitCode.OK)
