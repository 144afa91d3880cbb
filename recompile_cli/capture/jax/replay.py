"""How a traced call can be made again ahead of time (``session.warmup.Replay``), read from the
objects jit's cache-miss path sees (checked on JAX 0.10.2 and 0.12.0).

* **The jitted object**: where the user's code keeps it, the attribute of the function's module
  named by its qualified name, else any module-level name of that module, whose ``_jit_info``
  is the very ``JitInfo`` JAX traced with (``jax.jit``'s objects carry it as ``_jit_info`` on
  0.10.2 and 0.12.0). Nothing is imported to find it: modules not loaded yet hold nothing.
* **The arguments**, each as the call passed it: a static one as a ``Value`` (a literal, a
  module's object, a container, a dataclass or NamedTuple rebuilt from its fields and checked
  equal, a dtype); a dynamic one as its pytree's nodes, read from public ``jax.tree_util``
  treedefs (``node_data``, ``children``). What has no such form gets the reason instead.
* **The placement of each leaf**, from the lowering key's ``in_shardings`` (``_pjit_lower``'s
  first argument after the jaxpr): a committed device or a ``NamedSharding`` over a mesh of
  device ids, as ``placements`` reads them.

Runs on cache misses only (top-level traces and missed lowerings), inside the hooks' ``try``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax.arguments import pytrees
from recompile_cli.session.model import Owner
from recompile_cli.session.warmup import (
    Argument,
    Node,
    NodeKind,
    Placement,
    Replay,
    Value,
    ValueKind,
    references,
)

VALUE_NODES = 2000  # a static value or aux data with more parts than this is not written
_LITERAL_TYPES = (type(None), bool, int, str, bytes)


class NotReplayable(Exception):
    """A value or node with no form the plan can write; the message says why, and ``within``
    the objects around the part that has none (innermost first), none of them held by name."""

    def __init__(self, reason: str, within: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.within = within

    def __str__(self) -> str:
        if not self.within:
            return self.reason
        return (f"{self.reason}, inside a {' inside a '.join(self.within)} that no module-level "
                "name holds (keep that object at module level)")


# -- the jitted object ---------------------------------------------------------------------------
class _Found:
    """The jitted object found per ``JitInfo`` (one lookup per jit object, not per trace)."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, tuple[str | None, str | None]]] = {}
        self._lock = threading.Lock()

    def get(self, fun: Any, ji: Any) -> tuple[str | None, str | None]:
        known = self._known.get(id(ji))
        if known is not None and known[0] is ji:
            return known[1]
        found = _find_jitted(fun, ji)
        with self._lock:
            if len(self._known) >= self.LIMIT:
                self._known.clear()
            self._known[id(ji)] = (ji, found)  # holds ``ji``, so that its id stays its own
        return found


_FOUND = _Found()


def _find_jitted(fun: Any, ji: Any) -> tuple[str | None, str | None]:
    """(``module:qualname`` of the object whose ``_jit_info`` is ``ji``, or None with why)."""
    inner = stack.python_function(fun)
    module_name = getattr(inner, "__module__", None)
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module is None:
        return None, "its module is not known"
    qualname = getattr(inner, "__qualname__", None)
    if isinstance(qualname, str) and "<" not in qualname:
        candidate = _walk(module, qualname)
        if getattr(candidate, "_jit_info", None) is ji:
            return f"{module_name}:{qualname}", None
    for name, candidate in list(vars(module).items()):
        if getattr(candidate, "_jit_info", None) is ji and isinstance(name, str):
            return f"{module_name}:{name}", None
    held = _held_attribute(lambda c: getattr(c, "_jit_info", None) is ji)
    if held is not None:  # a library's wrapper (equinox.filter_jit, flax.nnx.jit) holding it
        return held, None
    return None, _not_held(fun, inner, str(module_name), qualname)


def _user_modules() -> list[tuple[str, Any]]:
    """(name, module) of the running script and every loaded module of the user's files."""
    main = sys.modules.get("__main__")
    out = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(name, str) and (module is main or (
                isinstance(file, str) and stack.is_user_file(file))):
            out.append((name, module))
    return out


def _held_attribute(wanted: Any) -> str | None:
    """``module:name.attribute`` where a module-level object of the user's modules holds, in
    its instance ``__dict__``, an object for which ``wanted`` is true (a library's jit wrapper
    and the ``jax.jit`` object inside it: equinox's ``_cached``, flax.nnx's ``jitted_fn``)."""
    for module_name, module in _user_modules():
        for name, holder in list(vars(module).items()):
            if not isinstance(name, str) or not name.isidentifier() or isinstance(
                    holder, type) or type(holder).__name__ == "module":
                continue
            try:
                attributes = vars(holder)
            except TypeError:
                continue
            for attribute, candidate in list(attributes.items()):
                if isinstance(attribute, str) and attribute.isidentifier() and wanted(candidate):
                    return f"{module_name}:{name}.{attribute}"
    return None


def _not_held(fun: Any, inner: Any, module: str, qualname: Any) -> str:
    where = f"no module-level name of {module} holds the jitted object"
    if stack.owner_of(getattr(sys.modules.get(module), "__file__", None)) != Owner.USER:
        return (f"jitted by a library's own wrapper ({module}: e.g. equinox.filter_jit, "
                "flax.nnx.jit) that no module-level name of your modules holds (a wrapper "
                "made inside a function)")
    if getattr(inner, "__name__", "") == "<lambda>":
        return f"a lambda jitted where {where} (a jit made per call)"
    if isinstance(qualname, str) and "<locals>" in qualname:
        outer = qualname.split(".<locals>", 1)[0]
        return (f"a function defined inside {outer}() and jitted there: {where} "
                "(a jit made per call)")
    if fun is not inner and hasattr(fun, "func"):
        return f"a functools.partial jitted where {where} (a jit made per call)"
    if hasattr(fun, "__self__"):
        return f"a bound method of an object: {where}"
    return f"jax.jit applied inside a function or at the call: {where}"


def _walk(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def ref_of(obj: Any) -> str | None:
    """``module:qualified.name`` of an object a loaded module holds under that name (a
    function, a class, an enum member, a module-level constant), else None."""
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(obj, enum.Enum):
        module_name = type(obj).__module__
        qualname = f"{type(obj).__qualname__}.{obj.name}"
    if isinstance(module_name, str) and isinstance(qualname, str) and "<" not in qualname:
        module = sys.modules.get(module_name)
        if module is not None and _walk(module, qualname) is obj:
            return f"{module_name}:{qualname}"
    owner = sys.modules.get(getattr(type(obj), "__module__", None) or "")
    if owner is not None:  # a module-level instance (a sentinel such as equinox's ``MISSING``)
        for name, candidate in list(vars(owner).items()):
            if candidate is obj and isinstance(name, str) and name.isidentifier():
                return f"{owner.__name__}:{name}"
    return held(obj)


def held(obj: Any) -> str | None:
    """``module:name...`` of ``obj`` where the user's code keeps it: a module-level name of a
    user's module (``tx = optax.adam(1e-3)``), a bound method of such an object
    (``model.apply``), or the function a module-level wrapper holds as ``__wrapped__`` (the
    function under ``equinox.filter_jit`` or ``flax.nnx.jit``); else None."""
    self = getattr(obj, "__self__", None)
    name = getattr(getattr(obj, "__func__", None), "__name__", None)
    if self is not None and isinstance(name, str) and name.isidentifier() \
            and not isinstance(self, type) and type(self).__name__ != "module":
        base = ref_of(self)
        try:
            same = base is not None and getattr(self, name) == obj
        except Exception:
            same = False
        if same:
            return f"{base}.{name}"
    modules = _user_modules()
    for module_name, module in modules:
        for key, candidate in list(vars(module).items()):
            if candidate is obj and isinstance(key, str) and key.isidentifier():
                return f"{module_name}:{key}"
    if callable(obj):
        for module_name, module in modules:
            for key, candidate in list(vars(module).items()):
                if isinstance(key, str) and key.isidentifier() and not isinstance(
                        candidate, type) and _wraps(candidate, obj):
                    return f"{module_name}:{key}.__wrapped__"
    return None


def _wraps(wrapper: Any, obj: Any) -> bool:
    try:
        return wrapper is not obj and getattr(wrapper, "__wrapped__", None) is obj
    except Exception:  # a property that raises
        return False


# -- values --------------------------------------------------------------------------------------
def value(obj: Any, budget: list[int] | None = None) -> Value:
    """``obj`` as a ``Value``, or ``NotReplayable`` saying why it has none."""
    budget = [VALUE_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise NotReplayable(f"it has more than {VALUE_NODES} parts")
    kind = type(obj)
    if kind in _LITERAL_TYPES or (kind in (float, complex) and _finite(obj)):
        return Value(ValueKind.LITERAL, repr(obj))
    if kind in (tuple, list):
        items = tuple(value(item, budget) for item in obj)
        return Value(ValueKind.TUPLE if kind is tuple else ValueKind.LIST, items=items)
    if kind is dict:
        pairs = [part for key, item in obj.items()
                 for part in (value(key, budget), value(item, budget))]
        return Value(ValueKind.DICT, items=tuple(pairs))
    if isinstance(obj, (enum.Enum, type)):
        return _ref(obj)
    if _is_treedef(obj):
        return Value(ValueKind.TREEDEF, nodes=_nodes(obj, budget))
    named_tuple = isinstance(obj, tuple) and hasattr(kind, "_fields")
    if named_tuple or dataclasses.is_dataclass(obj):
        try:
            if named_tuple:
                return Value(ValueKind.NAMEDTUPLE, _class_ref(kind),
                             tuple(value(item, budget) for item in obj))
            return _dataclass(obj, budget)
        except NotReplayable as exc:  # not made again from its fields: the object by name?
            ref = held(obj)
            if ref is None:
                raise NotReplayable(exc.reason, (*exc.within, kind.__qualname__)) from None
            return Value(ValueKind.REF, ref)
    if _is_dtype(obj):
        return Value(ValueKind.DTYPE, str(obj.name))
    ref = ref_of(obj)
    if ref is not None:
        return Value(ValueKind.REF, ref)
    if isinstance(obj, Mapping) and not isinstance(obj, type):
        return _mapping(obj, budget)
    if callable(obj):
        qualname = getattr(obj, "__qualname__", None)
        if isinstance(qualname, str) and "<locals>" in qualname:
            outer = qualname.split(".<locals>", 1)[0]
            raise NotReplayable(f"{_short(obj)} is a function made inside {outer}() (compared "
                                "by identity) that no module-level name holds")
        raise NotReplayable(f"{_short(obj)} is not held by any module under its name")
    raise NotReplayable(f"{_short(obj)} is a {kind.__qualname__}, which has no literal form")


def _is_treedef(obj: Any) -> bool:
    kind = type(obj)
    return kind.__name__ == "PyTreeDef" and kind.__module__.startswith("jax")


def _mapping(obj: Any, budget: list[int]) -> Value:
    """A Mapping whose class, given a dict of its items, makes one equal to it (flax.nnx's
    ``HashableMapping`` and ``PrettyMapping`` in a ``GraphDef``)."""
    kind = type(obj)
    ref = _class_ref(kind)
    items = dict(obj.items())
    try:
        rebuilt = kind(items)
        same = bool(rebuilt == obj) and (kind.__hash__ is None or hash(rebuilt) == hash(obj))
    except Exception:
        same = False
    if not same:
        raise NotReplayable(f"a {kind.__qualname__} made again from a dict of its items is not "
                            "equal to it")
    pairs = [part for key, item in items.items()
             for part in (value(key, budget), value(item, budget))]
    return Value(ValueKind.MAPPING, ref, tuple(pairs))


def _ref(obj: Any) -> Value:
    ref = ref_of(obj)
    if ref is None:
        raise NotReplayable(f"{_short(obj)} is not held by any module under its name")
    return Value(ValueKind.REF, ref)


def _finite(number: Any) -> bool:
    parts = (number.real, number.imag) if isinstance(number, complex) else (number,)
    return all(math.isfinite(part) for part in parts)


def _class_ref(kind: type) -> str:
    ref = ref_of(kind)
    if ref is None:
        raise NotReplayable(f"its class {kind.__qualname__} is not importable (defined inside a "
                         "function?)")
    return ref


def _dataclass(obj: Any, budget: list[int]) -> Value:
    kind = type(obj)
    ref = _class_ref(kind)
    fields = dataclasses.fields(obj)
    if any(not f.init for f in fields):
        raise NotReplayable(f"{kind.__qualname__} has fields its __init__ does not take")
    given = {f.name: getattr(obj, f.name) for f in fields}
    try:
        rebuilt = kind(**given)
        same = bool(rebuilt == obj) and hash(rebuilt) == hash(obj)
    except Exception:
        same = False
    if not same:
        raise NotReplayable(f"a {kind.__qualname__} made again from its fields is not equal to "
                         "it (it compares by identity, or its __init__ changes them)")
    return Value(ValueKind.DATACLASS, ref, tuple(value(item, budget) for item in given.values()),
                 tuple(given))


def _is_dtype(obj: Any) -> bool:
    kind = type(obj)
    return kind.__module__ == "numpy" and kind.__name__.startswith("dtype") and hasattr(
        obj, "name")


def _short(obj: Any, limit: int = 60) -> str:
    try:
        text = pytrees.bounded_repr(obj)  # a user's repr may hang: bounded in time
    except Exception:
        text = f"<{type(obj).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- pytrees -------------------------------------------------------------------------------------
def tree(obj: Any) -> tuple[Node, ...]:
    """The pytree of one dynamic argument, its nodes in pre-order (``NotReplayable`` naming the
    node that has no form)."""
    import jax  # lazy: capture loads before the job's environment is set

    return _nodes(jax.tree_util.tree_structure(obj), None)


def _nodes(treedef: Any, budget: list[int] | None) -> tuple[Node, ...]:
    """A treedef's nodes in pre-order (``NotReplayable`` naming the node that has no form).
    ``budget``: the parts left to a static value that holds the treedef, each node one; None
    for an argument's own pytree (each node's data then has its own)."""
    out: list[Node] = []
    pending: list[Any] = [treedef]
    while pending:
        if budget is not None:
            budget[0] -= 1
            if budget[0] < 0:
                raise NotReplayable(f"it has more than {VALUE_NODES} parts")
        treedef = pending.pop()
        data = treedef.node_data()
        children = treedef.children()
        pending.extend(reversed(children))
        if data is None:
            out.append(Node(NodeKind.LEAF))
            continue
        kind, aux = data
        out.append(_node(kind, aux, len(children), budget))
    return tuple(out)


_PLAIN = {type(None): NodeKind.NONE, tuple: NodeKind.TUPLE, list: NodeKind.LIST}


def _node(kind: Any, aux: Any, arity: int, budget: list[int] | None) -> Node:
    plain = _PLAIN.get(kind)
    if plain is not None:
        return Node(plain, arity)
    if kind is dict:
        try:
            return Node(NodeKind.DICT, arity, keys=tuple(value(key, budget) for key in aux))
        except NotReplayable as exc:
            raise NotReplayable(f"a dict key: {exc}") from None
    name = getattr(kind, "__qualname__", repr(kind))
    if isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields") \
            and aux is None:
        return Node(NodeKind.NAMEDTUPLE, arity, type=_class_ref(kind))
    try:
        data = None if aux is None else value(aux, budget)
    except NotReplayable as exc:
        raise NotReplayable(f"the static data of its {name} node: {exc}") from None
    return Node(NodeKind.CUSTOM, arity, type=_class_ref(kind), aux=data)


# -- one call ------------------------------------------------------------------------------------
def replay(fun: Any, ji: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
           params: Sequence[str], static_nums: set[int], static_names: set[str]) -> Replay:
    """How the call ``fun(*args, **kwargs)`` under the jit of ``ji`` can be made again."""
    ref, problem = _FOUND.get(fun, ji)
    arguments = [_argument(params[i] if i < len(params) else f"args[{i}]", v, False,
                           i in static_nums) for i, v in enumerate(args)]
    arguments += [_argument(k, kwargs[k], True, k in static_names) for k in sorted(kwargs)]
    return Replay(ref, tuple(arguments), problem, _files(ref, arguments))


def _argument(name: str, obj: Any, keyword: bool, static: bool) -> Argument:
    try:
        if static:
            return Argument(name, keyword, static=value(obj))
        return Argument(name, keyword, tree=tree(obj))
    except NotReplayable as exc:
        return Argument(name, keyword, problem=str(exc))
    except Exception as exc:  # an object whose methods raise: say so, never guess
        return Argument(name, keyword, problem=f"reading it raised {type(exc).__name__}")


def _files(ref: str | None, arguments: list[Argument]) -> dict[str, str]:
    """The files of the user's modules the replay refers to (a script's ``__main__``, a module
    imported from a file), which a plan may have to load by path."""
    modules = {ref.partition(":")[0]} if ref else set()
    modules |= {text.partition(":")[0] for text in references(tuple(arguments))}
    out = {}
    for name in sorted(modules):
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and (name == "__main__" or stack.owner_of(path) == Owner.USER):
            out[name] = path
    return out


# -- lowering a traced jit again ---------------------------------------------------------------
class _Jit:
    """What ``jax._src.pjit.jit_lower`` reads of a ``jax.jit`` object: ``_fun`` and
    ``_jit_info`` (JAX 0.10.2 and 0.12.1), so that the function a trace saw is lowered under
    the very ``JitInfo`` it was traced with, filling the caches its jit object's calls hit."""

    def __init__(self, fun: Any, ji: Any) -> None:
        self._fun, self._jit_info = fun, ji

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        from jax._src import pjit  # lazy: capture loads before the job's environment is set

        return pjit.jit_lower(self, *args, **kwargs)


def lowerable(fun: Any, ji: Any) -> Any | None:
    """An object whose ``lower(*args, **kwargs)`` lowers ``fun`` as its jit does (for a
    warm-up at a first call); None where JAX has no ``pjit.jit_lower`` (feature-detected)."""
    from jax._src import pjit  # lazy: capture loads before the job's environment is set

    if not callable(getattr(pjit, "jit_lower", None)):
        return None
    return _Jit(fun, ji)


# -- placements ----------------------------------------------------------------------------------
def placements(in_shardings: Sequence[Any]) -> tuple[tuple[Placement, ...], tuple[int, ...]]:
    """(the distinct placements, each leaf's: 0 for none, else 1 + its index) of a lowering's
    ``in_shardings``; ``((), ())`` when no leaf is placed."""
    found: dict[int, int] = {}
    distinct: list[Placement] = []
    indices = []
    for sharding in in_shardings:
        key = id(sharding)
        index = found.get(key)
        if index is None:
            described = placement(sharding)
            if described is None:
                index = 0
            else:
                if described in distinct:
                    index = distinct.index(described) + 1
                else:
                    distinct.append(described)
                    index = len(distinct)
            found[key] = index
        indices.append(index)
    if not distinct:
        return (), ()
    return tuple(distinct), tuple(indices)


def placement(sharding: Any) -> Placement | None:
    """One leaf's sharding in a lowering key: None when unspecified (the array follows the
    computation), else a ``Placement`` (with ``problem`` for a kind the plan cannot build)."""
    kind = type(sharding).__name__
    if sharding is None or kind == "UnspecifiedValue":
        return None
    memory = getattr(sharding, "memory_kind", None)
    memory_kind = memory if isinstance(memory, str) else None
    if kind == "SingleDeviceSharding":
        device = next(iter(sharding.device_set))
        return Placement("device", (int(device.id),), str(device.platform),
                         memory_kind=memory_kind)
    if kind != "NamedSharding":
        return Placement("other", problem=f"a {kind}, which the plan does not build")
    mesh = sharding.mesh
    devices = getattr(mesh, "devices", None)
    if devices is None or not hasattr(devices, "flat"):
        return Placement("mesh", problem="a NamedSharding over an abstract mesh (no devices)")
    ids = tuple(int(d.id) for d in devices.flat)
    spec = sharding.spec
    problem = None
    entries = tuple(spec)
    if getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        problem = "a PartitionSpec with unreduced or reduced axes"
    elif not all(e is None or isinstance(e, str)
                 or (isinstance(e, tuple) and all(isinstance(n, str) for n in e))
                 for e in entries):
        problem = f"a PartitionSpec entry the plan does not write ({_short(spec)})"
    axis_types = tuple(str(getattr(t, "name", t)) for t in getattr(mesh, "axis_types", ()) or ())
    return Placement("mesh", ids, str(devices.flat[0].platform), tuple(devices.shape),
                     tuple(str(n) for n in mesh.axis_names), axis_types, repr(entries),
                     memory_kind, problem)
