"""What a JAX call's arguments look like, read from JAX's objects (checked on JAX 0.10.2).

Owns what ``jax_internals`` hands the recorder about one traced call or lowering (``TraceInfo``,
``LowerInfo``): leaves (abstract values -> ``Leaf``), argument and parameter names, static
values (compared in full: ``full_repr``), the function kind, the user's function behind a
library wrapper, name/location parsing of ``DebugInfo``, and lowering-key changes. Pytree
structures and the user's paths behind library wrappers are in ``pytrees``. Reads the objects
JAX passes to its own functions (``JitInfo``, ``DebugInfo``, avals) but imports nothing from
``jax._src``. Runs on cache misses only, inside the hooks' ``try``.
"""

from __future__ import annotations

import functools
import inspect
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from recompile_cli.capture import frames, pytrees
from recompile_cli.capture.pytrees import full_repr
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import Change, FunctionKind, Leaf, Owner

__all__ = ["LowerInfo", "LoweringKeys", "TraceInfo", "full_repr", "lower_info", "short_repr",
           "trace_info"]


def short_repr(value: Any, limit: int = 120) -> str:
    """``repr`` cut to ``limit`` characters, for display only."""
    text = full_repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def leaf(aval: Any) -> Leaf:
    """A ``Leaf`` from an abstract value (``ShapedArray``); equal avals share one ``Leaf``
    (a trace sees the same few avals again and again: its unchanged arguments, nested jits)."""
    try:
        return _cached_leaf(aval)
    except TypeError:  # an unhashable aval
        return _new_leaf(aval)


def _new_leaf(aval: Any) -> Leaf:
    shape = tuple(int(d) if isinstance(d, int) else d for d in getattr(aval, "shape", ()))
    sharding = getattr(aval, "sharding", None)
    spec = None
    if sharding is not None and not getattr(getattr(sharding, "mesh", None), "empty", True):
        spec = str(getattr(sharding, "spec", sharding))
    return Leaf(shape=tuple(shape), dtype=str(getattr(aval, "dtype", type(aval).__name__)),
                weak_type=bool(getattr(aval, "weak_type", False)), sharding=spec)


_cached_leaf = functools.lru_cache(maxsize=4096)(_new_leaf)


# -- what the hooks hand over --------------------------------------------------------------------
# Positional parameters of _pjit_lower after the jaxpr (JAX 0.10-0.12), for naming key changes.
_LOWER_FIELDS = ("in_shardings", "out_shardings", "in_layouts", "out_layouts", "donated_invars",
                 "ctx_mesh", "name", "keep_unused", "inline", "compiler_options_kvs")


@dataclass(frozen=True, slots=True)
class TraceInfo:
    """What one ``_trace_for_jit`` call saw."""

    fun: Any
    name: str
    defined_at: str | None
    eager_primitive: bool
    depth: int
    seconds: float
    leaves: dict[str, Leaf]
    static: dict[str, str]
    structure: dict[str, str]
    positional: int
    keywords: tuple[str, ...]
    context: dict[str, str]
    function_kind: FunctionKind
    error: BaseException | None
    jaxpr_id: int | None  # id of the traced ClosedJaxpr, to pair the trace with its lowering


@dataclass(frozen=True, slots=True)
class LowerInfo:
    """What one missed ``_pjit_lower`` call saw."""

    name: str
    defined_at: str | None
    leaves: dict[str, Leaf]
    changes: tuple[Change, ...] | None  # None: no earlier lowering of this jaxpr
    jaxpr_id: int


def key_changes(names: list[str], before: tuple[Any, ...], after: tuple[Any, ...]
                 ) -> Iterator[Change]:
    """The lowering-key fields that differ, per argument for the per-argument tuples."""
    for field, new, old in zip(_LOWER_FIELDS, after, before, strict=False):
        if new == old:
            continue
        per_argument = (isinstance(new, tuple) and isinstance(old, tuple)
                        and len(new) == len(old) == len(names))
        if per_argument:
            for name, n, o in zip(names, new, old, strict=False):
                if n != o:
                    yield Change(field, full_repr(o), full_repr(n), argument=name)
        else:
            yield Change(field, full_repr(old), full_repr(new))


def trace_info(fun: Any, ji: Any, dbg: Any, avals: Sequence[Any], args: tuple[Any, ...],
               kwargs: dict[str, Any], depth: int, seconds: float, error: BaseException | None,
               jaxpr: Any, context: dict[str, str]) -> TraceInfo:
    """A ``TraceInfo`` from what ``_trace_for_jit`` received (``ji``: JAX's ``JitInfo``)."""
    name, defined_at = name_and_location(dbg, fallback=getattr(fun, "__name__", "?"))
    static_nums = set(ji.static_argnums)
    static_names = set(ji.static_argnames)
    if frames.owner_of(path_of(defined_at)) == Owner.LIBRARY:
        defined_at = user_function_behind(
            fun, lambda: [args[i] for i in static_nums if i < len(args)], name) or defined_at
    params = param_names(ji, len(args))
    names = pytrees.user_leaf_names(fun, arg_names(dbg, len(avals)), params, args)
    leaves = {n: leaf(a) for n, a in zip(names, avals, strict=False)}
    static = {params[i]: full_repr(v) for i, v in enumerate(args) if i in static_nums}
    static.update({k: full_repr(v) for k, v in kwargs.items() if k in static_names})
    structures = {params[i]: pytrees.structure(v)
                  for i, v in enumerate(args) if i not in static_nums}
    structures.update({k: pytrees.structure(v)
                       for k, v in kwargs.items() if k not in static_names})
    return TraceInfo(
        fun=fun, name=name, defined_at=defined_at,
        eager_primitive=bool(getattr(fun, "_apply_primitive", False)), depth=depth,
        seconds=seconds, leaves=leaves, static=static, structure=structures,
        positional=len(args), keywords=tuple(sorted(kwargs)),
        context=context, function_kind=function_kind(fun),
        error=error, jaxpr_id=None if jaxpr is None else id(jaxpr))



class LoweringKeys:
    """The lowering keys seen per jaxpr while recording, in order: the recorder's own index,
    so that a lowering miss costs the same however many keys JAX's cache holds."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[weakref.ref[Any], list[tuple[Any, ...]]]] = {}
        self._lock = threading.Lock()

    def add(self, jaxpr: Any, key: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Record ``key`` for ``jaxpr``; returns the earlier keys of that jaxpr (oldest first)."""
        ident = id(jaxpr)
        with self._lock:
            found = self._keys.get(ident)
            if found is None or found[0]() is not jaxpr:
                ref = weakref.ref(jaxpr, functools.partial(self._forget, ident))
                found = self._keys[ident] = (ref, [])
            earlier = list(found[1])
            found[1].append(key)
        return earlier

    def _forget(self, ident: int, ref: weakref.ref[Any]) -> None:
        with self._lock:
            found = self._keys.get(ident)
            if found is not None and found[0] is ref:
                del self._keys[ident]


def lower_info(earlier: list[tuple[Any, ...]], jaxpr: Any, args: tuple[Any, ...]) -> LowerInfo:
    """A ``LowerInfo`` for a missed ``_pjit_lower(jaxpr, *args)``; ``earlier``: the lowering keys
    of this jaxpr seen before, oldest first. The change is read against the closest earlier key
    (fewest differences, ties to the most recent)."""
    dbg = getattr(jaxpr.jaxpr, "debug_info", None)
    name, defined_at = name_and_location(dbg, fallback=str(args[6]) if len(args) > 6 else "?")
    names = arg_names(dbg, len(jaxpr.in_avals))
    leaves = {n: leaf(a) for n, a in zip(names, jaxpr.in_avals, strict=False)}
    others = [key for key in earlier if key != tuple(args)]
    changes: tuple[Change, ...] | None = None
    if others:
        best = min(reversed(others), key=lambda key: len(list(key_changes(names, key, args))))
        changes = tuple(key_changes(names, best, args))
    return LowerInfo(name, defined_at, leaves, changes, id(jaxpr))


# -- names ---------------------------------------------------------------------------------------
_LOCATION = re.compile(r"\S.*:\d+")


def name_and_location(dbg: Any, fallback: str) -> tuple[str, str | None]:
    """Split DebugInfo.func_src_info (``"f at /path/file.py:12"``) into name and location.

    The name itself may contain " at " (``functools.partial`` reprs, a ``__name__`` set by hand),
    so the split is on the last one, and only a ``path:line`` tail counts as a location.
    """
    return _split_location(getattr(dbg, "func_src_info", None) or "",
                           getattr(dbg, "func_name", None), fallback)


@functools.lru_cache(maxsize=4096)
def _split_location(src: str, func_name: str | None, fallback: str) -> tuple[str, str | None]:
    name, sep, where = src.rpartition(" at ")
    if sep and _LOCATION.fullmatch(where):
        return name or func_name or fallback, where
    return func_name or src or fallback, None


def arg_names(dbg: Any, count: int) -> list[str]:
    """JAX's names of the flattened arguments (``x``, ``batch['x']``), ``args[i]`` if unknown."""
    names = getattr(dbg, "arg_names", None)
    if names is not None and len(names) == count:
        return [n if n else f"args[{i}]" for i, n in enumerate(names)]
    return [f"args[{i}]" for i in range(count)]


def param_names(ji: Any, count: int) -> tuple[str, ...]:
    """Parameter names for positional arguments, from the signature JAX already inspected
    (remembered per signature object: hashing an ``inspect.Signature`` costs more than this)."""
    sig = getattr(ji, "fun_signature", None)
    key = (id(sig), count)
    known = _PARAM_NAMES.get(key)
    if known is not None and known[0] is sig:
        return known[1]
    names = tuple(pytrees.positional_names(sig, count))
    if len(_PARAM_NAMES) >= 1024:
        _PARAM_NAMES.clear()
    _PARAM_NAMES[key] = (sig, names)  # holds ``sig``, so its id is not reused meanwhile
    return names


_PARAM_NAMES: dict[tuple[int, int], tuple[Any, tuple[str, ...]]] = {}


# -- functions -----------------------------------------------------------------------------------
def function_kind(fun: Any) -> FunctionKind:
    """What kind of callable ``fun`` is, to name the pattern behind a new function object."""
    if isinstance(fun, functools.partial):
        return FunctionKind.PARTIAL
    if inspect.ismethod(fun):
        return FunctionKind.BOUND_METHOD
    name = getattr(fun, "__name__", "")
    if name == "<lambda>":
        return FunctionKind.LAMBDA
    if "<locals>" in getattr(fun, "__qualname__", ""):
        return FunctionKind.CLOSURE
    return FunctionKind.FUNCTION


def user_function_behind(fun: Any, static_values: Callable[[], list[Any]], name: str
                         ) -> str | None:
    """``file:line`` of the user's function that a library's jit wrapper traces for it.

    Wrappers such as ``equinox.filter_jit`` jit a function of their own, renamed after the
    user's, and pass the user's function along (as a static argument or in a closure). Only a
    renamed wrapper (its ``__name__`` is not its code's name) is looked through: a library's
    own ``lambda`` (flax linen's ``jax.eval_shape(lambda ...)``) stays the library's.
    """
    code = getattr(frames.python_function(fun), "__code__", None)
    if code is None or getattr(fun, "__name__", None) == code.co_name or name == "<lambda>":
        return None
    candidates = [getattr(fun, "__wrapped__", None)]
    candidates += [cell.cell_contents for cell in (getattr(fun, "__closure__", None) or ())
                   if _filled(cell)]
    for value in static_values():
        candidates += _shallow(value)
    for candidate in candidates:
        inner = frames.python_function(candidate)
        inner_code = getattr(inner, "__code__", None)
        if (inner_code is not None and getattr(inner, "__name__", None) == name
                and frames.is_user_file(inner_code.co_filename)):
            return f"{inner_code.co_filename}:{inner_code.co_firstlineno}"
    return None


def _filled(cell: Any) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def _shallow(value: Any, depth: int = 4, limit: int = 64) -> list[Any]:
    """The items of nested tuples, lists and dicts, a few levels down and a few dozen at most
    (equinox passes ``((user_function,), treedef)`` inside a static tuple)."""
    if depth and isinstance(value, (tuple, list, dict)):
        items = value.values() if isinstance(value, dict) else value
        out: list[Any] = []
        for item in items:
            out += _shallow(item, depth - 1, limit - len(out))
            if len(out) >= limit:
                break
        return out
    return [value]
