"""Optional call counting: wraps every function jitted while active in a thin counting wrapper.

This is the one feature that puts Python code on the cached-call path (about 1-3 us per call),
so it is off unless asked for (``--count-calls``, or a budget with ``steady_state_after`` on a
script). It replaces the public ``jax.jit`` while a script runs, so functions jitted when the
script is imported and run are counted; functions jitted earlier are not.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from recompile_cli.capture.code.stack import function_key_of

OnCall = Callable[[str | None, int | None], None]
# (the exception a counted call raised, the jitted function, its arguments): a call JAX
# refused is recorded from it (``capture.jax.arguments.refusals``), whether or not the program
# catches it
OnRaise = Callable[[BaseException, Any, list[Any], dict[str, Any]], None]
# (the function key, its static arguments by parameter name) after a counted call that traced
# nothing (``capture.stale_statics``)
OnStatics = Callable[[str, dict[str, Any]], None]
Traces = Callable[[str], int]  # how many traces of a function key were seen


class CallCounter:
    """``with CallCounter(on_call, counts): ...``; ``counts`` maps function keys to calls.

    ``on_call(key, index)`` is called when an outermost counted call starts (with the 0-based
    call number of that function) and ``on_call(None, None)`` when it ends; ``on_raise``
    with what a counted call raised. On exit ``jax.jit``
    is exactly the function it was before (unless someone replaced it meanwhile); wrappers made
    while active keep working afterwards, without counting.
    """

    def __init__(self, on_call: OnCall, counts: dict[str, int] | None = None,
                 on_raise: OnRaise | None = None,
                 on_statics: tuple[OnStatics, Traces] | None = None) -> None:
        self.counts: dict[str, int] = {} if counts is None else counts
        self._on_call = on_call
        self.on_raise = on_raise
        self.on_statics = on_statics
        self._local = threading.local()
        self._original: Any = None
        self._active = False
        self._wrapper = self._jit  # one bound method, so that identity checks hold

    def __enter__(self) -> CallCounter:
        import jax  # lazy: capture loads before the job's environment is set

        self._original = jax.jit
        self._active = True
        jax.jit = self._wrapper
        return self

    def __exit__(self, *exc: object) -> None:
        import jax  # lazy: capture loads before the job's environment is set

        self._active = False
        if jax.jit is self._wrapper:
            jax.jit = self._original

    def _jit(self, fun: Any = None, *args: Any, **kwargs: Any) -> Any:
        if fun is None:  # @jax.jit(static_argnums=...) decorator-factory form
            return lambda f: self._jit(f, *args, **kwargs)
        counted = _Counted(self._original(fun, *args, **kwargs), function_key_of(fun), self)
        if self.on_statics is not None:
            counted._statics = _static_params(fun, kwargs)
        return counted

    def _enter(self, key: str) -> bool:
        if not self._active:  # a wrapper kept by the program after the run: just call
            return False
        index = self.counts.get(key, 0)
        self.counts[key] = index + 1
        outermost = not getattr(self._local, "active", False)
        if outermost:
            self._local.active = True
            self._on_call(key, index)
        return outermost

    def _exit(self) -> None:
        self._local.active = False
        self._on_call(None, None)


class _Counted:
    """Behaves as the jitted function (attributes, AOT methods, binding as a method)."""

    _statics: tuple[tuple[int | None, str], ...] = ()  # (position, parameter) of statics

    def __init__(self, jitted: Any, key: str, counter: CallCounter) -> None:
        self._jitted, self._key, self._counter = jitted, key, counter
        functools.update_wrapper(self, jitted, updated=())
        # ``__wrapped__`` is what the jitted function's is (the user's function), as a program
        # that introspects it sees without counting, not the jitted object one level down
        self.__wrapped__ = getattr(jitted, "__wrapped__", jitted)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        outermost = self._counter._enter(self._key)
        watch = self._counter.on_statics if self._statics else None
        traces = watch[1](self._key) if watch is not None else 0
        try:
            out = self._jitted(*args, **kwargs)
            if watch is not None and watch[1](self._key) == traces and self._counter._active:
                _check_statics(watch[0], self._key, self._statics, args, kwargs)
            return out
        except BaseException as exc:
            on_raise = self._counter.on_raise
            if on_raise is not None and self._counter._active:
                on_raise(exc, self._jitted, list(args), kwargs)
            raise
        finally:
            if outermost:
                self._counter._exit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


def _static_params(fun: Any, options: dict[str, Any]) -> tuple[tuple[int | None, str], ...]:
    """(position or None, parameter name) of each static argument ``jax.jit`` was given."""
    def listed(value: Any, kind: type) -> list[Any]:
        value = (value,) if isinstance(value, kind) else (value or ())
        return [v for v in value if isinstance(v, kind)]

    nums, names = listed(options.get("static_argnums"), int), listed(
        options.get("static_argnames"), str)
    if not nums and not names:
        return ()
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    out: dict[str, int | None] = {}
    for num in nums:
        num = num + len(params) if num < 0 else num
        if 0 <= num < len(params):
            out[params[num]] = num
    for name in names:
        out.setdefault(name, params.index(name) if name in params else None)
    return tuple((num, name) for name, num in out.items())


def _check_statics(on_statics: OnStatics, key: str, statics: tuple[tuple[int | None, str], ...],
                   args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    values = {}
    for num, name in statics:
        if name in kwargs:
            values[name] = kwargs[name]
        elif num is not None and num < len(args):
            values[name] = args[num]
    if values:
        try:
            on_statics(key, values)
        except Exception:  # never the user's problem
            pass
