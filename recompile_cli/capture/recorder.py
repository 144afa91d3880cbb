"""Recording: listens to JAX while a program runs and freezes what it saw into a ``Session``.

The public ``jax.monitoring`` duration events give the trace / lower / compile stages and their
times; the private hooks in ``capture.jax.hooks`` add signatures, nesting and lowering-key changes.
Both only fire on cache misses. One thread's events arrive in order (trace, lowering, compile)
and are stitched into one ``Event`` per miss through a per-thread "current event" slot, which
``enrich.Enrichment`` completes with the compile's cache key and cost. Calls that JAX dispatches
in Python without any of those stages (slow calls: ``capture.jax.slow_calls``) are grouped by
``slow_groups.SlowCallLog``. The ``Recorder`` owns all recording state (with ``Enrichment``,
``StaleWatch`` and ``SlowCallLog``); ``stop()`` returns frozen data.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from recompile_cli.capture import forks, raised
from recompile_cli.capture.code import origins, stack
from recompile_cli.capture.code.stack import exception_summary
from recompile_cli.capture.drafts import Draft, bare, trace_error
from recompile_cli.capture.enrich import CACHE_SAVED_EVENT, Enrichment
from recompile_cli.capture.hosts import process
from recompile_cli.capture.jax import callbacks, hooks, listeners, slow_calls
from recompile_cli.capture.jax.arguments import refusals
from recompile_cli.capture.jax.arguments.signatures import LowerInfo, TraceInfo
from recompile_cli.capture.slow_groups import SlowCallLog
from recompile_cli.capture.stale import StaleWatch
from recompile_cli.capture.stale_statics import StaticWatch
from recompile_cli.exits import ExitCode
from recompile_cli.session.events_log import EventLog
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import (
    PUBLIC_ONLY_CHOSEN,
    Environment,
    Event,
    FunctionKey,
    HookMode,
    Owner,
    Session,
    Signature,
    SlowCalls,
    SlowCallWatch,
    function_key,
)
from recompile_cli.session.warmup import Warmup

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_STAGES = {TRACE_EVENT: "trace", LOWER_EVENT: "lower", COMPILE_EVENT: "compile"}
_LISTENERS_GONE = ("the jax.monitoring listeners were removed while the program ran (e.g. by "
                   "jax.monitoring.clear_event_listeners()); compiles after that were not recorded")


class Recorder:
    """Start, run the program, stop: ``with Recorder() as rec: ...; session = rec.session``.

    The recorder owns everything captured while the program runs: the events, the calls counted
    per function, the target's failure, and the events log it streams to.

    Args:
        target: a label for what is being profiled, kept in the session.
        hook_mode: ``HookMode.PRIVATE`` (default; falls back to public-only when the internals
            are missing) or ``HookMode.PUBLIC_ONLY`` to use only the public monitoring events;
            their values (``"private"``, ``"public-only"``) are accepted too.
        events_log: stream every event, each time it changes, to this JSON-lines file
            (flushed), so that a killed run leaves everything recorded until then; or to an
            ``EventLog`` its caller opened (a supervised run's pipe), which the caller ends.
        on_compile: called with each top-level event when its backend compile completes, on
            the compiling thread, inside the user's jitted call. Unlike every other callback,
            what it raises is not caught: it reaches that call (the runtime guard uses this).
        compile_cost: profile each lowered program (``capture.jax.programs.cost``; private
            hooks only).
        cache_keys: take each persistent-cache key apart (``capture.jax.programs.cache_key``;
            private hooks and a cache directory only).
        on_slow_call: called with a function's slow-call group (its calls so far) at each of
            its slow calls, on the calling thread; like ``on_compile``, what it raises reaches
            the call (the runtime guard's ``max_slow_calls``).
    """

    def __init__(self, target: str = "", hook_mode: HookMode = HookMode.PRIVATE,
                 events_log: str | Path | EventLog | None = None,
                 on_compile: Callable[[Event], None] | None = None,
                 compile_cost: bool = True, cache_keys: bool = True,
                 on_slow_call: Callable[[SlowCalls], None] | None = None) -> None:
        self.target = target
        self._on_compile = on_compile
        self._on_slow_call = on_slow_call
        self._requested_mode = HookMode(hook_mode)
        self._events_log_path = events_log
        self._log: EventLog | None = None
        self.calls: dict[str, int] = {}  # function key -> calls counted, where known
        self._failures: list[str] = []
        self.calls_planned: int | None = None  # for "(3 of 40 calls raised)"
        self.interrupted: ExitCode | None = None  # set when a signal stopped the target
        self.failure_traceback: str | None = None  # the first failure's, as Python prints it
        self.compiles = 0  # backend compiles so far (for progress displays)
        self.hook_mode = self._requested_mode
        self._lock = threading.Lock()
        self._local = threading.local()
        self._enrich = Enrichment(self._local, self._on_internal_error, compile_cost, cache_keys)
        self._drafts: list[Draft] = []
        self._warnings: list[str] = []
        self._internal_errors = 0
        self._hooks: hooks.Hooks | None = None
        self._functions = origins.Functions()
        self._base_context: dict[str, str] = {}
        self._last_context: tuple[dict[str, str], dict[str, str]] | None = None
        self._t0 = 0.0
        self._wall = 0.0
        self._call_index: int | None = None
        self._call_label: str | None = None
        self._call_of: str | None = None
        self._paused = False
        self._stale = StaleWatch()
        self.statics = StaticWatch()  # stale statics: traces, and counted calls when counting
        self._warmup: Warmup | None = None
        self._raises = raised.RaiseWatch(self.refused)  # calls JAX refused, caught or not (3.12+)
        self._refusals: dict[int, BaseException] = {}  # the exceptions recorded as refusals
        self._slow_hooks: slow_calls.SlowCallHooks | None = None
        self._slow: SlowCallLog | None = None
        self._slow_watch: SlowCallWatch | None = None
        self.session: Session | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> Recorder:
        self._t0 = time.perf_counter()
        if self._requested_mode == HookMode.PRIVATE:
            reason = hooks.probe()
            if reason is None:
                self._hooks = hooks.Hooks(
                    self._on_trace, self._on_lower, self._on_internal_error, self._on_cost)
                self._hooks.install()
                self._base_context = hooks.trace_context()
                self._raises.start()
            else:
                self._warnings.append(f"JAX's tracing internals are unavailable ({reason}): "
                                      "counting compiles and times from the public "
                                      "jax.monitoring events only, without causes")
                self._slow_watch = SlowCallWatch(False, reason)
        self.hook_mode = HookMode.PRIVATE if self._hooks else HookMode.PUBLIC_ONLY
        self._enrich.install(private=self._hooks is not None)
        listeners.register_listener("event_duration", self._on_duration)
        listeners.register_listener("event", self._on_event)
        self._watch_slow_calls()
        if self._events_log_path is not None:  # the end record completes its environment
            self._log = (self._events_log_path if isinstance(self._events_log_path, EventLog)
                         else EventLog(self._events_log_path))
            self._log.header(self.environment(), self.target, self.base_context,
                             self._slow_watch)
        self._slow = SlowCallLog(self._t0, self._emit_slow, self._functions.function_id,
                                 self._functions.owner)
        forks.track(self)
        return self

    def _watch_slow_calls(self) -> None:
        """Install the slow-call hooks, or say why they cannot be (``SlowCallWatch``)."""
        if self._hooks is None:
            if self._slow_watch is None:  # (else: why the internals are unavailable)
                self._slow_watch = SlowCallWatch(False, PUBLIC_ONLY_CHOSEN)
            return
        reason = slow_calls.probe()
        if reason is not None:
            self._slow_watch = SlowCallWatch(False, reason)
            return
        self._slow_hooks = slow_calls.SlowCallHooks(self._on_slow, self._work,
                                                    self._on_internal_error)
        self._slow_hooks.install()
        self._slow_watch = SlowCallWatch(True)

    def forked(self) -> None:
        """In a child of ``os.fork``: a lock of its own, and the parent's events log left to
        the parent (``capture.forks``)."""
        self._lock = threading.Lock()
        if self._log is not None:
            self._log.abandon()
        self._log = None

    def count_call(self, key: str) -> int:
        """Count one call of the function ``key``; returns its 0-based index."""
        index = self.calls.get(key, 0)
        self.calls[key] = index + 1
        return index

    def fail(self, message: str, exc: BaseException | None = None) -> None:
        """Record that the target raised, exited or was interrupted: a one-line ``message``
        and, for the first failure, the user's traceback of ``exc``."""
        if exc is not None and self.failure_traceback is None:
            self.failure_traceback = stack.user_traceback(exc)
        if exc is not None:
            self._refusal_in(exc)
        self._failures.append(message)

    @property
    def failure(self) -> str | None:
        """The first failure, and how many calls failed when there were several."""
        if not self._failures:
            return None
        text = self._failures[0]
        if len(self._failures) > 1 and self.calls_planned:
            text += f" ({len(self._failures)} of {self.calls_planned} calls raised)"
        return text

    def stop(self) -> Session:
        """Stop listening, restore JAX, and return the frozen ``Session`` (also ``.session``)."""
        self._wall = time.perf_counter() - self._t0
        self._raises.stop()
        self.set_call(None, None)
        if not listeners.unregister_listener("event_duration", self._on_duration):  # never raises
            self._warnings.append(_LISTENERS_GONE)
        listeners.unregister_listener("event", self._on_event)
        if self._hooks is not None:
            self._warnings.extend(self._hooks.uninstall())
            self._hooks = None
        self._stop_slow_calls()
        self._warnings.extend(self._enrich.uninstall())
        if self._internal_errors:
            errors = self._internal_errors
            were = "errors were" if errors > 1 else "error was"
            self._warnings.append(f"{errors} internal recorder {were} caught; the affected "
                                  "events may lack details")
        if self.hook_mode == self._requested_mode == HookMode.PUBLIC_ONLY:
            self._warnings.append("hook mode public-only: causes and signatures are not "
                                  "recorded")
        if self._log is not None and self._log.problem:
            self._warnings.append(self._log.problem)
        self.session = self.snapshot(final=True)
        if self._log is not None and not isinstance(self._events_log_path, EventLog):
            self._log.end(self.session, self.interrupted, self.failure_traceback)
        return self.session

    def _stop_slow_calls(self) -> None:
        """Restore JAX's dispatch; when there were slow calls, measure the fast-path baseline
        (one cached call of a trivial jitted function, now that nothing of ours is hooked)."""
        if self._slow_hooks is not None:
            self._warnings.extend(self._slow_hooks.uninstall())
            self._warnings.extend(self._slow_hooks.problems)
            self._slow_hooks = None
        if self._slow and self._slow_watch is not None and self._slow_watch.observable:
            self._slow_watch = msgspec.structs.replace(
                self._slow_watch, fast_call_seconds=slow_calls.fast_call_seconds())
        if self._slow is not None:
            self._slow.flush()

    def environment(self) -> Environment:
        """What records (``process.environment``), read without starting JAX's backend."""
        return process.environment(self.hook_mode, self._enrich.cache_dir)

    @property
    def base_context(self) -> dict[str, str]:
        return dict(self._base_context)

    def snapshot(self, final: bool = False) -> Session:
        """A frozen ``Session`` of everything recorded so far; recording goes on."""
        wall = self._wall if final else time.perf_counter() - self._t0
        stale = self._stale.captures(self._on_internal_error)
        warnings = list(self._warnings)
        statics = self.statics.findings()
        if final and self.statics.partial and not self.statics.counting and not statics:
            shown = ", ".join(f"`{param}` of {name} ({kind})"
                              for (name, param), kind in self.statics.partial.items())
            warnings.append(f"stale statics: {shown} compare equal by part of their state; a "
                            "cache hit that reuses an executable compiled for other values "
                            "runs no code of recompile-cli's: run with --count-calls to see "
                            "every reuse")
        with self._lock:
            drafts = sorted(self._drafts, key=lambda d: d.event.start_seconds)
        return Session(
            environment=self.environment(),
            target=self.target, events=tuple(d.frozen(i) for i, d in enumerate(drafts)),
            wall_seconds=wall, base_context=dict(self._base_context), calls=dict(self.calls),
            warnings=tuple(warnings), stale_captures=tuple(stale),
            target_exception=self.failure, warmup=self._warmup, stale_statics=tuple(statics),
            slow_calls=self._slow.snapshot() if self._slow is not None else (),
            slow_call_watch=self._slow_watch)

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        if exc is not None:
            self._refusal_in(exc)
            self.fail(exception_summary("the recorded block", exc))
        self.stop()

    def set_call(self, index: int | None, label: str | None, of: str | None = None) -> None:
        """Tell the recorder which call (``index``, 0-based) of which function (``of``, a
        function key) runs now; ``label`` is the call site for events with no user frame."""
        self._call_index, self._call_label, self._call_of = index, label, of

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Ignore what JAX compiles inside this block (e.g. building the target's arguments)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False
            self._local.current = None

    def warn(self, message: str) -> None:
        self._warnings.append(message)

    def seconds(self) -> float:
        """Seconds since the recording started (the clock of ``Event.start_seconds``)."""
        return time.perf_counter() - self._t0

    def warmed_up(self, warmup: Warmup) -> None:
        """Record the warm-up plan that just ended (``capture.running.warmup``), streamed to the
        events log at once: the workload's events are those that start after it."""
        self._warmup = warmup
        if self._log is not None:
            self._log.warmup(warmup)

    @property
    def warmup(self) -> Warmup | None:
        return self._warmup

    def after_each_trace(self, callback: Callable[[Any, Any], None] | None) -> bool:
        """Call ``callback(trace_info, jit_info)`` after each top-level trace of a miss (a
        warm-up at a first call, ``capture.running.first_call``); False when the private hooks
        are not installed (nothing is called then)."""
        if self._hooks is None:
            return False
        self._hooks.after_trace = callback
        return True

    def refused(self, exc: BaseException, frame: Any, offset: int) -> None:
        """Record the call JAX refused, if ``exc`` raised at instruction ``offset`` of the user
        frame ``frame`` is one (``capture.jax.arguments.refusals``), once per exception. Never
        raises."""
        try:
            if self._hooks is not None and not self._paused and id(exc) not in self._refusals:
                self._refused(refusals.refusal(exc, frame, offset), exc)
        except Exception as error:
            self._on_internal_error(error)

    def static_call(self, key: str, values: dict[str, Any]) -> None:
        """A counted call of the function ``key`` that traced nothing, with these statics:
        compared with what its equal statics were traced with (``stale_statics``)."""
        parsed = FunctionKey.parse(key)
        try:
            self.statics.called(key, parsed.name, parsed.defined_at, values)
        except Exception as exc:
            self._on_internal_error(exc)

    def refused_call(self, exc: BaseException, callee: Any, args: list[Any],
                     kwargs: dict[str, Any]) -> None:
        """Record the call ``callee(*args, **kwargs)`` (a spec's, or a counted one) that JAX
        refused, if ``exc`` is such a refusal. Never raises."""
        try:
            if self._hooks is not None and not self._paused and id(exc) not in self._refusals:
                site = self._call_label or stack.user_call_site(skip=2) or "?"
                self._refused(refusals.refusal_of_call(exc, callee, args, kwargs, site), exc)
        except Exception as error:
            self._on_internal_error(error)

    def _refusal_in(self, exc: BaseException) -> None:
        """Record the refused call that the target's exception ``exc`` is, if it is one."""
        try:
            if self._hooks is not None and id(exc) not in self._refusals:
                self._refused(refusals.refusal_in(exc), exc)
        except Exception as error:
            self._on_internal_error(error)

    def _refused(self, found: refusals.Refusal | None, exc: BaseException) -> None:
        if found is None:
            return
        if len(self._refusals) >= 1024:  # held, so that no other exception takes its id
            self._refusals.clear()
        self._refusals[id(exc)] = exc
        draft = self._new(found.name, found.defined_at, depth=0, seconds=0.0)
        draft.set(call_site=found.call_site, error=found.error)
        self._emit(draft)

    # -- callbacks (miss path only; none may raise) ----------------------------------------------
    def _on_duration(self, event: str, duration: float, **kwargs: Any) -> None:
        compiled: Event | None = None
        try:
            stage = _STAGES.get(event)
            if stage is not None and not self._paused:
                draft = self._on_stage(stage, bare(kwargs.get("fun_name")), duration)
                if draft is not None and self._on_compile is not None and draft.event.depth == 0:
                    compiled = draft.frozen(draft.id)
            elif event == CACHE_SAVED_EVENT:
                self._enrich.on_saved(duration)
        except Exception as exc:
            self._on_internal_error(exc)
        if compiled is not None and self._on_compile is not None:
            self._on_compile(compiled)  # outside the guard: what it raises reaches the call

    def _on_event(self, event: str, **kwargs: Any) -> None:
        try:
            self._enrich.on_event(event)
        except Exception as exc:
            self._on_internal_error(exc)

    def _on_stage(self, stage: str, name: str | None, seconds: float) -> Draft | None:
        """Fill in the current event with a stage; returns it when a backend compile ended."""
        local = self._local
        start = time.perf_counter() - self._t0 - seconds  # the duration event fires at the end
        current: Draft | None = getattr(local, "current", None)
        if stage == "trace":
            if self._hooks is None:  # private mode times traces itself, nested ones included
                local.current = self._new(name or "?", self._counted_at(name), depth=0,
                                          seconds=seconds,
                                          owner=origins.public_owner(sys._getframe(1)))
                local.current.set(traced=True, trace_seconds=seconds)
                self._emit(local.current)
            return None
        if stage == "lower" and self._hooks is not None:
            local.pending_lower = (seconds, start)  # claimed by _on_lower right after
            return None
        fits = (current is not None and current.event.function == name
                and not (current.lowered if stage == "lower" else current.event.compiled))
        if current is None or not fits:
            current = self._new(name or "?", self._counted_at(name), depth=0, seconds=seconds,
                                owner=(origins.public_owner(sys._getframe(1))
                                       if self._hooks is None else None))
            local.current = current
        if stage == "lower":
            current.lowered = True
            current.set(lower_seconds=seconds, lower_start_seconds=start)
            self._emit(current)
            return None
        pending = getattr(local, "pending_lower", None)
        if pending is not None and not current.lowered:  # lowered outside the hooked path
            current.lowered = True
            current.set(lower_seconds=pending[0], lower_start_seconds=pending[1])
        local.pending_lower = None
        current.set(compiled=True, compile_seconds=seconds, compile_start_seconds=start)
        self.compiles += 1
        self._enrich.compiled(current)
        self._emit(current)
        return current

    def _on_trace(self, info: TraceInfo) -> None:
        if self._paused:
            return
        owner, created_at = self._origin(info)
        error = trace_error(info.error, info.leaves) if info.error is not None else None
        draft = self._new(
            info.name, info.defined_at, depth=info.depth, seconds=info.seconds, owner=owner,
            started=info.started, traced=True, trace_seconds=info.seconds, signature=Signature(
                leaves=info.leaves, static=info.static, structure=info.structure,
                positional=info.positional, keywords=info.keywords,
                context=self._context_changes(info.context),
                function_id=self._functions.function_id(info.fun),
                function_kind=info.function_kind, created_at=created_at,
                static_classes=info.static_classes, python_scalars=info.python_scalars),
            replay=info.replay, flatten=info.flatten, error=error)
        draft.jaxpr_id = info.jaxpr_id
        if error is None and stack.owner_of(path_of(info.defined_at)) == Owner.USER:
            self._stale.add(info.name, info.defined_at, info.fun, info.host_code)  # yours
            if info.static_values:
                try:
                    self.statics.traced(function_key(info.name, info.defined_at), info.name,
                                        info.defined_at, info.fun, info.static_values)
                except Exception as exc:
                    self._on_internal_error(exc)
        if info.error is None and info.jaxpr_id is not None and self._slow is not None:
            self._slow.note_trace(info.jaxpr_id, info.fun,  # for naming its slow calls
                                  (info.name, info.defined_at, draft.event.owner))
            if self._slow_hooks is not None:
                self._slow_hooks.learn(info.fun)
        if info.depth == 0:
            self._local.current = draft if info.error is None else None
            self._local.traced_fun = (info.jaxpr_id, info.fun)  # for naming its constants
        if info.jaxpr_id is not None and info.error is None:  # its lowering may come later
            traced = getattr(self._local, "traced", None)
            if traced is None:
                traced = self._local.traced = {}
            traced[info.jaxpr_id] = draft
        self._emit(draft)

    def _on_lower(self, info: LowerInfo) -> None:
        if self._paused:
            return
        local = self._local
        pending = getattr(local, "pending_lower", None)
        local.pending_lower = None
        if pending is None:  # a new lowering key, but JAX lowered nothing: no event
            return
        seconds, start = pending
        current: Draft | None = getattr(local, "current", None)
        if (current is not None and not current.lowered and current.jaxpr_id != info.jaxpr_id
                and info.changes is None and current.event.traced
                and current.event.function == info.name):
            # A jaxpr derived from the trace just made (checkify, grad, vmap of the jitted
            # function re-traced it for new inputs, then lowered what it derived): one event,
            # the trace's, with its cause, not a trace that compiled nothing and a compile.
            current.jaxpr_id = info.jaxpr_id
        if current is None or current.lowered or current.jaxpr_id != info.jaxpr_id:
            # Paired by the jaxpr: a trace made earlier (jax.eval_shape, .trace()) lends its
            # signature to the compile that uses it; anything else is a jaxpr of its own.
            traced = (getattr(local, "traced", None) or {}).get(info.jaxpr_id)
            if traced is not None and traced.event.function != info.name:
                traced = None
            earlier = traced.event if traced is not None else None
            current = self._new(info.name, earlier.defined_at if earlier else info.defined_at,
                                depth=0, seconds=seconds,
                                owner=earlier.owner if earlier is not None else None)
            current.set(signature=(earlier.signature if earlier is not None
                                   else Signature(leaves=info.leaves)),
                        lowering_changes=info.changes,
                        replay=earlier.replay if earlier is not None else None)
            local.current = current
        placed, per_leaf = info.placements
        replay = current.event.replay
        if replay is not None and (placed or replay.placements):  # as this lowering placed them
            current.set(replay=msgspec.structs.replace(replay, placements=placed,
                                                       leaf_placements=per_leaf))
        current.lowered = True
        current.set(lower_seconds=seconds, lower_start_seconds=start)
        self._emit(current)

    def _on_cost(self, jaxpr: Any, lowering: Any) -> None:
        """Profile the program just lowered into the current event (``Enrichment.cost``), and
        tell the slow-call hooks which program it is (an AOT ``Compiled`` of it names it)."""
        if self._slow_hooks is not None:
            self._slow_hooks.note_lowering(jaxpr, lowering)
        if not self._paused and self._enrich.compile_cost:
            self._enrich.cost(jaxpr, lowering)

    def _on_slow(self, slow: slow_calls.Slow, seconds: float, frame: Any) -> None:
        """One slow call (``capture.jax.slow_calls``); ``on_slow_call`` may raise into it."""
        if self._paused or self._slow is None:
            return
        group = None
        try:
            group = self._slow.add(slow, seconds, frame, frozen=self._on_slow_call is not None,
                                   label=self._call_label)
        except Exception as exc:
            self._on_internal_error(exc)
        if group is not None and self._on_slow_call is not None:
            self._on_slow_call(group)  # outside the guard: what it raises reaches the call

    def slow_calls_of(self, name: str, defined_at: str | None) -> int:
        """The slow calls of one function recorded so far."""
        return self._slow.calls_of(name, defined_at) if self._slow is not None else 0

    def _work(self) -> int:
        """Traces, lowerings and compiles recorded so far on this thread (events emitted)."""
        return int(getattr(self._local, "work", 0))

    def _emit_slow(self, group_id: int, group: SlowCalls) -> None:
        if self._log is not None:
            self._log.slow_calls(group_id, group)

    def _on_internal_error(self, exc: BaseException) -> None:
        self._internal_errors += 1

    # -- helpers ---------------------------------------------------------------------------------
    def _origin(self, info: TraceInfo) -> tuple[Owner | None, str | None]:
        """Whose the traced function is and where the user's code made it, read from this
        stack (``origins.Functions.origin``)."""
        try:
            return self._functions.origin(info, sys._getframe(2))
        except Exception as exc:
            self._on_internal_error(exc)
            return (Owner.JAX if info.eager_primitive else None), None

    def _counted_at(self, name: str | None) -> str | None:
        """Public-only: where the function whose counted call (``--count-calls``) runs now is
        defined, for an event of that name, so that its calls and location fill in."""
        if self._hooks is None and self._call_of:
            key = FunctionKey.parse(self._call_of)
            if key.name == name:
                return key.defined_at
        return None

    def _new(self, name: str, defined_at: str | None, depth: int, seconds: float,
             owner: Owner | None = None, started: float | None = None, **fields: Any
             ) -> Draft:
        """A new event that began ``seconds`` ago, or at ``started`` (``time.perf_counter``)
        where the hook measured it: a trace nested in another then always starts after it,
        so that the session's order does not depend on how long the outer hook took.
        ``fields``: more of the ``Event``'s fields, known already."""
        owner = owner or self._functions.owner(name, defined_at)
        user = stack.user_frame(sys._getframe(2))
        call_site = stack.site(user) or self._call_label
        # JAX's or a library's miss made by the user's line: inside a host callback?
        around = (callbacks.host_callback_around(user)
                  if user is not None and owner != Owner.USER and depth == 0 else None)
        start = (time.perf_counter() - seconds if started is None else started) - self._t0
        with self._lock:  # numbered in creation order; the events log's numbers are these
            number = len(self._drafts)
            draft = Draft(Event(
                seq=number, function=name, defined_at=defined_at, owner=owner,
                call_site=call_site, call_index=self._call_index, depth=depth,
                traced=fields.pop("traced", False), compiled=False, start_seconds=start,
                call_of=self._call_of, host_callback=around, **fields), id=number)
            self._drafts.append(draft)
        return draft

    def _emit(self, draft: Draft) -> None:
        """Stream the event, as it is now, to the events log (``--events-log``), if any."""
        self._local.work = getattr(self._local, "work", 0) + 1  # what a slow call never does
        if self._log is not None:
            self._log.event(draft.frozen(draft.id))

    def _context_changes(self, context: dict[str, str]) -> dict[str, str]:
        """The entries of a trace's context that differ from the base context; the same
        context object as the last trace's (``trace_context`` reuses it) gives the same answer."""
        last = self._last_context
        if last is not None and last[0] is context:
            return last[1]
        changes = {k: v for k, v in context.items() if self._base_context.get(k) != v}
        self._last_context = (context, changes)
        return changes
