"""How a command ends: the exit codes, and the signals that interrupt it.

The one owner of both. ``ExitCode`` is every code the command line returns (the README's "Exit
codes" table) and ``exit_code`` decides which one wins. Ctrl-C arrives as ``KeyboardInterrupt``;
SIGTERM, while ``sigterm_raises`` is in force, as ``Terminated``; ``interruption_code`` maps
either to its code (130, 143) and ``interruption_text`` to its words. ``deferred_signals``
holds both while a report is written, so that an interruption never loses what was recorded.

The command line calls ``defer_signals`` before anything else: from then on Ctrl-C and SIGTERM
never interrupt the tool's own start (imports, which C extensions turn into ``ImportError``)
or finish; a signal waits, and is raised before a target starts (``raise_pending``: it does
not start), taken into the report's exit code (``deferred_signals``), or ends the command
(``pending_code``). While the target runs (``sigterm_raises``) both raise at once.
Signal handlers can only be set from the main thread: elsewhere these helpers change nothing.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NoReturn


class ExitCode(IntEnum):
    """What the command line returns."""

    OK = 0  # ran, and every gate held
    GATE = 1  # a gate failed
    BAD_INPUT = 2  # bad input (target, spec, file, flag) or an output that could not be written
    TARGET_RAISED = 3  # the profiled target raised or exited non-zero; also when run
    # --check-hosts stopped every process of a job whose processes compiled different programs
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


def interruption(code: int) -> BaseException:
    """The exception that an interruption with exit code ``code`` raises."""
    return Terminated() if code == ExitCode.SIGTERM else KeyboardInterrupt()


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


DUPLICATE_WINDOW = 0.5  # seconds in which a second interruption is the same one, delivered twice
_raised_at: list[float] = []  # when ``_interrupt`` last raised


def _interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` and SIGTERM ``Terminated``, once: the same signal
    often comes twice at once (a terminal's Ctrl-C reaches a supervised run's child directly
    and through its supervisor), and a second raise would break the first one's clean-up."""
    now = time.monotonic()
    if _raised_at and now - _raised_at[-1] < DUPLICATE_WINDOW:
        return
    _raised_at[:] = [now]
    raise interruption(_CODES[signal.Signals(signum)])


def _redeliver_swallowed(unraisable: Any) -> None:
    """``sys.unraisablehook`` while the target runs. Python swallows an exception raised where
    nothing can catch it (a ``gc.callbacks`` entry such as JAX's own, a ``__del__``, a weakref
    callback) and only prints it: an interruption raised there by ``_interrupt`` would be lost
    (and print a traceback). Such an interruption is sent again, so that it lands in the first
    code outside that context (or, if it comes back in one again, the next); any other goes to
    the hook that was there before."""
    exc = unraisable.exc_value
    tb = unraisable.exc_traceback
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if isinstance(exc, INTERRUPTIONS) and tb is not None and tb.tb_frame.f_code is (
            _interrupt.__code__):
        _raised_at.clear()  # not a duplicate: the first one never arrived
        signum = signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT
        # Sent a moment later from another thread: sent from this one, its handler would run
        # at once, here (and ``Thread.start`` would wait here for the thread to start).
        _thread.start_new_thread(_send_later, (signum,))
        return
    _next_hook[0](unraisable)


REDELIVERY_DELAY = 0.02  # seconds: long enough for the swallowing context to have returned


def _send_later(signum: int) -> None:
    time.sleep(REDELIVERY_DELAY)
    os.kill(os.getpid(), signum)


_next_hook: list[Any] = [sys.__unraisablehook__]  # the hook ``sigterm_raises`` replaced


_pending: list[ExitCode] = []  # the code of a signal deferred by ``_defer``, not yet taken


def _defer(signum: int, frame: Any) -> None:
    if not _pending:
        _pending.append(_CODES[signal.Signals(signum)])


def defer_signals(early: Sequence[int] = ()) -> None:
    """The command line's first act (main thread): Ctrl-C and SIGTERM no longer interrupt
    the tool itself; the first one (or the first of ``early``, signals noted before this
    module was imported) waits for ``raise_pending``, ``deferred_signals`` or
    ``pending_code``. For the whole process: only the command line calls it."""
    if in_main_thread():
        for sig in _CODES:
            signal.signal(sig, _defer)
    for signum in early[:1]:
        _defer(signum, None)


def pending_code() -> ExitCode | None:
    """The code (130, 143) of a deferred signal that nothing took, taken now; else None."""
    return _pending.pop() if _pending else None


def raise_pending() -> None:
    """Raise the interruption of a deferred signal now (``KeyboardInterrupt``, ``Terminated``),
    e.g. before a target starts, so that it does not start."""
    code = pending_code()
    if code == ExitCode.SIGTERM:
        raise Terminated()
    if code == ExitCode.SIGINT:
        raise KeyboardInterrupt()


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for sig, handler in previous.items():
        if handler is not None:  # None: a handler not set from Python, which cannot be reset
            signal.signal(sig, handler)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs (the target), SIGTERM raises ``Terminated`` and Ctrl-C
    ``KeyboardInterrupt`` (main thread only), and one that Python swallowed is raised again
    (``_redeliver_swallowed``); the previous handlers and hook come back afterwards."""
    if not in_main_thread():
        yield
        return
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _interrupt)}
    if signal.getsignal(signal.SIGINT) is _defer:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _interrupt)
    _next_hook[0], sys.unraisablehook = sys.unraisablehook, _redeliver_swallowed
    try:
        yield
    finally:
        if sys.unraisablehook is _redeliver_swallowed:  # unless the target set its own
            sys.unraisablehook = _next_hook[0]
        _restore(previous)


@dataclass
class Received:
    """The exit code of a signal that arrived while signals were deferred (None: none did)."""

    code: ExitCode | None = None


@contextlib.contextmanager
def deferred_signals() -> Iterator[Received]:
    """Hold Ctrl-C and SIGTERM while the block runs (the report is analysed, printed and
    written), so that an interruption never loses what was recorded; ``received.code`` is then
    130 or 143, the first signal's (a deferred one included)."""
    received = Received(pending_code())
    if not in_main_thread():
        yield received
        return

    def hold(signum: int, frame: Any) -> None:
        received.code = received.code or _CODES[signal.Signals(signum)]

    previous = {sig: signal.signal(sig, hold) for sig in _CODES}
    try:
        yield received
    finally:
        _restore(previous)


def hard_exit(code: int) -> None:
    """End the process now with ``code``, its output flushed, without the interpreter's
    shutdown (where native threads of JAX and XLA may still run, and JAX's exit-time
    ``distributed.shutdown`` would wait for peers that stopped)."""
    _flushed()
    os._exit(code)


def end_now(code: object) -> NoReturn:
    """End the command with ``code`` (a ``SystemExit`` code) as soon as its output is out: the
    exit handlers run and the standard streams are flushed, then the process ends without the
    interpreter's tear-down of every module it imported (about 0.03 s after a report). Where
    that could differ from a plain exit (a stream that cannot be flushed, a thread still
    running, a code that is not an exit status), the plain ``SystemExit`` ends it instead."""
    if code is None:
        code = 0
    if (not isinstance(code, int) or not 0 <= code <= 255
            or any(not t.daemon for t in threading.enumerate()
                   if t is not threading.main_thread())):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    if not _flushed():
        raise SystemExit(code)  # the interpreter reports the stream as it always did
    os._exit(int(code))


def _flushed() -> bool:
    """Flush the standard streams; False when one of them could not be flushed."""
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            ok = False
    return ok
