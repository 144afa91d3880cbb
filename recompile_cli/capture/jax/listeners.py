"""Part of the JAX-internals layer (see ``hooks``): registering, unregistering and
checking our ``jax.monitoring`` listeners.

``register_listener`` / ``unregister_listener`` exist because the listener API differs across the
supported versions (JAX 0.4.30 to 0.12): unregistering is public only since 0.8, and before 0.10
the trace duration event also fires for nested jits (and before ~0.6 without ``fun_name``), which
the listener adapter (``_LegacyDurations``) evens out so that every version reports the same
top-level traces.

``is_registered``: a program can remove every listener
(``jax.monitoring.clear_event_listeners()``, or by changing JAX's lists), and then a recorder, a
guard or a gate stops seeing compiles without a word. JAX has no public way to list the
listeners: this reads the private lists of ``jax._src.monitoring`` (``_event_listeners``,
``_event_duration_secs_listeners``; the same names on JAX 0.4.30, 0.10.2 and 0.12, which
``clear_event_listeners`` rebinds to new empty lists). Behind feature detection: when they are
missing the answer is ``None`` (unknown), never an exception.

Called only on the miss path (a trace, a compile) and when a guard is removed: never on a
cache-hit call.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from recompile_cli.capture.jax.hooks import jax_version


def is_registered(kind: str, callback: Callable[..., None]) -> bool | None:
    """Whether ``callback``, registered with ``register_listener(kind, ...)``, is
    still in JAX's list of ``kind`` listeners; None when that cannot be known."""
    try:
        with _registered_lock:
            listener: Any = _registered.get((kind, callback), callback)
        # lazy: capture loads before the job's environment is set
        from jax._src import monitoring as src

        listeners = getattr(src, _LISTENER_API[kind][3], None)
        if not isinstance(listeners, list):
            return None
        return _find(listeners, listener) is not None
    except Exception:
        return None


# -- registering --------------------------------------------------------------------------------
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
    from jax import monitoring  # lazy: capture loads before the job's environment is set

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
        # lazy: capture loads before the job's environment is set
        from jax import monitoring
        from jax._src import monitoring as src
    except Exception:
        return False
    listeners = getattr(src, list_name, None)
    if isinstance(listeners, list):
        found = _find(listeners, listener)
        if found is None:
            return False  # already gone: nothing to remove, nothing to raise
        listener = found  # what JAX holds: the callback or its adapter
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
        while (found := _find(listeners, listener)) is not None:
            listeners.remove(found)
        return True
    except Exception:
        return False


def _find(listeners: list[Any], listener: Any) -> Any | None:
    """The item of ``listeners`` that is ``listener``, or an adapter of it (``_LegacyDurations``:
    found by its callback, also when this module was imported again since registering, as
    pytest's in-process ``pytester`` runs do); None when there is none."""
    try:
        for item in listeners:
            if item is listener or item == listener or getattr(item, "callback", None) == listener:
                return item
    except Exception:
        pass
    return None


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
