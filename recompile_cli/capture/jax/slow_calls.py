"""Part of the JAX-internals layer (see ``hooks``): *slow calls*, the calls of jitted functions
that JAX dispatches in Python although they trace, lower and compile nothing, and why.

A call that JAX's C++ fast path serves never enters Python: nothing here runs on it. A call it
refuses runs JAX's Python ``cache_miss`` (``pjit._cpp_pjit``), which looks the following module
globals up by name at call time, so that patching them sees every such call (read in the source
of JAX 0.10.2 and 0.12.0.1, ``jax/_src/pjit.py`` and ``stages.py``; when and why the C++ path
refuses a call is ``jaxlib/pjit.cc``'s, summarised in ``docs/slow-calls.md``):

* ``pjit._infer_params``: the first step of ``cache_miss``; the clock of a slow call starts here.
* ``pjit._run_python_pjit(p, args_flat, fun, args, kwargs)``: the dispatch. Whether it traced,
  lowered or compiled is the recorder's to say (``work``: its count of such events on this
  thread, before and after); one that did is a cache miss, reported as such, never a slow call.
* ``pxla.ExecuteReplicated.__call__``: the program's execution inside a Python dispatch (on CPU,
  with a host callback, the whole computation runs in it). Its seconds are not the slow call's:
  a fix that moves the call to the fast path removes the Python dispatch around the execution,
  never the execution itself, so a slow call's seconds are the dispatch less them. With
  effects, its ``_add_tokens_to_inputs`` and ``_handle_token_bufs`` mark where XLA's
  ``execute_sharded`` starts and ends: the Python around it (tokens, argument and output
  handlers: about 0.2 ms a call on CPU) is dispatch, which the fast path does not pay.
* ``debugging.debug_callback_p.impl`` (``jax.debug.callback`` and ``jax.debug.print``) and
  ``callback.io_callback_impl``: the host side of a callback, on whichever thread XLA runs it
  (never on a fast call: a program with either effect has no fast path).
  The fix of an effect takes the callback out of the step (or behind a flag that is off
  there), which removes its host run too: the seconds of the callbacks that ran inside the
  execution are not execution (on CPU the execution waits for them), and stay in the slow
  call's. On an accelerator they run beside the dispatch and are not counted. What removing
  a ``jax.debug.callback`` saves, measured A/B on CPU (``benchmarks/slow_call_saving.py``):
  the dispatch alone is about half of it, the callback's host run most of the rest.
* ``pjit._get_fastpath_data(executable, ...)``: the end of ``cache_miss``. ``None`` makes the
  C++ entry fall back to Python for every later call of that signature (a sticky fallback); which
  of its clauses held is the reason (``_sticky``: effects, refs, PGLE, ``jax_no_execution``,
  outputs that are not arrays). Data returned for a call that still came to Python is the first
  call of a new C++ entry (a numpy array, a Python scalar or a leaf type where a JAX array was
  passed before: later calls take the fast path), or, when the same entry comes back, a per-call
  fallback (an uncommitted array on several devices, an argument type the C++ path refuses), an
  entry the first call of which raised, or an entry the C++ cache lost (eviction). A per-call
  reason is only believed once the entry comes back: its first call is then counted too.
* ``stages.Compiled.call``: every Python call of an AOT ``Compiled``: every call when
  ``create_cpp_call`` gave it no C++ path (host callbacks, ``pure_callback`` included, or
  unordered effects), else a miss of its C++ path.
* ``pjit._cpp_pjit``: each ``jax.jit`` made while recording, to know the code objects of jitted
  functions. Under ``jax.disable_jit`` the C++ path calls the Python function itself and nothing
  is dispatched; while ``jax_disable_jit`` is on (its config hooks say when it is set, globally
  or in a ``with``), a ``sys.setprofile`` function counts the starts of those code objects (and
  is not installed when another profiler holds ``sys.setprofile``: the recorder says so).

JAX's private test-event slot (``util.test_event_listener``) is not used: importing
``jax._src.test_util`` (which overwrites it) changes nothing here, and a listener someone put
there is left alone. Nothing here compiles: the cost of a fast-path call is not measured (it
would take a jitted function of ours, compiled in the user's process and shown in JAX's log).
``probe()`` says what is missing on another JAX (0.4.30 has neither ``_run_python_pjit`` nor
the private hooks mode), and the report then says slow calls were not observable. Every
wrapper calls JAX's function first and never raises into the user's call.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax.arguments.signatures import arg_names, name_and_location
from recompile_cli.capture.jax.hooks import restore
from recompile_cli.capture.jax.programs.cost import user_location
from recompile_cli.session.model import CallKind, SlowReason

# The parameters each patched function must start with (JAX 0.10.2 and 0.12.0.1).
_RUN_PARAMS = ["p", "args_flat", "fun", "args", "kwargs"]
_FASTPATH_PARAMS = ["executable", "out_tree", "args_flat", "out_flat", "effects",
                    "consts_for_constvars", "pgle_profiler", "const_args"]
MAX_ARGUMENT_TEXT = 200  # characters of a group's signature text

# What a primitive that keeps a program off the fast path is called in the user's code.
_API_NAMES = {"debug_callback": "jax.debug.callback", "debug_print": "jax.debug.print",
              "io_callback": "jax.experimental.io_callback", "pure_callback": "jax.pure_callback",
              "callback": "a host callback"}


def probe() -> str | None:
    """None when slow calls can be watched on this JAX, else what is missing. Never raises."""
    try:
        from jax._src import config, core, pjit, stages
        from jax._src.interpreters import pxla
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot import JAX internals ({exc})"
    try:
        missing = [name for name, obj in (
            ("jax._src.pjit._infer_params", getattr(pjit, "_infer_params", None)),
            ("jax._src.pjit._run_python_pjit", getattr(pjit, "_run_python_pjit", None)),
            ("jax._src.pjit._get_fastpath_data", getattr(pjit, "_get_fastpath_data", None)),
            ("jax._src.pjit._cpp_pjit", getattr(pjit, "_cpp_pjit", None)),
            ("jax._src.stages.Compiled.call",
             stages.Compiled.__dict__.get("call") if hasattr(stages, "Compiled") else None),
            ("pxla.ExecuteReplicated", getattr(pxla, "ExecuteReplicated", None)),
            ("core.trace_state_clean", getattr(core, "trace_state_clean", None)),
            ("config.disable_jit", getattr(config, "disable_jit", None))) if obj is None]
        if missing:
            return "this JAX lacks " + ", ".join(missing)
        for function, params in ((pjit._run_python_pjit, _RUN_PARAMS),
                                 (pjit._get_fastpath_data, _FASTPATH_PARAMS)):
            found = list(inspect.signature(function).parameters)
            if found[:len(params)] != params:
                return f"jax._src.pjit.{function.__name__} has an unknown signature {found}"
        if not isinstance(stages.Compiled.__dict__["call"], staticmethod):
            return "jax._src.stages.Compiled.call is not a staticmethod"
        if not callable(pxla.ExecuteReplicated.__dict__.get("__call__")):
            return "jax._src.interpreters.pxla.ExecuteReplicated defines no __call__"
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot inspect JAX internals ({type(exc).__name__}: {exc})"
    return None


@dataclass(frozen=True, slots=True)
class Slow:
    """One group of slow calls as the hooks see it (made once per group, handed over at each of
    its calls): ``key`` tells groups apart within the process; ``fun`` is the jitted Python
    function where known, ``jaxpr_id`` the traced program's (to name it as its trace did)."""

    key: tuple[Any, ...]
    fun: Any
    name: str
    defined_at: str | None
    jaxpr_id: int | None
    reason: SlowReason
    detail: str
    line: str | None
    arguments: str
    kind: CallKind

    def function(self) -> Any:
        """The jitted Python function, while it is alive (None where unknown)."""
        return _deref(self.fun)


# on_slow(group, seconds of the call, the frame that called JAX, or None)
OnSlow = Callable[[Slow, float, "types.FrameType | None"], None]


# A dispatch of this thread, between ``_run_python_pjit`` and ``_get_fastpath_data``: (p,
# args_flat, fun, what _run_python_pjit returned, its start, whether it traced, lowered or
# compiled, the thread's execution seconds before it). A tuple: it is made at every slow call.
_Pending = tuple[Any, Any, Any, tuple[Any, ...], float, bool, float]


class SlowCallHooks:
    """Patches the functions of the module docstring; ``uninstall`` puts JAX's back.

    Args:
        on_slow: called at each slow call, on the calling thread.
        work: how many traces, lowerings and compiles the recorder saw on this thread so far.
        on_internal_error: what a hook caught (counted by the recorder); nothing raises.
    """

    def __init__(self, on_slow: OnSlow, work: Callable[[], int],
                 on_internal_error: Callable[[BaseException], None]) -> None:
        self._on_slow = on_slow
        self._work = work
        self._on_error = on_internal_error
        self._local = threading.local()
        self._originals: dict[str, Any] = {}
        self._active = False
        self.problems: list[str] = []  # said once each, in the recorder's warnings
        self._groups: dict[tuple[Any, ...], Slow] = {}
        # sticky fallbacks of jit: id(executable, or jaxpr without one) -> (its ref, the group)
        self._sticky: dict[int, tuple[Any, Slow]] = {}
        # AOT executables: id -> (its ref, its group where it has no C++ path, its jaxpr's ref)
        self._aot: dict[int, tuple[Any, Slow | None, Callable[[], Any]]] = {}
        self._entries: dict[tuple[Any, ...], Any] = {}  # fast-path entries made: key -> jaxpr ref
        # entries whose first Python dispatch had a per-call reason: key -> that call's seconds
        # (counted when the entry comes back, i.e. when the fast path refused it again)
        self._candidates: dict[tuple[Any, ...], float] = {}
        self._raised: set[tuple[Any, ...]] = set()  # entries whose first call raised
        self._lowerings: dict[int, tuple[Any, Any]] = {}  # id(computation) -> (its ref, jaxpr ref)
        self._codes: dict[types.CodeType, Any] = {}  # code of a jitted function -> the function
        self._started: dict[int, float] = {}  # frame id -> start, of calls under disable_jit
        self._lock = threading.Lock()
        self._host = [0.0]  # seconds the host callbacks ran so far, on every thread
        self._disable_jit: Any = None
        self._old_config_hooks: tuple[Any, Any] = (None, None)
        self._profiler = self._profiled  # one bound method: sys.getprofile() returns it

    # -- lifecycle ---------------------------------------------------------------------------
    def install(self) -> None:
        from jax._src import config, core, pjit, stages
        from jax._src.interpreters import pxla

        self._originals = {"_infer_params": pjit._infer_params,
                           "_run_python_pjit": pjit._run_python_pjit,
                           "_get_fastpath_data": pjit._get_fastpath_data,
                           "_cpp_pjit": pjit._cpp_pjit,
                           "Compiled.call": stages.Compiled.__dict__["call"],
                           "ExecuteReplicated.__call__": pxla.ExecuteReplicated.__dict__[
                               "__call__"]}
        self._active = True
        self._clean = core.trace_state_clean
        pjit._infer_params = self._infer_params
        pjit._run_python_pjit = self._run_python_pjit
        pjit._get_fastpath_data = self._get_fastpath_data
        pjit._cpp_pjit = self._cpp_pjit
        setattr(stages.Compiled, "call", staticmethod(_CompiledCall(self)))  # noqa: B010
        setattr(pxla.ExecuteReplicated, "__call__",  # noqa: B010
                _timed_execution(self._local, self._host,
                                 self._originals["ExecuteReplicated.__call__"]))
        for owner, name in _host_callbacks():
            original = getattr(owner, name)
            self._originals[f"host:{name}"] = original
            setattr(owner, name, _timed_host(self._host, self._lock, original))
        for name, mark in (("_add_tokens_to_inputs", _after), ("_handle_token_bufs", _before)):
            original = pxla.ExecuteReplicated.__dict__.get(name)
            if callable(original):
                self._originals[name] = original
                setattr(pxla.ExecuteReplicated, name, mark(self._local, original))
        state = self._disable_jit = config.disable_jit
        self._old_config_hooks = (state._update_global_hook, state._update_thread_local_hook)
        state._update_global_hook = self._global_set
        state._update_thread_local_hook = self._local_set
        self._profile(bool(state.value))

    def uninstall(self) -> list[str]:
        """Restore JAX (what someone patched over us meanwhile is left, and said); never
        raises."""
        if not self._active:
            return []
        self._active = False
        problems: list[str] = []
        try:
            from jax._src import pjit, stages

            for name in ("_infer_params", "_run_python_pjit", "_get_fastpath_data", "_cpp_pjit"):
                problem = restore(pjit, name, self._originals[name], self._is_ours)
                if problem:
                    problems.append(problem)
            current = stages.Compiled.__dict__.get("call")
            if isinstance(getattr(current, "__func__", None), _CompiledCall):
                setattr(stages.Compiled, "call", self._originals["Compiled.call"])  # noqa: B010
            else:
                problems.append("jax._src.stages.Compiled.call was replaced by someone else "
                                "during the run; left as it is")
            from jax._src.interpreters import pxla

            current = pxla.ExecuteReplicated.__dict__.get("__call__")
            if getattr(current, "_recompile_cli_local", None) is self._local:
                setattr(pxla.ExecuteReplicated, "__call__",  # noqa: B010
                        self._originals["ExecuteReplicated.__call__"])
            else:
                problems.append("jax._src.interpreters.pxla.ExecuteReplicated.__call__ was "
                                "replaced by someone else during the run; left as it is")
            for name in ("_add_tokens_to_inputs", "_handle_token_bufs"):
                original = self._originals.get(name)
                if original is None:
                    continue
                current = pxla.ExecuteReplicated.__dict__.get(name)
                if getattr(current, "_recompile_cli_local", None) is self._local:
                    setattr(pxla.ExecuteReplicated, name, original)
                else:
                    problems.append(f"jax._src.interpreters.pxla.ExecuteReplicated.{name} was "
                                    "replaced by someone else during the run; left as it is")
            for owner, name in _host_callbacks():
                original = self._originals.get(f"host:{name}")
                if original is None:
                    continue
                if getattr(getattr(owner, name), "_recompile_cli_host", None) is self._host:
                    setattr(owner, name, original)
                else:
                    problems.append(f"JAX's {name} was replaced by someone else during the "
                                    "run; left as it is")
            state = self._disable_jit
            if state is not None:
                if state._update_global_hook == self._global_set:
                    state._update_global_hook = self._old_config_hooks[0]
                if state._update_thread_local_hook == self._local_set:
                    state._update_thread_local_hook = self._old_config_hooks[1]
            self._profile(False)
        except Exception as exc:
            problems.append(f"could not restore JAX's dispatch functions ({exc})")
        return problems

    def _is_ours(self, current: Any) -> bool:
        return getattr(current, "__self__", None) is self

    def note_lowering(self, jaxpr: Any, computation: Any) -> None:
        """A jaxpr was lowered to ``computation`` (``hooks``' lowering hook): an AOT
        ``Compiled`` of it finds its program, to name its function and its callbacks' lines."""
        try:
            self._lowerings[id(computation)] = (weakref.ref(computation), weakref.ref(jaxpr))
        except TypeError:
            pass

    def learn(self, fun: Any) -> None:
        """Remember a jitted function's code, so that its calls under ``jax.disable_jit`` are
        recognised."""
        code = getattr(stack.python_function(fun), "__code__", None)
        if isinstance(code, types.CodeType) and _deref(self._codes.get(code)) is None:
            self._codes[code] = _ref(fun)  # (a function made again from that code replaces it)

    # -- the jit path ------------------------------------------------------------------------
    def _infer_params(self, *args: Any, **kwargs: Any) -> Any:
        self._local.start = time.perf_counter()
        return self._originals["_infer_params"](*args, **kwargs)

    def _cpp_pjit(self, fun: Any, *args: Any, **kwargs: Any) -> Any:
        made = self._originals["_cpp_pjit"](fun, *args, **kwargs)
        if self._active:
            try:
                self.learn(fun)
            except Exception as exc:
                self._report(exc)
        return made

    def _run_python_pjit(self, p: Any, args_flat: Any, fun: Any, args: Any, kwargs: Any,
                         *rest: Any) -> Any:
        original = self._originals["_run_python_pjit"]
        local = self._local
        local.pending = None
        if not self._active:
            return original(p, args_flat, fun, args, kwargs, *rest)
        start = getattr(local, "start", None)
        local.start = None
        try:
            clean = self._clean()
            work = self._work() if clean else 0
        except Exception as exc:
            self._report(exc)
            return original(p, args_flat, fun, args, kwargs, *rest)
        if start is None:
            start = time.perf_counter()
        executed = getattr(local, "executed", 0.0)
        try:
            result = original(p, args_flat, fun, args, kwargs, *rest)
        except BaseException:
            if clean:
                self._first_raised(p, args_flat)
            raise
        if clean:
            try:
                local.pending = (p, args_flat, fun, result, start, self._work() != work,
                                 executed)
            except Exception as exc:
                self._report(exc)
        return result

    def _get_fastpath_data(self, executable: Any, out_tree: Any, args_flat: Any, out_flat: Any,
                           *rest: Any, **kwargs: Any) -> Any:
        data = self._originals["_get_fastpath_data"](executable, out_tree, args_flat, out_flat,
                                                     *rest, **kwargs)
        local = self._local
        pending = getattr(local, "pending", None)
        if pending is not None and pending[3][1] is out_flat:  # this dispatch's end
            local.pending = None
            seconds = _dispatch_seconds(local, pending[4], pending[6])
            earlier = None
            try:
                group, earlier = self._dispatched(pending, data is None, seconds)
            except Exception as exc:
                self._report(exc)
                group = None
            if group is not None:  # outside the try: the guard may raise into the call
                frame = sys._getframe(1)
                if earlier is not None:  # the entry's first call, refused as this one is
                    self._on_slow(group, earlier, frame)
                self._on_slow(group, seconds, frame)
        return data

    def _dispatched(self, pending: _Pending, fell_back: bool, seconds: float
                    ) -> tuple[Slow | None, float | None]:
        """The group of a dispatch that traced, lowered and compiled nothing (None for a
        cache miss or a call that made a new fast-path entry), and the seconds of the entry's
        first call where it is counted only now (a per-call reason, confirmed)."""
        p, _, fun, result, _, worked, _ = pending
        _, out_flat, _, args_flat, jaxpr, executable, pgle, _ = result[:8]
        if worked:  # a cache miss (traced, lowered or compiled): not a slow call
            self._entries[_entry_key(jaxpr, args_flat)] = _ref(jaxpr)
            return None, None
        if fell_back:
            program = executable if executable is not None else jaxpr
            known = self._sticky.get(id(program))
            if known is not None and known[0]() is program:  # (executables are weak-referable)
                return known[1], None
            reason, detail, line = _sticky(executable, jaxpr, out_flat, pgle)
            group = self._group(fun, p, jaxpr, reason, detail, line, CallKind.JIT)
            self._sticky[id(program)] = (_weak(program), group)
            return group, None
        found, earlier = self._refused(_entry_key(jaxpr, args_flat), jaxpr, args_flat, seconds)
        if found is None:
            return None, None
        reason, detail = _named(found, jaxpr, len(args_flat))
        return self._group(fun, p, jaxpr, reason, detail, None, CallKind.JIT), earlier

    def _refused(self, key: tuple[Any, ...], program: Any, args_flat: Any, seconds: float
                 ) -> tuple[tuple[SlowReason, str, int] | None, float | None]:
        """Why a call that came to Python with fast-path data was refused, and the seconds of
        its entry's first call where that is counted only now; (None, None) for the first
        call of a new entry. That first call is no slow call unless the entry comes back: a
        new entry (a numpy array or a Python scalar where a JAX array was passed before)
        serves later calls fast, whatever ``_per_call`` says of its leaves."""
        known = self._entries.get(key)
        if known is None or _deref(known) is not program:  # the entry's first call
            self._entries[key] = _ref(program)
            if _per_call(args_flat) is not None:
                self._candidates[key] = seconds
            else:
                self._candidates.pop(key, None)
            return None, None
        earlier = self._candidates.pop(key, None)
        return _per_call(args_flat) or self._lost(key), earlier

    def _first_raised(self, p: Any, args_flat: Any) -> None:
        try:
            jaxpr = p.params["jaxpr"]
            key = _entry_key(jaxpr, args_flat)
            if key not in self._entries:
                self._raised.add(key)
                self._entries[key] = _ref(jaxpr)
        except Exception as exc:
            self._report(exc)

    def _lost(self, key: tuple[Any, ...]) -> tuple[SlowReason, str, int]:
        """Why an entry made before came back to Python with fast-path data."""
        if key in self._raised:
            return (SlowReason.FIRST_CALL_RAISED, "the first call of this signature raised, and "
                    "JAX keeps its entry in Python dispatch", -1)
        full = _full_caches()
        if full:
            return SlowReason.EVICTION, full, -1
        return (SlowReason.UNKNOWN, "its fast-path entry was lost while the C++ caches are not "
                "full", -1)

    def _group(self, fun: Any, p: Any, jaxpr: Any, reason: SlowReason, detail: str,
               line: str | None, kind: CallKind, name: str | None = None) -> Slow:
        key = (id(jaxpr) if jaxpr is not None else id(fun), reason, detail, kind)
        group = self._groups.get(key)
        if group is not None and _alive(group, fun):
            return group
        program = getattr(jaxpr, "jaxpr", None)
        dbg = getattr(program, "debug_info", None)
        fallback = name or (getattr(p, "params", {}).get("name") if p is not None else None)
        found_name, defined_at = name_and_location(dbg, fallback=fallback or "?")
        group = Slow(key=key, fun=_ref(fun) if fun is not None else None, name=found_name,
                     defined_at=defined_at, jaxpr_id=id(jaxpr) if jaxpr is not None else None,
                     reason=reason, detail=detail, line=line, arguments=_arguments(jaxpr, dbg),
                     kind=kind)
        with self._lock:
            self._groups[key] = group
        return group

    # -- the AOT path ------------------------------------------------------------------------
    def compiled_called(self, params: Any, result: Any, seconds: float = 0.0
                        ) -> tuple[Slow | None, float | None]:
        """The group of a ``Compiled.call(params, ...)`` that returned ``result`` (outs,
        out_flat, args_flat) in ``seconds``, None when it was no slow call; and the seconds of
        its entry's first call where that is counted only now (``_refused``)."""
        if not self._active or not self._clean():
            return None, None
        executable = params.executable
        known = self._aot.get(id(executable))
        if known is None or known[0]() is not executable:
            known = self._aot[id(executable)] = self._why_aot(executable)
        _, group, jaxpr_ref = known
        if group is not None:  # it has no C++ path: every call is slow
            return group, None
        jaxpr = jaxpr_ref()
        out_flat, args_flat = result[1], result[2]  # it has one: this call missed it
        found, earlier = _aot_sticky(executable, out_flat), None
        if found is None:
            found, earlier = self._refused(_entry_key(executable, args_flat), executable,
                                           args_flat, seconds)
            if found is None:
                return None, None
        reason, detail = _named(found, jaxpr, len(args_flat))
        return self._aot_group(executable, jaxpr, reason, detail, None), earlier

    def _why_aot(self, executable: Any) -> tuple[Any, Slow | None, Callable[[], Any]]:
        """(a ref to an AOT executable, the group of its calls when it has no C++ path
        (``create_cpp_call``'s clauses) else None, a ref to its jaxpr)."""
        from jax._src.interpreters import pxla

        jaxpr = self._jaxpr_of(executable)
        call = getattr(executable, "unsafe_call", None)
        group = None
        if not isinstance(call, pxla.ExecuteReplicated):
            group = self._aot_group(executable, jaxpr, SlowReason.UNKNOWN,
                                    "its executable is not a replicated one", None)
        elif call.has_host_callbacks:
            detail, line = _find(jaxpr, lambda eqn: eqn.primitive.name in _API_NAMES
                                 or "callback" in eqn.primitive.name, "a host callback")
            group = self._aot_group(executable, jaxpr, SlowReason.AOT_HOST_CALLBACK, detail,
                                    line)
        elif call.has_unordered_effects:
            detail, line = _find(jaxpr, _unordered_predicate(call), "an effect")
            group = self._aot_group(executable, jaxpr, SlowReason.UNORDERED_EFFECT, detail,
                                    line)
        return _weak(executable), group, _weak(jaxpr) if jaxpr is not None else lambda: None

    def _aot_group(self, executable: Any, jaxpr: Any, reason: SlowReason, detail: str,
                   line: str | None) -> Slow:
        name = getattr(getattr(executable, "unsafe_call", None), "name", None)
        return self._group(None if jaxpr is not None else executable, None, jaxpr, reason,
                           detail, line, CallKind.AOT, _bare(name))

    def _jaxpr_of(self, executable: Any) -> Any:
        for computation_ref, jaxpr_ref in list(self._lowerings.values()):
            computation = computation_ref()
            if computation is not None and getattr(computation, "_executable", None) is executable:
                return jaxpr_ref()
        return None

    # -- jax.disable_jit ---------------------------------------------------------------------
    def _global_set(self, value: Any) -> None:
        """``jax_disable_jit``'s config hook for ``jax.config.update``."""
        self._disable_jit_set(self._old_config_hooks[0], value)

    def _local_set(self, value: Any) -> None:
        """``jax_disable_jit``'s config hook for ``with jax.disable_jit(...)``."""
        self._disable_jit_set(self._old_config_hooks[1], value)

    def _disable_jit_set(self, old: Any, value: Any) -> None:
        """The profile function is on in this thread while ``jax_disable_jit`` is; a hook that
        was there before is called first."""
        try:
            if callable(old):
                old(value)
        finally:
            try:
                if self._active and self._disable_jit is not None:
                    self._profile(bool(self._disable_jit.value))
            except Exception as exc:
                self._report(exc)

    def _profile(self, on: bool) -> None:
        current = sys.getprofile()
        if on and current is None:
            sys.setprofile(self._profiler)
        elif on and current is not self._profiler:
            problem = ("calls under jax.disable_jit were not counted: another profiler holds "
                       "sys.setprofile")
            if problem not in self.problems:
                self.problems.append(problem)
        elif not on and current is self._profiler:
            sys.setprofile(None)

    def _profiled(self, frame: types.FrameType, event: str, arg: Any) -> None:
        """The profile function while ``jax_disable_jit`` is on: each run of a jitted function's
        code is a slow call (JAX ran it op by op)."""
        if event == "call":
            if frame.f_code in self._codes:
                self._started[id(frame)] = time.perf_counter()
        elif event == "return" and frame.f_code in self._codes:
            start = self._started.pop(id(frame), None)
            if start is None:
                return
            group = None
            try:
                group = self._under_disable_jit(frame.f_code)
            except Exception as exc:
                self._report(exc)
            if group is not None:  # the guard may raise into the call
                self._on_slow(group, time.perf_counter() - start, frame.f_back)

    def _under_disable_jit(self, code: types.CodeType) -> Slow | None:
        if self._disable_jit is None or not self._disable_jit.value:
            return None
        fun = _deref(self._codes[code])
        if fun is None:  # the function object learned is gone; the code is still the function
            fun = code
        name = getattr(stack.python_function(fun), "__name__", None) or code.co_name
        group = self._group(fun, None, None, SlowReason.DISABLE_JIT, "jax.disable_jit is on",
                            None, CallKind.JIT, name)
        if group.defined_at is None:
            group = _located(group, code)
            with self._lock:
                self._groups[group.key] = group
        return group

    def _report(self, exc: BaseException) -> None:
        try:
            self._on_error(exc)
        except Exception:
            pass


class _CompiledCall:
    """Stands in for ``stages.Compiled.call`` (a staticmethod): JAX's, then the classification."""

    def __init__(self, hooks: SlowCallHooks) -> None:
        self._hooks = hooks
        self._original = hooks._originals["Compiled.call"].__func__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hooks = self._hooks
        local = hooks._local
        start = time.perf_counter()
        executed = getattr(local, "executed", 0.0)
        result = self._original(*args, **kwargs)
        if hooks._active and args:
            seconds = _dispatch_seconds(local, start, executed)
            group = earlier = None
            try:
                group, earlier = hooks.compiled_called(args[0], result, seconds)
            except Exception as exc:
                hooks._report(exc)
            if group is not None:  # outside the try: the guard may raise into the call
                frame = sys._getframe(1)
                if earlier is not None:
                    hooks._on_slow(group, earlier, frame)
                hooks._on_slow(group, seconds, frame)
        return result


def _timed_execution(local: threading.local, host: list[float], original: Callable[..., Any]
                     ) -> Callable[..., Any]:
    """``ExecuteReplicated.__call__``, adding the seconds of each execution to ``local``'s
    ``executed`` (this thread's), less those of the host callbacks that ran meanwhile
    (``host[0]``, ``_timed_host``'s): what a slow call spends running its program, not
    dispatching it nor calling back. The execution is XLA's ``execute_sharded`` where the token
    methods marked it (``local.marks``: its start and end), else the whole call. A few clock
    reads and additions are added to the call."""

    def __call__(self: Any, *args: Any) -> Any:
        start, called = time.perf_counter(), host[0]
        outer = getattr(local, "marks", None)  # an execution this one runs inside, if any
        marks: list[float | None] = [None, None]
        local.marks = marks
        try:
            return original(self, *args)
        finally:
            end = time.perf_counter()
            local.marks = outer
            first, last = marks
            if first is not None and last is not None and start <= first <= last <= end:
                start, end = first, last
            ran = end - start - max(host[0] - called, 0.0)
            local.executed = getattr(local, "executed", 0.0) + max(ran, 0.0)

    __call__._recompile_cli_local = local  # type: ignore[attr-defined]
    return __call__


def _after(local: threading.local, original: Callable[..., Any]) -> Callable[..., Any]:
    """``ExecuteReplicated._add_tokens_to_inputs``: XLA's execution starts when it returns."""

    def add_tokens(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        marks = getattr(local, "marks", None)
        if marks is not None:
            marks[0] = time.perf_counter()
        return result

    add_tokens._recompile_cli_local = local  # type: ignore[attr-defined]
    return add_tokens


def _before(local: threading.local, original: Callable[..., Any]) -> Callable[..., Any]:
    """``ExecuteReplicated._handle_token_bufs``: XLA's execution has ended when it starts."""

    def handle_tokens(self: Any, *args: Any, **kwargs: Any) -> Any:
        marks = getattr(local, "marks", None)
        if marks is not None:
            marks[1] = time.perf_counter()
        return original(self, *args, **kwargs)

    handle_tokens._recompile_cli_local = local  # type: ignore[attr-defined]
    return handle_tokens


def _host_callbacks() -> list[tuple[Any, str]]:
    """(owner, attribute) of the host sides of JAX's callbacks that this JAX has and that are
    looked up when XLA calls them (``debug_callback_p.impl``; ``callback.io_callback_impl``).
    Not ``pure_callback``'s: a jitted function with one keeps the fast path, and nothing of
    ours runs on a fast call."""
    found: list[tuple[Any, str]] = []
    try:
        from jax._src import callback, debugging

        primitive = getattr(debugging, "debug_callback_p", None)
        if callable(getattr(primitive, "impl", None)):
            found.append((primitive, "impl"))
        if callable(getattr(callback, "io_callback_impl", None)):
            found.append((callback, "io_callback_impl"))
    except Exception:  # pragma: no cover - depends on the installed JAX
        pass
    return found


def _timed_host(total: list[float], lock: threading.Lock, original: Callable[..., Any]
                ) -> Callable[..., Any]:
    """A host callback's side, adding its seconds to ``total[0]`` (any thread)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            with lock:
                total[0] += seconds

    run._recompile_cli_host = total  # type: ignore[attr-defined]
    return run


def _dispatch_seconds(local: threading.local, start: float, executed: float) -> float:
    """The seconds since ``start`` of this thread's dispatch, less the executions it ran
    (``executed``: the thread's execution seconds at ``start``)."""
    ran = getattr(local, "executed", 0.0) - executed
    return max(time.perf_counter() - start - ran, 0.0)


# -- reasons -----------------------------------------------------------------------------------
def _sticky(executable: Any, jaxpr: Any, out_flat: Any, pgle: Any
            ) -> tuple[SlowReason, str, str | None]:
    """Which clause of ``pjit._get_fastpath_data`` returned None, in its order (JAX 0.10.2 and
    0.12.0.1), with the line of the user's code responsible where there is one."""
    from jax._src import config, pjit
    from jax._src.interpreters import pxla
    from jax._src.lib import xla_client as xc  # type: ignore[attr-defined]

    if executable is None:
        if config.debug_key_reuse.value:
            return SlowReason.DEBUG_KEY_REUSE, "jax_debug_key_reuse is on", None
        return (SlowReason.UNKNOWN, "JAX made no executable for the call (hi-typed inputs or "
                "outputs)", None)
    call = getattr(executable, "unsafe_call", None)
    if not isinstance(executable, pxla.MeshExecutable) or not isinstance(
            call, pxla.ExecuteReplicated):
        return SlowReason.UNKNOWN, "its executable is not a replicated one", None
    if call.ordered_effects:
        ordered = set(call.ordered_effects)
        detail, line = _find(jaxpr, lambda eqn: any(e in ordered for e in eqn.effects),
                             "an ordered effect")
        return SlowReason.ORDERED_EFFECT, detail, line
    if call.has_unordered_effects:
        detail, line = _find(jaxpr, _unordered_predicate(call), "an effect")
        return SlowReason.UNORDERED_EFFECT, detail, line
    ref_effect = getattr(pjit, "RefEffect", None)
    effects = getattr(jaxpr, "effects", ())
    if ref_effect is not None and any(isinstance(e, ref_effect) for e in effects):
        detail, line = _find(jaxpr, lambda eqn: any(isinstance(e, ref_effect)
                                                    for e in eqn.effects), "a mutable ref")
        return SlowReason.REF_EFFECT, detail, line
    if pjit._need_to_rebuild_with_fdo(pgle):
        runs = config.pgle_profiling_runs.value
        return SlowReason.PGLE, f"jax_pgle_profiling_runs={runs}: profiling runs pending", None
    if config.no_execution.value:
        return SlowReason.NO_EXECUTION, "jax_no_execution is set", None
    kinds = sorted({type(x).__name__ for x in out_flat if not isinstance(x, xc.ArrayImpl)})
    if kinds:
        return SlowReason.NON_ARRAY_OUTPUT, "outputs of type " + ", ".join(kinds), None
    return SlowReason.UNKNOWN, "JAX gave no fast-path data for a reason not known here", None


def _aot_sticky(executable: Any, out_flat: Any) -> tuple[SlowReason, str, int] | None:
    """Why the C++ path of an AOT ``Compiled`` is not used after a miss
    (``MeshExecutable.create_cpp_call``'s ``use_fastpath``), or None."""
    from jax._src.lib import xla_client as xc  # type: ignore[attr-defined]

    if getattr(executable, "_mut", None):
        return SlowReason.REF_EFFECT, "it takes or returns mutable refs", -1
    kinds = sorted({type(x).__name__ for x in out_flat if not isinstance(x, xc.ArrayImpl)})
    if kinds:
        return SlowReason.NON_ARRAY_OUTPUT, "outputs of type " + ", ".join(kinds), -1
    return None


def _per_call(args_flat: Any) -> tuple[SlowReason, str, int] | None:
    """A reason the C++ path refuses every call with these arguments (``pjit.cc``: an
    uncommitted array on several devices; a leaf that is not an array or scalar), the detail
    (``{}`` stands for the leaf's name) and the leaf's index; None when there is none."""
    for i, arg in enumerate(args_flat):
        found = _refused_leaf(arg)
        if found is not None:
            return found[0], found[1], i
    return None


def _refused_leaf(arg: Any, depth: int = 0) -> tuple[SlowReason, str] | None:
    """Why the C++ path refuses the leaf ``arg``, or None. A type registered in JAX's dispatch
    registry (a typed PRNG key, ``jax.random.key``) is flattened by the C++ path to its
    arrays, as ``pjit.cc`` does: its arrays are checked, not its type."""
    import numpy as np
    from jax._src.lib import xla_client as xc  # type: ignore[attr-defined]

    if isinstance(arg, xc.ArrayImpl):
        if not arg._committed and len(arg.sharding.device_set) > 1:
            return (SlowReason.UNCOMMITTED_MULTIDEVICE, "`{}` is an uncommitted array on "
                    f"{len(arg.sharding.device_set)} devices")
        return None
    if isinstance(arg, (np.ndarray, np.generic, bool, int, float, complex)):
        return None
    if depth < 4:
        try:
            from jax._src import tree_util

            leaves = tree_util.dispatch_registry.flatten(arg)[0]
        except Exception:
            leaves = [arg]
        if not (len(leaves) == 1 and leaves[0] is arg):
            for leaf in leaves:
                found = _refused_leaf(leaf, depth + 1)
                if found is not None:
                    return found
            return None
    return SlowReason.ARG_TYPE, f"`{{}}` is a {type(arg).__name__}"


def _named(found: tuple[SlowReason, str, int], jaxpr: Any, count: int
           ) -> tuple[SlowReason, str]:
    """``found``'s reason and detail, its leaf named as JAX names arguments (``batch['x']``)."""
    reason, detail, index = found
    if index < 0:
        return reason, detail
    names = arg_names(getattr(getattr(jaxpr, "jaxpr", None), "debug_info", None), count)
    return reason, detail.replace("{}", names[index] if index < len(names) else f"args[{index}]")


def _full_caches() -> str:
    """Which of JAX's C++ jit caches is full ('' when none is): a full one evicts entries."""
    from jax._src import config, pjit

    caches = [("JAX's C++ jit cache", getattr(pjit, "_cpp_pjit_cache_fun_only", None)),
              ("JAX's C++ jit cache", getattr(pjit, "_cpp_pjit_cache_explicit_attributes", None)),
              ("the jax_jit_cpp_cache_obj cache",
               getattr(getattr(config, "jax_jit_cpp_cache_obj", None), "value", None))]
    for name, cache in caches:
        try:
            if cache is not None and cache.size() >= cache.capacity():
                return (f"{name} is full ({cache.capacity():,} entries shared by every jitted "
                        "function) and evicted its entry")
        except Exception:
            continue
    return ""


def _unordered_predicate(call: Any) -> Callable[[Any], bool]:
    ordered = set(getattr(call, "ordered_effects", ()) or ())
    from jax._src import pjit

    ref_effect = getattr(pjit, "RefEffect", ())

    def unordered(eqn: Any) -> bool:
        return any(e not in ordered and not isinstance(e, ref_effect) for e in eqn.effects)

    return unordered


def _find(jaxpr: Any, matches: Callable[[Any], bool], what: str, limit: int = 100_000
          ) -> tuple[str, str | None]:
    """(what holds it: ``jax.debug.callback``, the user's line of it) for the innermost
    equation of ``jaxpr`` (bodies included) that ``matches``; ``what`` and None when none
    does. Walks at most ``limit`` equations."""
    if jaxpr is None:
        return what, None
    from jax._src import core

    budget = [limit]
    visited: set[int] = set()

    def walk(program: Any, caller: str | None) -> tuple[Any, str | None] | None:
        for eqn in program.eqns:
            budget[0] -= 1
            if budget[0] < 0:
                return None
            where = user_location(eqn.source_info.traceback) or caller
            subs = [s for s in core.jaxprs_in_params(eqn.params) if id(s) not in visited]
            visited.update(id(s) for s in subs)
            for sub in subs:
                found = walk(sub, where)
                if found is not None:
                    return found
            if matches(eqn):
                return eqn, where
        return None

    found = walk(getattr(jaxpr, "jaxpr", jaxpr), None)
    if found is None:
        return what, None
    eqn, where = found
    name = eqn.primitive.name
    if name == "debug_print" and eqn.params.get("ordered"):
        return "jax.debug.print(..., ordered=True)", where
    if name == "io_callback" and eqn.params.get("ordered"):
        return "jax.experimental.io_callback(..., ordered=True)", where
    return _API_NAMES.get(name, f"the primitive {name}"), where


# -- keys and names ----------------------------------------------------------------------------
def _entry_key(program: Any, args_flat: Any) -> tuple[Any, ...]:
    """What tells one C++ cache entry of a program from another (close to jaxlib's
    ``CallSignature``: the program fixes avals, statics, tree and context; the leaves' kinds and
    placements remain)."""
    return (id(program), tuple((type(a), getattr(a, "_committed", None),
                                getattr(a, "sharding", None)) for a in args_flat))


def _arguments(jaxpr: Any, dbg: Any) -> str:
    """``x: f32[10], y: i32[]`` from a program's input avals (shortened)."""
    avals = getattr(jaxpr, "in_avals", None)
    if not avals:
        return ""
    names = arg_names(dbg, len(avals))
    parts = []
    for i, aval in enumerate(avals):
        try:
            short = aval.str_short(short_dtypes=True)
        except Exception:
            short = type(aval).__name__
        parts.append(f"{names[i]}: {short}")
    text = ", ".join(parts)
    if len(text) > MAX_ARGUMENT_TEXT:
        text = text[:MAX_ARGUMENT_TEXT - 3].rsplit(", ", 1)[0] + f", ... ({len(avals):,} leaves)"
    return text


def _bare(name: str | None) -> str | None:
    if name and name.startswith("jit(") and name.endswith(")"):
        return name[4:-1]
    return name


def _located(group: Slow, code: types.CodeType) -> Slow:
    from dataclasses import replace

    return replace(group, defined_at=f"{code.co_filename}:{code.co_firstlineno}")


def _ref(value: Any) -> Any:
    try:
        return weakref.ref(value)
    except TypeError:
        return value


def _weak(value: Any) -> Callable[[], Any]:
    """A weak reference, or a function returning ``value`` where it takes none."""
    try:
        return weakref.ref(value)
    except TypeError:
        return lambda: value


def _deref(value: Any) -> Any:
    return value() if isinstance(value, weakref.ref) else value


def _alive(group: Slow, fun: Any) -> bool:
    return group.fun is None or fun is None or _deref(group.fun) is fun


# -- the fast-path baseline --------------------------------------------------------------------
def fast_call_seconds() -> float | None:
    """The seconds of one cached fast-path call, where they can be had without compiling
    anything in the user's process: never, so None. Timing one needs a jitted function of ours,
    compiled in the user's process: an extra ``Compiling`` line in JAX's log, an extra compile
    for the user's ``jax.monitoring`` listeners and persistent cache. A slow call's seconds are
    its Python dispatch outside the program's execution (``_dispatch_seconds``), of which the
    fast path would still spend a few microseconds: they are not subtracted."""
    return None
