"""The only module that touches JAX's private internals (``jax._src``).

It patches two functions on JAX's cache-miss path, both checked on JAX 0.10.2 and 0.12.0:

* ``jax._src.pjit._trace_for_jit(fun, ji, ctx_mesh, dbg, avals, args, kwargs)`` runs on every miss
  of jit's parameter cache, nested jits included (JAX >= 0.9; older versions used
  ``_create_pjit_jaxpr`` and are not hooked: ``probe()`` says so and the recorder runs in
  public-only mode there). Whether Python really re-traced is read from the miss counter of
  ``partial_eval.trace_to_jaxpr``'s cache.
* ``jax._src.pjit._pjit_lower`` (a weakref LRU cache) runs before every lowering; its cache keys
  tell what changed when a function is compiled again without a re-trace (sharding, donation).

Cache hits never reach either function, so nothing here runs on the hot path. Everything is
feature-detected: ``probe()`` says why the hooks cannot be used, and the recorder then falls back
to the public ``jax.monitoring`` events. Observers are called inside ``try``: a hook never raises
into user code.

It also registers and unregisters the ``jax.monitoring`` listeners (``register_listener`` /
``unregister_listener``), because the listener API differs across the supported versions
(JAX 0.4.30 to 0.12): unregistering is public only since 0.8, and before 0.10 the trace duration
event also fires for nested jits (and before ~0.6 without ``fun_name``), which the listener
adapter evens out so that every version reports the same top-level traces.
"""

from __future__ import annotations

import enum
import inspect
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from recompile_cli.capture import signatures
from recompile_cli.capture.signatures import LowerInfo, TraceInfo

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # recompile_cli/
_EXCLUDED = False


def jax_version() -> tuple[int, ...]:
    """The installed JAX version as a tuple of ints, e.g. ``(0, 10, 2)`` (``()`` if unknown)."""
    try:
        import jax

        text = jax.__version__
    except Exception:  # pragma: no cover - depends on the installed JAX
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def probe() -> str | None:
    """None when the private hooks can be installed, else the reason they cannot.

    Never raises: an unexpected JAX is a reason, not a crash.
    """
    try:
        return _probe()
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot inspect JAX internals ({type(exc).__name__}: {exc})"


def _probe() -> str | None:
    try:
        from jax._src import config, pjit
        from jax._src.interpreters import partial_eval as pe
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot import JAX internals ({exc})"
    trace_cache = getattr(pe, "trace_to_jaxpr", None)
    needed = {
        "jax._src.pjit._trace_for_jit": getattr(pjit, "_trace_for_jit", None),
        "jax._src.pjit._pjit_lower.cache_keys": getattr(getattr(pjit, "_pjit_lower", None),
                                                        "cache_keys", None),
        "partial_eval.trace_to_jaxpr.cache_info": getattr(trace_cache, "cache_info", None),
        "config.trace_context_names": getattr(config, "trace_context_names", None),
    }
    missing = [name for name, obj in needed.items() if obj is None]
    if missing:
        version = ".".join(map(str, jax_version())) or "?"
        return (f"JAX {version} lacks " + ", ".join(missing)
                + "; the private hooks need JAX >= 0.9")
    params = list(inspect.signature(pjit._trace_for_jit).parameters)
    if params[:7] != ["fun", "ji", "ctx_mesh", "dbg", "avals", "args", "kwargs"]:
        return f"jax._src.pjit._trace_for_jit has an unknown signature {params}"
    return None


# -- jax.monitoring listeners -------------------------------------------------------------------
# kind -> (public register, public unregister (JAX >= 0.8), private unregister in
# jax._src.monitoring (JAX < 0.8, "for testing only"), the private list of listeners)
_LISTENER_API = {
    "event": ("register_event_listener", "unregister_event_listener",
              "_unregister_event_listener_by_callback", "_event_listeners"),
    "event_duration": ("register_event_duration_secs_listener",
                       "unregister_event_duration_listener",
                       "_unregister_event_duration_listener_by_callback",
                       "_event_duration_secs_listeners"),
}
_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
# What register_listener handed to JAX for (kind, callback): the callback or its adapter.
_registered: dict[tuple[str, Any], Any] = {}
_registered_lock = threading.Lock()


def register_listener(kind: str, callback: Callable[..., None]) -> None:
    """Register ``callback`` as a ``jax.monitoring`` listener of ``kind`` ("event" or
    "event_duration"), evening out what older JAX versions send (see ``_LegacyDurations``)."""
    from jax import monitoring

    register = getattr(monitoring, _LISTENER_API[kind][0])
    listener: Any = callback
    if kind == "event_duration" and jax_version() < (0, 10):
        listener = _LegacyDurations(callback)
    with _registered_lock:
        _registered[(kind, callback)] = listener
    register(listener)


def unregister_listener(kind: str, callback: Callable[..., None]) -> bool:
    """Remove a listener registered by ``register_listener`` (or registered directly).

    Never raises. Returns False when the listener was not registered any more (e.g. the program
    called the public ``jax.monitoring.clear_event_listeners()``), True when it was removed.
    Tries the public ``unregister_*_listener`` (JAX >= 0.8), then the private
    ``_unregister_*_listener_by_callback``, then removes it from JAX's private list.
    """
    with _registered_lock:
        listener = _registered.pop((kind, callback), callback)
    try:
        _, public_name, private_name, list_name = _LISTENER_API[kind]
        from jax import monitoring
        from jax._src import monitoring as src
    except Exception:
        return False
    listeners = getattr(src, list_name, None)
    if isinstance(listeners, list) and not _contains(listeners, listener):
        return False  # already gone: nothing to remove, nothing to raise
    for remove in (getattr(monitoring, public_name, None), getattr(src, public_name, None),
                   getattr(src, private_name, None)):
        if remove is None:
            continue
        try:
            remove(listener)
            return True
        except Exception:  # AssertionError when absent (ValueError under python -O)
            continue
    try:
        listeners = getattr(src, list_name)  # read again: clear_event_listeners rebinds it
        while _contains(listeners, listener):
            listeners.remove(listener)
        return True
    except Exception:
        return False


def _contains(listeners: list[Any], listener: Any) -> bool:
    try:
        return any(item is listener or item == listener for item in listeners)
    except Exception:
        return False


class _LegacyDurations:
    """Adapts the duration events of JAX < 0.10 to what JAX 0.10+ sends.

    * Before 0.10 the trace event fires for every jit traced, nested ones (``jnp`` internals
      traced inside the user's function) included; 0.10+ only sends top-level traces. Nested
      ones are dropped here: they are recognised by an enclosing trace of jit on the stack.
    * Before ~0.6 the events carry no ``fun_name``; it is read from JAX's timing context
      manager on the stack (``dispatch.log_elapsed_time(fmt, fun_name, event)``).

    Runs only on cache misses (JAX sends no event on a hit), and never raises.
    """

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[..., None]) -> None:
        self.callback = callback

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _LegacyDurations) and other.callback == self.callback

    def __hash__(self) -> int:
        return hash(self.callback)

    def __call__(self, event: str, duration: float, **kwargs: Any) -> None:
        try:
            if event == _TRACE_EVENT and _enclosing_jit_traces(sys._getframe(1)) > 1:
                return  # a nested jit: JAX 0.10+ sends no event for it
            if "fun_name" not in kwargs and event.startswith("/jax/core/compile/"):
                name = _timed_fun_name(sys._getframe(1))
                if name is not None:
                    kwargs["fun_name"] = name
        except Exception:
            pass
        self.callback(event, duration, **kwargs)


# The functions that trace a jit's Python function in JAX 0.4.30-0.9 (module jax/_src/pjit.py).
_JIT_TRACE_FRAMES = frozenset({"_create_pjit_jaxpr", "_trace_for_jit"})


def _enclosing_jit_traces(frame: Any) -> int:
    count = 0
    while frame is not None:
        code = frame.f_code
        if code.co_name in _JIT_TRACE_FRAMES and code.co_filename.endswith("pjit.py"):
            count += 1
        frame = frame.f_back
    return count


def _timed_fun_name(frame: Any, depth: int = 8) -> str | None:
    """``fun_name`` of the ``dispatch.log_elapsed_time`` that is sending the event."""
    while frame is not None and depth:
        code = frame.f_code
        if code.co_filename.endswith("dispatch.py"):
            name = frame.f_locals.get("fun_name")
            if name is None:
                name = getattr(frame.f_locals.get("self"), "fun_name", None)
            if name is not None:
                return str(name)
        frame, depth = frame.f_back, depth - 1
    return None


# JAX's files between a jitted function's caller and its trace: the jit call path (C++
# dispatch -> pjit.cache_miss -> _infer_params), AOT .lower()/.trace(), and the function
# transformations (vmap, grad, eval_shape) that call a jitted function for the user (read on
# JAX 0.10.2; a file missing from the list only makes such a caller not the user's).
JIT_CALL_PATH_FILES = frozenset({"pjit.py", "traceback_util.py", "stages.py", "api.py",
                                 "api_util.py", "linear_util.py", "batching.py", "ad.py"})


def trace_context() -> dict[str, str]:
    """The current tracing context (config values and context managers) as name -> text,
    values in full (``signatures.full_repr``).

    The context rarely changes between traces: when the values equal the last call's (the
    comparison JAX's own cache keys make; the same objects, almost always), the last answer is
    returned (the same dictionary: callers must not change it), so a trace pays one tuple
    comparison instead of ~50 ``repr`` calls."""
    from jax._src import config

    names, values = config.trace_context_names(), config.trace_context()
    last = _LAST_CONTEXT
    try:
        if last is not None and last[1] == values and last[0] == names:
            return last[2]
    except Exception:  # a value whose == raises: describe it afresh
        pass
    text = {name: _context_text(value) for name, value in zip(names, values, strict=False)}
    _remember_context(names, tuple(values), text)
    return text


def _context_text(value: Any) -> str:
    """A context value as the user sets it: an enum by its value (``'strict'``, what
    ``jax.numpy_dtype_promotion("strict")`` took), anything else in full."""
    if isinstance(value, enum.Enum):
        return signatures.full_repr(value.value)
    return signatures.full_repr(value)


_LAST_CONTEXT: tuple[Any, tuple[Any, ...], dict[str, str]] | None = None


def _remember_context(names: Any, values: tuple[Any, ...], text: dict[str, str]) -> None:
    global _LAST_CONTEXT
    _LAST_CONTEXT = (names, values, text)


class Hooks:
    """Patches the two private functions; ``uninstall`` puts the originals back."""

    def __init__(self, on_trace: Callable[[TraceInfo], None],
                 on_lower: Callable[[LowerInfo], None],
                 on_internal_error: Callable[[BaseException], None]) -> None:
        self._on_trace = on_trace
        self._on_lower = on_lower
        self._on_internal_error = on_internal_error
        self._local = threading.local()
        self._originals: dict[str, Any] = {}
        # False once uninstalled: a wrapper of ours that someone else still calls (they patched
        # over it and kept it) then only delegates to JAX's function and records nothing.
        self._active = False
        self._classes = signatures.EqualityClasses()  # static values, compared as JAX does

    def install(self) -> None:
        from jax._src import pjit, source_info_util

        self._originals = {"_trace_for_jit": pjit._trace_for_jit, "_pjit_lower": pjit._pjit_lower}
        self._active = True
        pjit._trace_for_jit = self._trace_for_jit
        pjit._pjit_lower = _LowerWrapper(pjit._pjit_lower, self)
        # So that JAX's own source info and explain messages never blame our frames. This one
        # stays registered after the run (there is no public way to unregister); it only ever
        # concerns frames inside recompile_cli, so registering it once is enough.
        global _EXCLUDED
        if not _EXCLUDED and hasattr(source_info_util, "register_exclusion"):
            source_info_util.register_exclusion(_PACKAGE_DIR)
            _EXCLUDED = True

    def uninstall(self) -> list[str]:
        """Restore JAX; returns warnings when someone patched over us in the meantime.

        Never raises. A function that someone else put in place of ours is left as it is (and
        if it still calls our wrapper, the wrapper just calls JAX's original from now on).
        """
        problems: list[str] = []
        if not self._active:
            return problems
        self._active = False
        try:
            from jax._src import pjit
        except Exception as exc:  # pragma: no cover - JAX was there at install time
            return [f"could not restore JAX's internals ({exc})"]
        for name, original in self._originals.items():
            try:
                current = getattr(pjit, name, None)
                ours = getattr(current, "__self__", None) is self or (
                    isinstance(current, _LowerWrapper) and current._hooks is self)
                if ours:
                    setattr(pjit, name, original)
                else:
                    problems.append(f"jax._src.pjit.{name} was replaced by someone else during "
                                    "the run; left as it is")
            except Exception as exc:
                problems.append(f"could not restore jax._src.pjit.{name} ({exc})")
        return problems

    # -- the wrapped functions (miss path only) --------------------------------------------------
    def _trace_for_jit(self, fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Sequence[Any],
                       args: tuple[Any, ...], kwargs: dict[str, Any], *rest: Any) -> Any:
        from jax._src.interpreters import partial_eval as pe

        original = self._originals["_trace_for_jit"]
        if not self._active:
            return original(fun, ji, ctx_mesh, dbg, avals, args, kwargs, *rest)
        try:
            misses_before = _misses(pe.trace_to_jaxpr)
        except Exception as exc:  # never raise into user code: run JAX's own function
            self._report(exc)
            return original(fun, ji, ctx_mesh, dbg, avals, args, kwargs, *rest)
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        error: BaseException | None = None
        result = None
        start = time.perf_counter()
        try:
            result = original(fun, ji, ctx_mesh, dbg, avals, args, kwargs, *rest)
            return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            seconds = time.perf_counter() - start
            self._local.depth = depth
            try:
                retraced = error is not None or _misses(pe.trace_to_jaxpr) > misses_before
                if retraced:
                    jaxpr = getattr(result, "params", {}).get("jaxpr") if result else None
                    self._on_trace(signatures.trace_info(
                        fun, ji, dbg, avals, args, kwargs, depth, seconds, error, jaxpr,
                        trace_context(), self._classes))
            except Exception as exc:  # never raise into user code
                self._report(exc)

    def _report(self, exc: BaseException) -> None:
        try:
            self._on_internal_error(exc)
        except Exception:
            pass


class _LowerWrapper:
    """Stands in for the ``_pjit_lower`` cache object; delegates everything else to it."""

    def __init__(self, cache: Any, hooks: Hooks) -> None:
        self._cache = cache
        self._hooks = hooks
        self._keys = signatures.LoweringKeys()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)

    def __call__(self, jaxpr: Any, *args: Any, **kwargs: Any) -> Any:
        cache = self._cache
        if not self._hooks._active:
            return cache(jaxpr, *args, **kwargs)
        try:
            misses_before = _misses(cache)
        except Exception as exc:  # never raise into user code: run JAX's own function
            self._hooks._report(exc)
            return cache(jaxpr, *args, **kwargs)
        # Lowering rules may trace helper jits at top level; count them as nested in this call.
        local = self._hooks._local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            result = cache(jaxpr, *args, **kwargs)
        finally:
            local.depth = depth
        try:
            if _misses(cache) > misses_before:
                self._hooks._on_lower(_lower_info(self._keys, jaxpr, args))
        except Exception as exc:  # never raise into user code
            self._hooks._report(exc)
        return result


def _lower_info(keys: signatures.LoweringKeys, jaxpr: Any, args: tuple[Any, ...]) -> LowerInfo:
    return signatures.lower_info(keys.add(jaxpr, tuple(args)), jaxpr, args)


def _misses(cache: Any) -> int:
    return int(cache.cache_info().misses)
