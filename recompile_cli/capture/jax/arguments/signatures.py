"""What a JAX call's arguments look like, read from JAX's objects (checked on JAX 0.10.2): what
``hooks`` hands the recorder about one trace or lowering (``TraceInfo``, ``LowerInfo``): leaves,
names, static values (in full and as JAX compares them), the function kind, lowering-key changes
and (through ``replay``) how to make the call again. Reads the objects JAX passes (``JitInfo``,
``DebugInfo``, avals) but never imports ``jax._src``. Cache misses only, inside the hooks' ``try``.
"""

from __future__ import annotations

import functools
import inspect
import operator
import re
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax import callbacks, replay
from recompile_cli.capture.jax.arguments import pytrees, wrapped
from recompile_cli.capture.jax.arguments.equality import EqualityClasses
from recompile_cli.capture.jax.arguments.pytrees import full_repr
from recompile_cli.capture.jax.arguments.scalars import python_scalar_leaves
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import (
    SYMBOLIC_DIM,
    Change,
    FlattenCost,
    FunctionKind,
    Leaf,
    Owner,
    StaticClass,
)
from recompile_cli.session.warmup import Placement, Replay

__all__ = ["EqualityClasses", "LowerInfo", "LoweringKeys", "TraceInfo", "full_repr",
           "lower_info", "short_repr", "trace_info"]


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
    shape, symbolic = _shape(getattr(aval, "shape", ()))
    sharding = getattr(aval, "sharding", None)
    spec = None
    if sharding is not None and not getattr(getattr(sharding, "mesh", None), "empty", True):
        spec = str(getattr(sharding, "spec", sharding))
    dtype = getattr(aval, "dtype", None)
    return Leaf(shape=shape, dtype=_dtype_text(dtype) if dtype is not None else type(aval).__name__,
                weak_type=bool(getattr(aval, "weak_type", False)), sharding=spec,
                symbolic=symbolic)


def _dtype_text(dtype: Any) -> str:
    """A dtype's name as JAX prints it: ``float32``, ``key<fry>``, and ``float0`` for the
    tangent dtype of integers (a NumPy structured dtype, which prints as its fields)."""
    if getattr(dtype, "names", None) == ("float0",):
        return "float0"
    return str(dtype)


DIM_TEXT_LIMIT = 200  # a symbolic dimension's expression is kept up to this many characters


def _shape(dims: Any) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """(each size an integer, the (axis, expression) of each dimension that is not one): a
    symbolic dimension of ``jax.export`` (``b``, ``2*b + 1``) is ``SYMBOLIC_DIM`` in the shape,
    so that the shape is what the session's schema holds, and its text is kept apart."""
    sizes: list[int] = []
    symbolic: list[tuple[int, str]] = []
    for axis, dim in enumerate(dims):
        if type(dim) is int:
            sizes.append(dim)
            continue
        try:
            sizes.append(operator.index(dim))  # a NumPy integer
            continue
        except Exception:
            pass
        sizes.append(SYMBOLIC_DIM)
        try:
            text = " ".join(str(dim).split())
        except Exception:
            text = f"<{type(dim).__name__}>"
        if len(text) > DIM_TEXT_LIMIT:
            text = text[:DIM_TEXT_LIMIT - 3] + "..."
        symbolic.append((axis, text))
    return tuple(sizes), tuple(symbolic)


def _auto_axes(sharding: Any) -> bool:
    """The sharding's mesh has ``Auto`` axes: a type-level spec (an abstract value's) does not
    show how the array is placed along them."""
    kinds = getattr(getattr(sharding, "mesh", None), "axis_types", None) or ()
    return any(getattr(kind, "name", str(kind)) == "Auto" for kind in kinds)


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
    behind: Any = None  # the function a library's jit wrapper ``fun`` was made for, if any
    static_classes: dict[str, StaticClass] = field(default_factory=dict)
    python_scalars: tuple[str, ...] | None = None  # leaves passed as Python scalars
    replay: Replay | None = None  # a top-level trace's: how to make the call again
    # the code the traced program calls back on the host (``callbacks``), found when asked
    host_code: Callable[[], frozenset[types.CodeType]] = frozenset
    flatten: FlattenCost | None = None  # what each call of this signature flattens (top level)
    started: float | None = None  # time.perf_counter() when the trace began
    static_values: dict[str, Any] = field(default_factory=dict)  # the statics, by parameter


@dataclass(frozen=True, slots=True)
class LowerInfo:
    """What one missed ``_pjit_lower`` call saw."""

    name: str
    defined_at: str | None
    leaves: dict[str, Leaf]
    changes: tuple[Change, ...] | None  # None: no earlier lowering of this jaxpr
    jaxpr_id: int
    # the placement of each leaf in the lowering key (``replay.placements``)
    placements: tuple[tuple[Placement, ...], tuple[int, ...]] = ((), ())


def key_changes(names: list[str], before: tuple[Any, ...], after: tuple[Any, ...]
                 ) -> Iterator[Change]:
    """The lowering-key fields that differ, per argument for the per-argument tuples."""
    for key_field, new, old in zip(_LOWER_FIELDS, after, before, strict=False):
        if new == old:
            continue
        per_argument = (isinstance(new, tuple) and isinstance(old, tuple)
                        and len(new) == len(old) == len(names))
        if per_argument:
            for name, n, o in zip(names, new, old, strict=False):
                if n != o:
                    yield Change(key_field, full_repr(o), full_repr(n), argument=name)
        else:
            yield Change(key_field, full_repr(old), full_repr(new))


def trace_info(fun: Any, ji: Any, dbg: Any, avals: Sequence[Any], args: tuple[Any, ...],
               kwargs: dict[str, Any], depth: int, seconds: float, error: BaseException | None,
               jaxpr: Any, context: dict[str, str], classes: EqualityClasses | None = None, *,
               started: float | None = None, flatten: FlattenCost | None = None) -> TraceInfo:
    """A ``TraceInfo`` from what ``_trace_for_jit`` received (``ji``: JAX's ``JitInfo``);
    ``classes``: the recording's equality classes, to compare static values as JAX does;
    ``started`` and ``flatten`` as the hook measured them."""
    name, defined_at = name_and_location(dbg, fallback=getattr(fun, "__name__", "?"))
    static_nums = set(ji.static_argnums)
    static_names = set(ji.static_argnames)
    behind = None
    if stack.owner_of(path_of(defined_at)) == Owner.LIBRARY:
        behind = function_behind(
            fun, lambda: [args[i] for i in static_nums if i < len(args)], name)
        defined_at = stack.location_of(behind) if behind is not None else defined_at
    params = param_names(ji, len(args))
    raw = arg_names(dbg, len(avals))
    names = wrapped.user_leaf_names(fun, raw, params, args)
    if names is not raw and jaxpr is not None:  # a wrapper's: its lowerings use them too
        _USER_NAMES.remember(jaxpr, names)
    leaves = {n: leaf(a) for n, a in zip(names, avals, strict=False)}
    if any(item.sharding is not None for item in leaves.values()):
        leaves = _own_placements(leaves, args, kwargs, static_nums, static_names)
    static_values = {params[i]: v for i, v in enumerate(args) if i in static_nums}
    static_values.update({k: v for k, v in kwargs.items() if k in static_names})
    static, static_classes, equinox = _statics(fun, args, params, static_values, classes,
                                               (name, defined_at))
    dynamic = {params[i]: v for i, v in enumerate(args) if i not in static_nums}
    dynamic.update({k: v for k, v in kwargs.items() if k not in static_names})
    if equinox:  # equinox's static tuple describes the structures of its dynamic holders too
        dynamic = {}
    structures = {k: pytrees.structure(v, _classifier(classes, name, defined_at, k))
                  for k, v in dynamic.items()}
    return TraceInfo(
        fun=fun, name=name, defined_at=defined_at,
        eager_primitive=is_eager_primitive(fun), depth=depth, started=started, flatten=flatten,
        seconds=seconds, leaves=leaves, static=static, structure=structures,
        positional=len(args), keywords=tuple(sorted(kwargs)),
        context=context, function_kind=function_kind(fun),
        error=error, jaxpr_id=None if jaxpr is None else id(jaxpr), behind=behind,
        static_classes=static_classes, python_scalars=python_scalar_leaves(
            names, avals, args, kwargs, static_nums, static_names),
        replay=_symbolic(_replay(fun, ji, args, kwargs, params, static_nums, static_names),
                         leaves) if depth == 0 and error is None else None,
        host_code=functools.partial(callbacks.host_code, jaxpr), static_values=static_values)


def is_eager_primitive(fun: Any) -> bool:
    """Whether ``fun`` is JAX's own jit of one primitive, for an op run eagerly."""
    return bool(getattr(fun, "_apply_primitive", False))


def _replay(fun: Any, ji: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
            params: Sequence[str], static_nums: set[int], static_names: set[str]) -> Replay:
    """``replay.replay``; whatever goes wrong in it is the replay's problem, never the
    trace's: the event is recorded all the same."""
    try:
        return replay.replay(fun, ji, args, kwargs, params, static_nums, static_names)
    except Exception as exc:
        return Replay(None, problem=f"reading the call raised {type(exc).__name__}")


_TOP = re.compile(r"[^\[.]+")


def _symbolic(found: Replay, leaves: dict[str, Leaf]) -> Replay:
    """``found`` with each argument that holds a leaf of symbolic shape (``jax.export``)
    marked as one a plan cannot make: it has no size to compile for ahead of time."""
    tops = {match.group() for path, item in leaves.items()
            if item.symbolic and (match := _TOP.match(path))}
    if not tops:
        return found
    problem = "it has a symbolic dimension (jax.export), no size to compile for"
    arguments = tuple(msgspec.structs.replace(argument, tree=(), problem=problem)
                      if argument.name in tops and argument.problem is None else argument
                      for argument in found.arguments)
    return msgspec.structs.replace(found, arguments=arguments)


def _own_placements(leaves: dict[str, Leaf], args: tuple[Any, ...], kwargs: dict[str, Any],
                    static_nums: set[int], static_names: set[str]) -> dict[str, Leaf]:
    """``leaves`` with the own placement (``sharding.spec``, ``P('data',)``, marked ``auto``)
    of each array argument placed on a mesh with ``Auto`` axes, whose abstract value has only
    the type-level spec (``P(None, None)`` whatever the placement). The arguments are flattened
    as JAX flattens them for ``avals``; anything that does not line up leaves them as they are."""
    import jax  # lazy: capture loads before the job's environment is set

    dynamic = (tuple(v for i, v in enumerate(args) if i not in static_nums),
               {k: v for k, v in kwargs.items() if k not in static_names})
    values = jax.tree_util.tree_leaves(dynamic)
    if len(values) != len(leaves):
        return leaves
    out = {}
    for (path, item), value in zip(leaves.items(), values, strict=True):
        if (item.sharding is not None and isinstance(value, jax.Array)
                and not isinstance(value, jax.core.Tracer)):  # public on 0.4.30-0.12
            sharding = getattr(value, "sharding", None)
            spec = getattr(sharding, "spec", None)
            if spec is not None and _auto_axes(sharding):
                item = msgspec.structs.replace(item, sharding=f"{spec}, auto")
        out[path] = item
    return out


def _statics(fun: Any, args: tuple[Any, ...], params: Sequence[str],
             values: dict[str, Any], classes: EqualityClasses | None,
             function: tuple[str, str | None]
             ) -> tuple[dict[str, str], dict[str, StaticClass], bool]:
    """(each static value's text, its equality class, whether equinox's static tuple was
    described by the user's paths). A container's text is a node map by paths (``cfg.steps``),
    equinox's static tuple one by the user's parameters (``model.act``, ``n``)."""
    name, defined_at = function
    described = {param: pytrees.value_text(value) for param, value in values.items()}
    texts = {param: text for param, (text, _) in described.items()}
    found: dict[str, StaticClass] = {}
    equinox = None
    if values and len(params) == 3:
        equinox = wrapped.equinox_static(fun, args,
                                         _classifier(classes, name, defined_at, params[2]))
    for param, value in values.items():
        if classes is not None:
            found[param] = classes.classify(("static", name, defined_at, param), value,
                                            *described[param]).described()
        view = (equinox if equinox is not None and param == params[2] else
                pytrees.static_view(value, param, _classifier(classes, name, defined_at, param)))
        if view is not None:
            texts[param] = view
    return texts, found, equinox is not None


def _classifier(classes: EqualityClasses | None, name: str, defined_at: str | None,
                param: str) -> pytrees.Classify | None:
    """Equality classes of the static data in argument ``param``: a table per path."""
    if classes is None:
        return None
    return lambda path, value, text: classes.classify(
        ("node", name, defined_at, param, path), value, text)



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


class _UserNames:
    """The user's leaf names of a library wrapper's traced jaxpr (``model.w`` for equinox's
    ``dynamic_nodonate['first'][0]``), so that its lowerings name arguments the same way; held
    while the jaxpr lives, at most ``LIMIT`` of them."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._names: dict[int, tuple[weakref.ref[Any], list[str]]] = {}
        self._lock = threading.Lock()

    def remember(self, jaxpr: Any, names: list[str]) -> None:
        ident = id(jaxpr)
        try:
            ref = weakref.ref(jaxpr, functools.partial(self._forget, ident))
        except TypeError:
            return
        with self._lock:
            if len(self._names) >= self.LIMIT:
                self._names.clear()
            self._names[ident] = (ref, names)

    def _forget(self, ident: int, ref: weakref.ref[Any]) -> None:
        with self._lock:
            found = self._names.get(ident)
            if found is not None and found[0] is ref:
                del self._names[ident]

    def get(self, jaxpr: Any) -> list[str] | None:
        found = self._names.get(id(jaxpr))
        names = found[1] if found is not None and found[0]() is jaxpr else None
        count = len(getattr(jaxpr, "in_avals", ()))
        return names if names is not None and len(names) == count else None


_USER_NAMES = _UserNames()


def lower_info(earlier: list[tuple[Any, ...]], jaxpr: Any, args: tuple[Any, ...]) -> LowerInfo:
    """A ``LowerInfo`` for a missed ``_pjit_lower(jaxpr, *args)``; ``earlier``: the lowering keys
    of this jaxpr seen before, oldest first. The change is read against the closest earlier key
    (fewest differences, ties to the most recent)."""
    dbg = getattr(jaxpr.jaxpr, "debug_info", None)
    name, defined_at = name_and_location(dbg, fallback=str(args[6]) if len(args) > 6 else "?")
    names = _USER_NAMES.get(jaxpr) or arg_names(dbg, len(jaxpr.in_avals))
    leaves = {n: leaf(a) for n, a in zip(names, jaxpr.in_avals, strict=False)}
    others = [key for key in earlier if key != tuple(args)]
    changes: tuple[Change, ...] | None = None
    if others:
        best = min(reversed(others), key=lambda key: len(list(key_changes(names, key, args))))
        changes = tuple(key_changes(names, best, args))
    try:
        placed = replay.placements(args[0]) if args and isinstance(args[0], tuple) else ((), ())
    except Exception:  # an unknown sharding object: the lowering is recorded without them
        placed = ((), ())
    return LowerInfo(name, defined_at, leaves, changes, id(jaxpr), placed)


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
    """JAX's names of the flattened arguments (``x``, ``batch['x']``; ``batch[0]`` for JAX's
    ``batch[<flat index 0>]``), ``args[i]`` if unknown."""
    names = getattr(dbg, "arg_names", None)
    if names is not None and len(names) == count:
        return [pytrees.plain_path(n) if n else f"args[{i}]" for i, n in enumerate(names)]
    return [f"args[{i}]" for i in range(count)]


def param_names(ji: Any, count: int) -> tuple[str, ...]:
    """Parameter names for positional arguments, from the signature JAX already inspected
    (remembered per signature object: hashing an ``inspect.Signature`` costs more than this)."""
    sig = getattr(ji, "fun_signature", None)
    key = (id(sig), count)
    known = _PARAM_NAMES.get(key)
    if known is not None and known[0] is sig:
        return known[1]
    names = tuple(wrapped.positional_names(sig, count))
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


def function_behind(fun: Any, static_values: Callable[[], list[Any]], name: str) -> Any:
    """The function that a library's jit wrapper traces for it (``stack.made_for``): the
    user's, or another library's (diffrax's ``diffeqsolve`` behind ``equinox.filter_jit``).

    Wrappers such as ``equinox.filter_jit`` jit a function of their own, renamed after the
    wrapped one, and pass that one along (as a static argument or in a closure). Only a
    renamed wrapper (its ``__name__`` is not its code's name) is looked through: a library's
    own ``lambda`` (flax linen's ``jax.eval_shape(lambda ...)``) stays the library's.
    """
    code = getattr(stack.python_function(fun), "__code__", None)
    if code is None or getattr(fun, "__name__", None) == code.co_name or name == "<lambda>":
        return None
    candidates = [getattr(fun, "__wrapped__", None)]
    candidates += [cell.cell_contents for cell in (getattr(fun, "__closure__", None) or ())
                   if _filled(cell)]
    for value in static_values():
        candidates += _shallow(value)
    for candidate in candidates:
        found = stack.made_for(candidate, name, code)
        if found is not None:
            return found
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


# -- committed arrays --------------------------------------------------------------------------
# ``jax.Array.committed`` (public on JAX 0.10.2 and 0.12.0) tells whether an array is committed
# to its sharding, which puts that sharding in jit's lowering key; JAX 0.4.30 has only the
# private ``_committed``. Never raises: unknown means uncommitted.
def is_committed(array: Any) -> bool:
    """True when ``array`` is committed to its sharding (``jax.device_put(x, device)``)."""
    try:
        committed = getattr(array, "committed", None)
        if committed is None:  # JAX 0.4.30: only the private attribute
            committed = getattr(array, "_committed", False)
        return bool(committed)
    except Exception:
        return False
