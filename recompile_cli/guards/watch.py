"""What the runtime guard (``recompile_cli.guards``) runs on the miss path: ``Watch`` counts each
top-level compile (and, with ``max_slow_calls``, slow call) of a guarded function and, beyond
the limit, explains it with the CLI's analysis and has the guard act on the compiling thread.

A guard must never go blind silently: listeners the program removed are put back and reported
(at once for ``jax.monitoring.clear_event_listeners()``, wrapped while a guard is installed;
else at the next trace or at removal). Nothing here runs on a cache hit.
"""

from __future__ import annotations

import fnmatch
import sys
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from recompile_cli.analysis.hosts import mismatch
from recompile_cli.analysis.messages import advice, describe, suggestions
from recompile_cli.analysis.report import build_report
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.slow_calls import analyse_group
from recompile_cli.analysis.warmup.coverage import after_warmup, misses
from recompile_cli.capture.code import stack
from recompile_cli.capture.hosts.host_check import HostCheck
from recompile_cli.capture.jax.arguments.signatures import TraceInfo
from recompile_cli.capture.jax.listeners import is_registered, register_listener
from recompile_cli.capture.recorder import Recorder
from recompile_cli.gate.evaluate import describe_miss
from recompile_cli.guards.config import GuardConfig
from recompile_cli.guards.errors import GuardViolation, inert
from recompile_cli.render.escape import terminal
from recompile_cli.session.locations import relative, relative_in
from recompile_cli.session.model import Event, Owner, Session, SlowCalls, function_key

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report
    from recompile_cli.analysis.warmup.coverage import Miss


Act = Callable[[GuardViolation, "types.FrameType | None"], None]
Blind = Callable[[str, "types.FrameType | None"], None]


class Watch:
    """The guard's ``on_compile`` callback and its recorder (see the module docstring).

    Args:
        config: what the guard checks.
        act: what the guard does with a violation (warn, log or raise), called on the
            compiling thread with the innermost user frame of the call that compiled.
        blind: what it does when it could not see some compiles (its listeners were removed).
    """

    def __init__(self, config: GuardConfig, act: Act, blind: Blind) -> None:
        self.config = config
        self.recorder: Recorder = _GuardRecorder(self)
        self.act = act
        self.blind = blind
        self._compiles: dict[str, int] = {}
        self._keys_by_name: dict[str, str | None] = {}  # None: several functions of that name
        self._explained: dict[str, tuple[GuardViolation, str]] = {}  # key -> last violation
        self._lock = threading.Lock()
        self._slow_said: set[str] = set()  # functions whose slow calls were warned or logged
        self.pending_blind: str | None = None  # noticed at a trace, reported at the compile
        self.hosts: HostCheck | None = None  # check_hosts: the processes of the job compared
        if config.host_timeout is not None:
            # a peer's stop ends this process from the check's watcher: its message on stderr
            self.hosts = HostCheck(config.host_timeout, mismatch.mismatch, mismatch.missing,
                                   shown=terminal)
            self.hosts.bind(self.recorder)

    def __call__(self, event: Event) -> None:
        if self.hosts is not None:
            self.hosts(event)  # raises HostsDiverged from the call, before any limit
        user_frame = stack.user_frame(sys._getframe(1))
        pending, self.pending_blind = self.pending_blind, None
        if pending is not None:
            self.blind(pending, user_frame)
        try:
            violation = self._check(event, user_frame)
        except Exception:  # never turn a bug of ours into the user's error
            return
        if violation is not None:
            self.act(violation, user_frame)

    def slow_call(self, group: SlowCalls) -> None:
        """A slow call (the recorder's ``on_slow_call``): beyond ``max_slow_calls`` for its
        function, the guard acts (``raise`` at every such call, ``warn``/``log`` once)."""
        try:
            violation = self._check_slow(group)
        except Exception:  # never turn a bug of ours into the user's error
            return
        if violation is not None:
            self.act(violation, stack.user_frame(sys._getframe(1)))

    def _check_slow(self, group: SlowCalls) -> GuardViolation | None:
        limit = self.config.slow_limit_of(group.function, group.owner)
        if limit is None:
            return None
        key = function_key(group.function, group.defined_at)
        count = self.recorder.slow_calls_of(group.function, group.defined_at)
        if count <= limit or (self.config.on != "raise" and key in self._slow_said):
            return None
        self._slow_said.add(key)
        found = analyse_group(group, None, "")
        where = found.line or found.call_site
        message = (f"recompile-cli guard: {group.function} made {counted(count, 'slow call')}, "
                   f"limit {limit}: JAX ran it through its Python dispatch without compiling "
                   f"({group.reason}): {relative_in(found.why)}")
        if found.fix:
            message += f". Suggestion: {relative_in(found.fix)}"
        return GuardViolation(
            function=group.function, defined_at=group.defined_at,
            compiles=self._compiles.get(key, 0), limit=limit, cause=str(group.reason),
            argument=None, before=None, after=None, detail=group.detail, call_site=where,
            suggestion=found.fix, message=inert(message), slow_calls=count)

    # -- the listeners -----------------------------------------------------------------------------
    def listening(self) -> bool:
        """False when the program removed the recorder's listeners (True when unknown)."""
        return all(is_registered(kind, callback) is not False
                   for kind, callback in self._listeners())

    def restore_listeners(self) -> None:
        """Register again the recorder's listeners that the program removed."""
        for kind, callback in self._listeners():
            if is_registered(kind, callback) is False:
                register_listener(kind, callback)

    def _listeners(self) -> list[tuple[str, Callable[..., None]]]:
        recorder = self.recorder
        return [("event_duration", recorder._on_duration), ("event", recorder._on_event)]

    def notice_at_trace(self) -> None:
        if self.pending_blind is None and not self.listening():
            self.restore_listeners()
            frame = stack.user_frame(sys._getframe(1))
            self.pending_blind = (
                "recompile-cli guard: the guard's jax.monitoring listeners were removed by the "
                "program (noticed at the next trace" + _at(frame) + "); the guard put them back: "
                "compiles between their removal and this one were not counted")

    # -- counting ----------------------------------------------------------------------------------
    def unmatched(self, session: Session) -> list[str]:
        """The guard's globs that matched no function it saw traced or compiled."""
        seen = {e.function for e in session.events if e.owner != Owner.JAX}
        return [pattern for pattern in self.config.patterns()
                if not any(fnmatch.fnmatchcase(name, pattern) for name in seen)]

    def _check(self, event: Event, user_frame: types.FrameType | None
               ) -> GuardViolation | None:
        config = self.config
        limit = config.limit_of(event.function, event.owner)
        if limit is None:
            return None
        if config.after_warmup is not None and self.recorder.warmup is None:
            return None  # the warm-up plan's own compile
        key = self._key_of(event)
        if config.warmup_calls:
            calls = self.recorder.calls.get(key)
            if calls is not None and calls <= config.warmup_calls:
                return None  # during the function's first warmup_calls calls
        with self._lock:
            count = self._compiles[key] = self._compiles.get(key, 0) + 1
        if count <= limit:
            return None
        return self._explain(event, key, count, limit, user_frame)

    def _key_of(self, event: Event) -> str:
        """The function key of an event. A compile without a re-trace or lowering of its own
        (the same arguments again after a compile that raised) has no ``defined_at``: it
        belongs to the one function of that name seen before, when there is one."""
        if event.defined_at is not None:
            key = function_key(event.function, event.defined_at)
            known = self._keys_by_name.setdefault(event.function, key)
            if known is not None and known != key:
                self._keys_by_name[event.function] = None
            return key
        return (self._keys_by_name.get(event.function)
                or function_key(event.function, event.defined_at))

    def _explain(self, compiled: Event, key: str, count: int, limit: int,
                 user_frame: types.FrameType | None) -> GuardViolation:
        """Analyse this function's events (the CLI's analysis) to explain the compile."""
        previous = self._explained.get(key)
        if compiled.defined_at is None and not compiled.traced and previous is not None:
            violation, described = previous
            message = (f"recompile-cli guard: {violation.function} compiled "
                       f"{counted(count, 'time')}, "
                       f"limit {limit}. This compile repeats one that already exceeded the limit "
                       f"(JAX keeps no executable of a compile whose call raised): {described}.")
            return replace(violation, compiles=count, message=inert(message))
        session = self.recorder.snapshot()
        events = [e for e in session.events if function_key(e.function, e.defined_at) == key]
        report = build_report(msgspec.structs.replace(session, events=tuple(events)))
        event = _event_of(events, compiled)
        cause = report.primary(event)
        missed = _after_warmup(report, event)
        if missed is not None:
            cause = missed.causes[0]
        call_site = relative(f"{user_frame.f_code.co_filename}:{user_frame.f_lineno}"
                             if user_frame is not None else event.call_site)
        codes = [cause.code]
        suggestion = next(iter(suggestions(report, event.function, [event], codes)), None)
        located = msgspec.structs.replace(event, call_site=call_site)
        described = describe(report, [located])
        if missed is not None:
            described = describe_miss(replace(missed, event=located))
        warmup = ""
        if self.config.warmup_calls and key not in self.recorder.calls:
            warmup = (f" (warmup_calls does not apply: {event.function} was jitted before the "
                      "guard was installed, so its calls are not counted)")
        after = " after the warm-up plan" if missed is not None else ""
        message = (f"recompile-cli guard: {event.function} compiled {counted(count, 'time')}"
                   f"{after}, limit {limit}{warmup}. This compile: {described}."
                   f"{advice(report, event.function, [event], codes)}")
        violation = GuardViolation(
            function=event.function, defined_at=relative(event.defined_at), compiles=count,
            limit=limit, cause=str(cause.code), argument=cause.argument, before=cause.before,
            after=cause.after, detail=cause.detail, call_site=call_site,
            suggestion=suggestion, message=inert(message))
        self._explained[key] = (violation, described)
        return violation


class _GuardRecorder(Recorder):
    """The guard's recorder: also checks, at each trace (miss path), that its listeners are
    still registered (JAX's private trace hook still runs when they are gone)."""

    def __init__(self, watch: Watch) -> None:
        # The guard reports compile counts and causes only: no compile-cost walk, no cache keys.
        super().__init__("recompile_cli.guard", on_compile=watch, compile_cost=False,
                         cache_keys=False, on_slow_call=watch.slow_call
                         if watch.config.max_slow_calls is not None else None)
        self._watch = watch

    def _on_trace(self, info: TraceInfo) -> None:
        super()._on_trace(info)
        self._watch.notice_at_trace()


# -- jax.monitoring.clear_event_listeners, wrapped while a guard is installed ----------------------
_ACTIVE: list[Watch] = []
_ACTIVE_LOCK = threading.Lock()
_ORIGINAL_CLEAR: list[Any] = []  # [JAX's function] while wrapped


def arm(watch: Watch) -> None:
    """Watch ``jax.monitoring.clear_event_listeners`` for this guard (from its install)."""
    from jax import monitoring  # JAX: once a guard is installed, never on import

    with _ACTIVE_LOCK:
        _ACTIVE.append(watch)
        current = getattr(monitoring, "clear_event_listeners", None)
        if not _ORIGINAL_CLEAR and current is not None:
            _ORIGINAL_CLEAR.append(current)
            monitoring.clear_event_listeners = _clear_event_listeners


def disarm(watch: Watch) -> None:
    """Stop watching for this guard; the last one puts JAX's function back (unless someone
    replaced ours meanwhile)."""
    from jax import monitoring  # JAX: once a guard is installed, never on import

    with _ACTIVE_LOCK:
        if watch in _ACTIVE:
            _ACTIVE.remove(watch)
        if not _ACTIVE and _ORIGINAL_CLEAR:
            original = _ORIGINAL_CLEAR.pop()
            if getattr(monitoring, "clear_event_listeners", None) is _clear_event_listeners:
                monitoring.clear_event_listeners = original


def _clear_event_listeners(*args: Any, **kwargs: Any) -> Any:
    """JAX's ``clear_event_listeners``, then every installed guard puts its listeners back
    and says so (under ``on="raise"``, ``GuardBlinded`` out of this call)."""
    result = _ORIGINAL_CLEAR[0](*args, **kwargs) if _ORIGINAL_CLEAR else None
    frame = stack.user_frame(sys._getframe(1))
    with _ACTIVE_LOCK:
        watches = list(_ACTIVE)
    for watch in watches:
        watch.restore_listeners()
    for watch in watches:
        watch.blind("recompile-cli guard: jax.monitoring.clear_event_listeners()"
                            + _at(frame) + " removed the guard's listeners; the guard put "
                            "them back and goes on guarding", frame)
    return result


def _at(frame: types.FrameType | None) -> str:
    return "" if frame is None else f" at {relative(frame.f_code.co_filename)}:{frame.f_lineno}"


def _after_warmup(report: Report, event: Event) -> Miss | None:
    """The ``analysis.warmup.coverage.Miss`` of ``event`` when a warm-up plan ran before it, else
    None."""
    warmup = report.session.warmup
    if warmup is None:
        return None
    return next((m for m in misses(report.session, report.causes, after_warmup(warmup),
                                   owners=tuple(Owner))
                 if m.event.seq == event.seq), None)


def _event_of(events: Sequence[Event], compiled: Event) -> Event:
    """``compiled`` as numbered in a snapshot (which numbers events by start time): found by
    its function and start."""
    for event in reversed(events):
        if (event.compiled and event.function == compiled.function
                and event.start_seconds == compiled.start_seconds):
            return event
    return [e for e in events if e.compiled][-1]


