"""The Python code a traced program calls back on the host (checked on JAX 0.10.2 and 0.12.0).

``jax.debug.callback``, ``jax.pure_callback`` and ``jax.experimental.io_callback`` put the
user's function into the jaxpr as the ``callback`` parameter of a ``*callback`` primitive
(``debug_callback``, ``pure_callback``, ``io_callback``), wrapped by JAX: a ``_FlatCallback``
whose ``callback_func`` it is, or a closure that holds it in a cell. That function runs on the
host at every call of the compiled program, so what it reads from globals and closures is read
afresh each time, never baked into the trace (``capture.stale`` leaves it out).

``host_code`` walks a jaxpr's equations and the jaxprs in their parameters (``cond`` branches,
``scan`` and ``while`` bodies, nested jits) and returns the code objects of those functions.
Duck-typed: nothing here imports ``jax._src``, and anything unexpected finds nothing. Runs on
cache misses only, and only for a traced function that reads simple globals or closure values.

``host_callback_around`` tells, from the stack, whether the user's code that made an eager
compile runs inside such a callback (its advice then is NumPy, which compiles nothing).
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Iterator
from typing import Any

MAX_EQUATIONS = 200_000  # equations walked per jaxpr at most (bodies included)
_UNWRAP_DEPTH = 4  # wrappers looked through around a callback (partials, closures)


def host_code(jaxpr: Any) -> frozenset[types.CodeType]:
    """The code objects of the functions that ``jaxpr`` (a ``ClosedJaxpr`` or ``Jaxpr``) calls
    back on the host; empty when it calls none, or for anything unexpected."""
    if jaxpr is None:
        return frozenset()
    found: set[types.CodeType] = set()
    try:
        for equation in _equations(jaxpr):
            name = getattr(getattr(equation, "primitive", None), "name", "")
            params = getattr(equation, "params", None) or {}
            if isinstance(name, str) and name.endswith("callback") and "callback" in params:
                found.update(_code_of(params["callback"], _UNWRAP_DEPTH))
    except Exception:  # an equation of a kind this walk does not know: what it found stands
        pass
    return frozenset(found)


def _equations(jaxpr: Any) -> Iterator[Any]:
    """Every equation of ``jaxpr`` and of the jaxprs in its equations' parameters, each jaxpr
    once, at most ``MAX_EQUATIONS``."""
    todo, seen, count = [jaxpr], set(), 0
    while todo:
        item = todo.pop()
        inner = getattr(item, "jaxpr", None)  # a ClosedJaxpr holds its Jaxpr
        body = inner if inner is not None and hasattr(inner, "eqns") else item
        if id(body) in seen or not hasattr(body, "eqns"):
            continue
        seen.add(id(body))
        for equation in body.eqns:
            count += 1
            if count > MAX_EQUATIONS:
                return
            yield equation
            for value in (getattr(equation, "params", None) or {}).values():
                todo.extend(_jaxprs_in(value))


def _jaxprs_in(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [v for v in value if hasattr(v, "eqns") or hasattr(v, "jaxpr")]
    return [value] if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None),
                                                        "eqns") else []


def _code_of(callback: Any, depth: int) -> set[types.CodeType]:
    """The code of ``callback`` and of the functions it wraps: a ``_FlatCallback``'s
    ``callback_func``, a ``functools.partial``'s function, ``__wrapped__``, a bound method's
    function and the callables in a closure's cells, ``depth`` levels down."""
    found: set[types.CodeType] = set()
    if depth < 0 or callback is None:
        return found
    code = getattr(callback, "__code__", None)
    if isinstance(code, types.CodeType):
        found.add(code)
    inner = [getattr(callback, "callback_func", None), getattr(callback, "__wrapped__", None),
             getattr(callback, "__func__", None)]
    if isinstance(callback, functools.partial):
        inner.append(callback.func)
    for cell in getattr(callback, "__closure__", None) or ():
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(content):
            inner.append(content)
    for item in inner:
        if item is not None and item is not callback:
            found |= _code_of(item, depth - 1)
    return found


# The JAX functions that call a host callback's Python function, by the API the user called
# (their names on JAX 0.10.2 and 0.12.0, in jax/_src/debugging.py and jax/_src/callback.py).
_HOST_CALLBACK_FRAMES = {"debug_callback_impl": "jax.debug.callback",
                         "pure_callback_impl": "jax.pure_callback",
                         "io_callback_impl": "io_callback"}
_CALLBACK_FILES = ("debugging.py", "callback.py")  # a frame there names an unknown API
_JAX_SOURCE = f"{os.sep}jax{os.sep}_src{os.sep}"
_MAX_FRAMES = 256  # frames walked outwards at most


def host_callback_around(frame: types.FrameType | None) -> str | None:
    """The host callback API (``jax.debug.callback``, ``jax.pure_callback``, ``io_callback``)
    whose call runs the code of ``frame`` (a frame of the user's), from the frames outside it;
    ``"a host callback"`` where JAX's frames say so by file only; ``None`` outside any."""
    found = None
    depth = 0
    while frame is not None and depth < _MAX_FRAMES:
        path = frame.f_code.co_filename
        if _JAX_SOURCE in path:
            name = _HOST_CALLBACK_FRAMES.get(frame.f_code.co_name)
            if name is not None:
                return name
            if found is None and os.path.basename(path) in _CALLBACK_FILES:
                found = "a host callback"
        frame, depth = frame.f_back, depth + 1
    return found
