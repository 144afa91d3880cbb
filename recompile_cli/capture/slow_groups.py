"""The recorder's slow calls (``capture.jax.slow_calls`` finds them): one ``SlowCalls`` group
per function, signature and reason, named as that function's compiles are, with the user's
call site of its first call, streamed to the events log.

A group goes to the log when it first appears, then its counts at most every
``FLUSH_SECONDS`` and once more at the end (``flush``): never a log line per slow call, and a
run killed mid-way still leaves every group with its counts of a moment before. Adding a call
costs a dictionary lookup, two additions and a clock read, under a lock.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass

from recompile_cli.capture import stack
from recompile_cli.capture.jax.slow_calls import Slow
from recompile_cli.session.model import Owner, SlowCalls

FLUSH_SECONDS = 0.25  # the most often the counts of the groups go to the events log

# emit(group id, the group as it is now): the events log's writer
Emit = Callable[[int, SlowCalls], None]
# identity(slow) -> (name, defined_at, owner) as the recorder names that function's compiles
Identity = Callable[[Slow], tuple[str, str | None, Owner]]


@dataclass(slots=True)
class _Group:
    id: int
    shown: SlowCalls  # its fixed fields (calls and seconds are these counters')
    calls: int = 0
    seconds: float = 0.0
    dirty: bool = False

    def frozen(self) -> SlowCalls:
        return dataclasses.replace(self.shown, calls=self.calls, seconds=self.seconds)


class SlowCallLog:
    """The slow-call groups of one recording, in the order first seen.

    Args:
        identity: names a group's function as its trace named it.
        t0: the recording's start (``time.perf_counter()``), for ``first_seconds``.
        emit: streams a group to the events log, if there is one.
    """

    def __init__(self, identity: Identity, t0: float, emit: Emit | None = None) -> None:
        self._identity = identity
        self._t0 = t0
        self._emit = emit
        self._groups: dict[tuple[object, ...], _Group] = {}
        self._lock = threading.Lock()
        self._next_flush = 0.0

    def add(self, slow: Slow, seconds: float, frame: types.FrameType | None,
            frozen: bool = False, label: str | None = None) -> SlowCalls | None:
        """Count one slow call of ``slow``'s group (``frame``: where JAX was called from;
        ``label``: the call site where no frame of the user's is on the stack, a spec's call);
        returns the group as it is now when ``frozen``."""
        now = time.perf_counter()
        with self._lock:
            group = self._groups.get(slow.key)
            if group is None:
                group = self._groups[slow.key] = self._new(slow, frame, now, label)
                fresh = True
            else:
                fresh = False
            group.calls += 1
            group.seconds += max(seconds, 0.0)
            group.dirty = True
            shown = group.frozen() if frozen else None
            due = fresh or now >= self._next_flush
        if due:
            self.flush(now)
        return shown

    def _new(self, slow: Slow, frame: types.FrameType | None, now: float,
             label: str | None) -> _Group:
        name, defined_at, owner = self._identity(slow)
        return _Group(len(self._groups), SlowCalls(
            function=name, defined_at=defined_at, owner=owner, reason=slow.reason, calls=0,
            seconds=0.0, call_site=stack.call_site_of(frame) or label, line=slow.line,
            detail=slow.detail, arguments=slow.arguments, kind=slow.kind,
            first_seconds=max(now - self._t0, 0.0)))

    def flush(self, now: float | None = None) -> None:
        """Stream the groups whose counts changed since the last flush."""
        with self._lock:
            self._next_flush = (now or time.perf_counter()) + FLUSH_SECONDS
            changed = [g for g in self._groups.values() if g.dirty]
            for group in changed:
                group.dirty = False
            frozen = [(g.id, g.frozen()) for g in changed]
        if self._emit is not None:
            for group_id, shown in frozen:
                self._emit(group_id, shown)

    def snapshot(self) -> tuple[SlowCalls, ...]:
        with self._lock:
            return tuple(g.frozen() for g in self._groups.values())

    def calls_of(self, name: str, defined_at: str | None) -> int:
        """The slow calls so far of one function (all its groups)."""
        with self._lock:
            return sum(g.calls for g in self._groups.values()
                       if g.shown.function == name and g.shown.defined_at == defined_at)

    def __bool__(self) -> bool:
        return bool(self._groups)
