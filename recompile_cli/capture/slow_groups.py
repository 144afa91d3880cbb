"""The recorder's slow calls (``capture.jax.slow_calls`` finds them): one ``SlowCalls`` record
per function, signature and reason (the report shows one group per function, line and reason:
``analysis.slow_calls.merged``), named as that function's compiles are (by the trace of its
program, else of its function object: ``note_trace``), with the user's call site of its first
call, streamed to the events log. A call's seconds are its Python dispatch outside the
program's execution (what a fix that restores the fast path saves).

A group goes to the log when it first appears, then its counts at most every
``FLUSH_SECONDS`` and once more at the end (``flush``): never a log line per slow call, and a
run killed mid-way still leaves every group with its counts of a moment before. Adding a call
costs a dictionary lookup, two additions and a clock read, under a lock.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax.slow_calls import Slow
from recompile_cli.session.model import Owner, SlowCalls

FLUSH_SECONDS = 0.25  # the most often the counts of the groups go to the events log

# emit(group id, the group as it is now): the events log's writer
Emit = Callable[[int, SlowCalls], None]
Identity = tuple[str, str | None, Owner]  # (name, defined_at, owner) of a function


@dataclass(slots=True)
class _Group:
    """A group's counters. Its first call may carry one-time work (a callback's first run, an
    AOT ``Compiled``'s first execution: 100 ms where the others take 0.2), so it is counted at
    most at the mean of the others (``seconds``)."""

    id: int
    shown: SlowCalls  # its fixed fields (calls and seconds are these counters')
    calls: int = 0
    first: float = 0.0  # the first call's seconds
    rest: float = 0.0  # the others'
    dirty: bool = False

    @property
    def seconds(self) -> float:
        if self.calls <= 1:
            return self.first
        return self.rest + min(self.first, self.rest / (self.calls - 1))

    def frozen(self) -> SlowCalls:
        return msgspec.structs.replace(self.shown, calls=self.calls, seconds=self.seconds)


class SlowCallLog:
    """The slow-call groups of one recording, in the order first seen.

    Args:
        t0: the recording's start (``time.perf_counter()``), for ``first_seconds``.
        emit: streams a group to the events log, if there is one.
        function_id: a small id per function object (``origins.Functions.function_id``).
        owner: whose a function is, by name and ``defined_at``, where no trace said.
    """

    def __init__(self, t0: float, emit: Emit | None, function_id: Callable[[Any], int],
                 owner: Callable[[str, str | None], Owner]) -> None:
        self._t0 = t0
        self._emit = emit
        self._function_id = function_id
        self._owner = owner
        self._programs: dict[int, Identity] = {}  # jaxpr id -> its trace's function
        self._named: dict[int, Identity] = {}  # function id -> the same
        self._identities: dict[Identity, Identity] = {}  # one tuple per function, however
        # many traces name it (each would stay alive for the garbage collector to walk)
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
            if group.calls == 1:
                group.first = max(seconds, 0.0)
            else:
                group.rest += max(seconds, 0.0)
            group.dirty = True
            shown = group.frozen() if frozen else None
            due = fresh or now >= self._next_flush
        if due:
            self.flush(now)
        return shown

    def note_trace(self, jaxpr_id: int, fun: Any, identity: Identity) -> None:
        """A trace of ``fun`` made the program ``jaxpr_id``: its slow calls take its name."""
        identity = self._identities.setdefault(identity, identity)
        self._programs[jaxpr_id] = identity
        self._named[self._function_id(fun)] = identity

    def _identity(self, slow: Slow) -> Identity:
        """A slow call's function as its trace named it (by its program, else its function
        object), else as JAX names it."""
        known = self._programs.get(slow.jaxpr_id) if slow.jaxpr_id is not None else None
        fun = slow.function()
        if known is None and fun is not None:
            known = self._named.get(self._function_id(fun))
        if known is not None:
            return known
        return slow.name, slow.defined_at, self._owner(slow.name, slow.defined_at)

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
