"""Part of the JAX-internals layer (see ``hooks``): forgetting what JAX holds in memory for the
user's functions, while JAX's own programs stay compiled.

``forget_yours()`` is how a recording starts in the pytest plugin: every test records from JAX's
caches as a fresh process has them *for every function outside JAX* (the user's and libraries':
their traces, and so every lowering and compile made from them), while JAX's own programs (its
op-by-op ``jit(add)``, ``jnp`` functions, internal helpers) stay compiled from test to test.
``jax.clear_caches()`` made each test compile those again (7 modules of optax's tests ran 1.59x
a plain run, nearly all of it those recompiles; 0.95x with this: ``benchmarks/pytest_suite.py``);
this keeps a test's count of the functions outside JAX the same in any order, at the cost of
re-tracing only them.

What is forgotten, read in the source of JAX 0.10.2 and 0.12.1 (``jax/_src/util.py``,
``pjit.py``, ``interpreters/partial_eval.py``, ``linear_util.py``):

* Every cache JAX registers (``util._caches``) that is keyed by a function (its first key
  element a weak reference to a callable: ``partial_eval.trace_to_jaxpr``,
  ``pjit._infer_params_cached``, remat's, composites', ...) loses the entries of each function
  that is not JAX's own (``_jax_own``: defined in JAX, closing over and wrapping nothing
  else: ``jax.jit(jax.vmap(f))`` is ``f``'s), and of each JAX function that any of its
  entries in any of these caches shows handed something else as a static argument or pytree
  metadata (``jnp.piecewise``'s functions). Every later cache (lowering, compile, derived
  jaxprs, an eager ``lax.scan``'s program) is keyed by the jaxpr object, which a new trace
  makes anew. A ``MultiWeakrefLRUCache`` (0.12: abstract evaluation, keyed by a primitive, avals
  and parameters) is kept: its ``cache_keys`` fails there, and nothing in it traces.
* ``linear_util.cache`` instances (keyed by function, but not listable: the rarely used
  ``pmap`` and ``core.call`` paths) are cleared whole.
* The C++ fast-path caches of jit (``pjit._cpp_pjit_cache_*``, ``PjitFunctionCache.clear_all``)
  are cleared whole (they cannot be cleared per function): a JAX function's next call takes the
  Python path once and finds its program in the caches above, compiling nothing.

Anything not recognised is forgotten (a re-trace costs time, never a wrong count). Where an
internal is missing (JAX 0.4.30, or a JAX this was not checked on), ``forget_yours()`` returns
the reason and does nothing: the caller clears every cache (``jax.clear_caches()``) instead.
Never raises into the caller: an unexpected failure is a reason too.
"""

from __future__ import annotations

import enum
import functools
import types
from typing import Any

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax import hooks
from recompile_cli.session.model import Owner

_DEPTH = 6  # how deep closures, wrappers and containers are followed before giving up
_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), range, slice)


def probe() -> str | None:
    """None when ``forget_yours`` can run on this JAX, else what is missing. Never raises."""
    try:
        return _probe()
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot inspect JAX's caches ({type(exc).__name__}: {exc})"


def _probe() -> str | None:
    hooks_missing = hooks.probe()  # only where the recorder's own hooks run (JAX >= 0.9)
    if hooks_missing is not None:
        return hooks_missing
    try:
        # lazy: capture loads before the job's environment is set
        from jax._src import lib, pjit, util
        from jax._src.interpreters import partial_eval as pe
    except Exception as exc:
        return f"cannot import JAX internals ({exc})"
    needed = {
        "jax._src.util._caches": getattr(util, "_caches", None),
        "partial_eval.trace_to_jaxpr.cache_keys": getattr(
            getattr(pe, "trace_to_jaxpr", None), "cache_keys", None),
        "partial_eval.trace_to_jaxpr.evict_weakref": getattr(
            getattr(pe, "trace_to_jaxpr", None), "evict_weakref", None),
        "pjit._infer_params_cached.evict_weakref": getattr(
            getattr(pjit, "_infer_params_cached", None), "evict_weakref", None),
        "pjit._cpp_pjit_cache_fun_only": getattr(pjit, "_cpp_pjit_cache_fun_only", None),
        "pjit._cpp_pjit_cache_explicit_attributes": getattr(
            pjit, "_cpp_pjit_cache_explicit_attributes", None),
        "PjitFunctionCache.clear_all": getattr(
            getattr(getattr(lib, "_jax", None), "PjitFunctionCache", None), "clear_all", None),
    }
    missing = [name for name, obj in needed.items() if obj is None]
    if missing:
        return "this JAX lacks " + ", ".join(missing)
    return None


def forget_yours() -> str | None:
    """Forget every trace (and so every program) of the functions outside JAX; keep JAX's own.

    Returns None when done, else why it could not be (nothing was forgotten then: the caller
    clears every cache instead). Never raises."""
    reason = probe()
    if reason is not None:
        return reason
    try:
        _forget()
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"could not forget the functions outside JAX ({type(exc).__name__}: {exc})"
    return None


class _Memo:
    """What earlier passes found, so that a pass looks only at what is new since: the caches
    not keyed by functions (by the jaxpr: most of them), the functions found JAX's own, and the
    argument parts of cache entries found to hold nothing outside JAX (the objects are held,
    so that their ids stay theirs; an entry JAX dropped is forgotten here at ``LIMIT``)."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self.unkeyed: dict[int, Any] = {}
        self.own: dict[int, tuple[Any, bool]] = {}
        self.safe: dict[tuple[int, ...], tuple[Any, ...]] = {}

    def bound(self) -> None:
        for table in (self.own, self.safe):
            if len(table) > self.LIMIT:
                table.clear()


_MEMO = _Memo()


def _forget() -> None:
    from jax._src import lib, pjit, util  # lazy: capture loads before the job's environment is set

    memo = _MEMO
    memo.bound()
    own: dict[int, tuple[Any, bool]] = {}  # this pass's: user functions are not kept past it
    held: list[tuple[Any, dict[int, Any]]] = []  # each cache keyed by function: its functions
    forget: dict[int, Any] = {}  # decided over every cache: a function unsafe in one goes
    for cache in list(util._caches.keys()):
        if id(cache) in memo.unkeyed or type(cache).__name__ == "MultiWeakrefLRUCache":
            continue  # by jaxpr; or by several weak values (0.12: abstract evaluation)
        if not (hasattr(cache, "cache_keys") and hasattr(cache, "evict_weakref")):
            if hasattr(cache, "evict_function"):  # linear_util.cache: by function, unlisted
                cache.cache_clear()
            continue
        try:
            functions = _functions(cache, memo, own, forget)
        except Exception:  # a cache unlike the others: forget all of it (time, never counts)
            cache.cache_clear()
            continue
        if functions is not None:
            held.append((cache, functions))
    for cache, functions in held:
        try:
            for number in functions.keys() & forget.keys():
                cache.evict_weakref(forget[number])
        except Exception:
            cache.cache_clear()
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()
    getattr(lib, "_jax").PjitFunctionCache.clear_all()  # noqa: B009 - not exported (mypy)


def _functions(cache: Any, memo: _Memo, own: dict[int, tuple[Any, bool]],
               forget: dict[int, Any]) -> dict[int, Any] | None:
    """The functions ``cache`` holds entries for (None: it is keyed by something else, noted
    for later passes), each one not JAX's own, or handed something else, put in ``forget``."""
    keys = cache.cache_keys()
    if not keys:
        return {}
    functions: dict[int, Any] = {}
    for key in keys:
        fun = _referent(key)
        if fun is None or not callable(fun):
            if not functions and fun is not None:  # keyed by a jaxpr, say: so is every entry
                memo.unkeyed[id(cache)] = cache
                return None
            continue
        functions[id(fun)] = fun
        if id(fun) in forget:
            continue
        if not _jax_own(fun, own) or not _key_safe(key, own, memo):
            forget[id(fun)] = fun
    return functions


def _key_safe(key: Any, own: dict[int, tuple[Any, bool]], memo: _Memo) -> bool:
    """A cache entry's arguments (past the function and the tracing context) hold nothing
    outside JAX; remembered by the arguments' objects (``cache_keys`` makes the tuples anew,
    but what is in them is what the entry keeps while it lives)."""
    parts = key[2:]
    if not parts:
        return True
    args, rest = parts[0], parts[1:]
    plain = type(args) is tuple and all(
        type(part) is dict and all(type(v) in _SCALARS for v in part.values())
        for part in rest)  # keyword arguments of plain data
    if plain:
        ids = tuple(map(id, args))
        known = memo.safe.get(ids)
        if known is not None and all(a is b for a, b in zip(known, args, strict=True)):
            return True
    safe = _safe(parts, own, _DEPTH)
    if safe and plain:
        memo.safe[ids] = args
    return safe


def _referent(key: Any) -> Any:
    """The object a weakref LRU cache key is for (its first element, a weak reference)."""
    if not isinstance(key, tuple) or not key:
        return None
    first = key[0]
    return first() if callable(first) and hasattr(first, "__callback__") else None


def _jax_own(fun: Any, own: dict[int, tuple[Any, bool]], depth: int = _DEPTH) -> bool:
    """Whether ``fun`` is JAX's alone: its code in JAX, and whatever it closes over, wraps or
    is bound to JAX's too (``jax.vmap(f)`` is defined in JAX but is ``f``'s)."""
    known = own.get(id(fun)) or _MEMO.own.get(id(fun))
    if known is None or known[0] is not fun:
        own[id(fun)] = (fun, True)  # while worked out: a closure reaching itself adds nothing
        known = own[id(fun)] = (fun, _own(fun, own, depth))
        if known[1]:
            _MEMO.own[id(fun)] = known  # JAX's own stays so: kept for later passes
    return known[1]


def _own(fun: Any, own: dict[int, tuple[Any, bool]], depth: int) -> bool:
    if depth <= 0:
        return False
    if isinstance(fun, functools.partial):
        return (_jax_own(fun.func, own, depth - 1)
                and _safe((fun.args, fun.keywords), own, depth - 1))
    if isinstance(fun, types.MethodType):
        return _jax_own(fun.__func__, own, depth - 1) and _safe(fun.__self__, own, depth - 1)
    wrapped = getattr(fun, "__wrapped__", None)
    if wrapped is not None and not _jax_own(wrapped, own, depth - 1):
        return False
    code = getattr(fun, "__code__", None)
    if isinstance(code, types.CodeType):
        if stack.owner_of(code.co_filename) != Owner.JAX:
            return False
        cells = getattr(fun, "__closure__", None) or ()
        contents = tuple(cell.cell_contents for cell in cells if _bound(cell))
        return _safe(contents, own, depth - 1) and _safe(
            tuple(getattr(fun, "__defaults__", None) or ()), own, depth - 1)
    if isinstance(fun, (types.BuiltinFunctionType, type)):
        return False  # a builtin, a class: not JAX's code (kept by nothing of JAX's anyway)
    # a callable object: JAX's class, and its attributes JAX's too (custom_jvp holds ``fun``)
    if _root(type(fun)) not in ("jax", "jaxlib"):
        return False
    return _safe(tuple(getattr(fun, "__dict__", {}).values()), own, depth - 1)


def _bound(cell: Any) -> bool:
    """A closure cell whose name is bound (an empty one raises on reading)."""
    try:
        cell.cell_contents  # noqa: B018 - reading it is the test
    except ValueError:
        return False
    return True


def _safe(value: Any, own: dict[int, tuple[Any, bool]], depth: int) -> bool:
    """Whether a value a JAX cache key (or a JAX function) holds reaches no function outside
    JAX: through plain containers, pytree structures (static arguments, node metadata) and
    jit's argument signatures, within ``depth`` levels (deeper: not known, so not safe). Other
    values are data (avals, JAX's own records such as ``PjitInfo``, meshes, a user's static
    data): equal data traces alike in any test."""
    if isinstance(value, (*_SCALARS, type, enum.Enum)):
        return True
    if depth <= 0:
        return False
    if type(value) in (tuple, list, frozenset, set):
        return all(_safe(v, own, depth - 1) for v in value)
    if type(value) is dict:
        return all(_safe(k, own, depth - 1) and _safe(v, own, depth - 1)
                   for k, v in value.items())
    if _is_treedef(value):
        return _safe_treedef(value, own, depth - 1)
    tree = getattr(value, "tree", None)  # JAX's FlatTree (the avals of a trace): its structure
    if tree is not None and _is_treedef(tree) and _root(type(value)) == "jax":
        return _safe_treedef(tree, own, depth - 1)
    static_args = getattr(value, "static_args", None)  # jax_jit.ArgumentSignature
    if static_args is not None and _root(type(value)) in ("jax", "jaxlib"):
        return _safe(tuple(static_args), own, depth - 1)
    if callable(value):
        return _jax_own(value, own, depth - 1)
    return True


def _is_treedef(value: Any) -> bool:
    return hasattr(value, "node_data") and hasattr(value, "children")


def _safe_treedef(treedef: Any, own: dict[int, tuple[Any, bool]], depth: int) -> bool:
    """A pytree structure holds nothing outside JAX in its node metadata (``Static(val=f)``:
    a static argument; a custom node's auxiliary data)."""
    pending = [treedef]
    while pending:
        node = pending.pop()
        data = node.node_data()
        if data is not None:
            kind, meta = data
            if kind.__name__ == "Static" and _root(kind) == "jax":
                meta = getattr(meta, "val", meta)
            if not _safe(meta, own, depth):
                return False
        pending.extend(node.children())
    return True


def _root(kind: type) -> str:
    return (getattr(kind, "__module__", None) or "").split(".", 1)[0]
