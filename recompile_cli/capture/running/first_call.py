"""A warm-up plan's signatures warmed at the first call of each function (``run
--after-warmup`` on a script without a main guard, or a jit that no module holds because the
script makes it inside a function), beside the user's code.

The plan's ``AT_FIRST_CALL`` maps each function (its name, its file relative to the plan, its
line) to its block, a generator of ``(function, label, lower)`` given the jitted object.
``FirstCalls`` is called after each top-level trace of a jit-cache miss (``Recorder.
after_each_trace``: the miss path only, never a cached call): at the first trace of a function
it waits for, it lowers and compiles every signature of its block on that very function and
``JitInfo`` (``capture.jax.replay.lowerable``), then lets the call go on, and records what it
compiled, skipped and could not compile (``session.warmup.FirstCall``, streamed at once with
the ``Warmup`` it extends). It never raises into user code: what a signature raises is that
signature's failure, what goes wrong around it the recorder's internal error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from recompile_cli import exits
from recompile_cli.capture.jax import replay
from recompile_cli.session.locations import parse
from recompile_cli.session.model import function_key
from recompile_cli.session.warmup import FirstCall, Skipped, Warmup

if TYPE_CHECKING:
    from recompile_cli.capture.recorder import Recorder

Key = tuple[str, str, int]  # function name, absolute file, line
Block = Callable[[Any], Iterable[tuple[str, str, Callable[[], Any]]]]


def blocks(module: Any, plan: Path, skip: Iterable[Callable[..., Any]] = ()) -> dict[Key, Block]:
    """The plan module's ``AT_FIRST_CALL`` by absolute file (relative to ``plan``'s folder),
    leaving out the blocks in ``skip`` (warmed up front); empty for a plan without it."""
    table = getattr(module, "AT_FIRST_CALL", None)
    if not isinstance(table, dict):
        return {}
    skipped = set(map(id, skip))
    out: dict[Key, Block] = {}
    for key, block in table.items():
        if (not isinstance(key, tuple) or len(key) != 3 or not callable(block)
                or id(block) in skipped):
            continue
        name, file, line = key
        if isinstance(name, str) and isinstance(file, str) and isinstance(line, int):
            out[(name, _absolute(os.path.join(plan.parent, file)), line)] = block
    return out


def _absolute(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


class FirstCalls:
    """Warms a function's planned signatures at its first traced call (``__call__``, after a
    top-level trace), once per function, and records each such warm-up in the ``Warmup``."""

    def __init__(self, recorder: Recorder, warmup: Warmup, waiting: dict[Key, Block],
                 skip_error: type[BaseException] | None) -> None:
        self._recorder = recorder
        self._waiting = dict(waiting)
        self._skip = skip_error
        self._lock = threading.Lock()
        self._local = threading.local()
        self.warmup = msgspec.structs.replace(warmup, waiting=tuple(sorted(
            function_key(name, f"{file}:{line}") for name, file, line in waiting)))

    def __call__(self, info: Any, ji: Any) -> None:
        if not self._waiting or getattr(self._local, "busy", False):
            return
        found = parse(info.defined_at)
        if found is None:
            return
        key = (info.name, _absolute(found.path), found.line)
        with self._lock:
            block = self._waiting.pop(key, None)
        if block is None:
            return
        self._local.busy = True
        try:
            self._warm(info, ji, block)
        finally:
            self._local.busy = False

    def _warm(self, info: Any, ji: Any, block: Block) -> None:
        started = self._recorder.seconds()
        compiled, skipped, failed = 0, [], []
        jitted = replay.lowerable(info.fun, ji)
        if jitted is None:
            failed.append(Skipped(info.name, "", "this JAX has no jax._src.pjit.jit_lower to "
                                  "lower a jit at its first call"))
        else:
            try:
                work = list(block(jitted))
            except exits.INTERRUPTIONS:
                raise
            except Exception as exc:
                work, failed = [], [Skipped(info.name, "", f"{type(exc).__name__}: {exc}")]
            for function, label, lower in work:
                try:
                    lower().compile()
                    compiled += 1
                except exits.INTERRUPTIONS:
                    raise
                except Exception as exc:
                    if self._skip is not None and isinstance(exc, self._skip):
                        skipped.append(Skipped(str(function), str(label), str(exc)))
                    else:
                        failed.append(Skipped(str(function), str(label),
                                              f"{type(exc).__name__}: {exc}"))
        done = FirstCall(function_key(info.name, info.defined_at), started,
                         self._recorder.seconds(), compiled, tuple(skipped), tuple(failed))
        with self._lock:
            self.warmup = msgspec.structs.replace(
                self.warmup, first_calls=(*self.warmup.first_calls, done))
            self._recorder.warmed_up(self.warmup)
