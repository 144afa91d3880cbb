"""How a command ends: the exit codes, and the signals that interrupt it.

The one owner of both. ``ExitCode`` is every code the command line returns (the README's "Exit
codes" table) and ``exit_code`` decides which one wins. Ctrl-C arrives as ``KeyboardInterrupt``;
SIGTERM, while ``sigterm_raises`` is in force, as ``Terminated``; ``interruption_code`` maps
either to its code (130, 143) and ``interruption_text`` to its words. ``deferred_signals``
holds both while a report is written, so that an interruption never loses what was recorded.
Signal handlers can only be set from the main thread: elsewhere these helpers change nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """What the command line returns."""

    OK = 0  # ran, and every gate held
    GATE = 1  # a gate failed
    BAD_INPUT = 2  # bad input (target, spec, file, flag) or an output that could not be written
    TARGET_RAISED = 3  # the profiled target raised or exited non-zero
    SIGINT = 130  # interrupted by Ctrl-C
    SIGTERM = 143  # terminated by SIGTERM


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM while ``sigterm_raises`` is in force, to stop the
    target and report, as ``KeyboardInterrupt`` does for Ctrl-C."""


INTERRUPTIONS = (KeyboardInterrupt, Terminated)  # what an interruption raises

_CODES = {signal.SIGINT: ExitCode.SIGINT, signal.SIGTERM: ExitCode.SIGTERM}
_TEXTS = {ExitCode.SIGINT: "interrupted by Ctrl-C (SIGINT)",
          ExitCode.SIGTERM: "terminated by SIGTERM"}


def interruption_code(exc: BaseException) -> ExitCode:
    """The exit code of an interruption: 143 for ``Terminated``, else 130 (Ctrl-C)."""
    return ExitCode.SIGTERM if isinstance(exc, Terminated) else ExitCode.SIGINT


def interruption_text(code: ExitCode) -> str:
    """``interrupted by Ctrl-C (SIGINT)`` or ``terminated by SIGTERM``."""
    return _TEXTS[code]


def exit_code(*, interrupted: ExitCode | None = None, failed: bool = False,
              unwritten: bool = False, gate_held: bool = True) -> ExitCode:
    """The code a command ends with, the first that applies: the interruption's (130/143), 3 if
    the target raised or exited, 2 if an output could not be written, 1 if a gate failed, 0."""
    if interrupted is not None:
        return interrupted
    if failed:
        return ExitCode.TARGET_RAISED
    if unwritten:
        return ExitCode.BAD_INPUT
    return ExitCode.OK if gate_held else ExitCode.GATE


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated()


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for sig, handler in previous.items():
        if handler is not None:  # None: a handler not set from Python, which cannot be reset
            signal.signal(sig, handler)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises ``Terminated`` (main thread only); the previous
    handler comes back afterwards."""
    if not _in_main_thread():
        yield
        return
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate)}
    try:
        yield
    finally:
        _restore(previous)


@dataclass
class Received:
    """The exit code of a signal that arrived while signals were deferred (None: none did)."""

    code: ExitCode | None = None


@contextlib.contextmanager
def deferred_signals() -> Iterator[Received]:
    """Hold Ctrl-C and SIGTERM while the block runs (the report is analysed, printed and
    written), so that an interruption never loses what was recorded; ``received.code`` is then
    130 or 143, the first signal's."""
    received = Received()
    if not _in_main_thread():
        yield received
        return

    def hold(signum: int, frame: Any) -> None:
        received.code = received.code or _CODES[signal.Signals(signum)]

    previous = {sig: signal.signal(sig, hold) for sig in _CODES}
    try:
        yield received
    finally:
        _restore(previous)
