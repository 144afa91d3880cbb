"""Stale statics: a static argument equal to the one an executable was compiled for, with
other state.

JAX looks a static argument up by ``__hash__`` and ``__eq__``; a config whose ``__eq__`` compares
its name only, a dataclass with ``field(compare=False)``, or a module changed in place finds the
executable compiled for the old state, which runs with the old values. ``describe`` takes a
bounded description of a static's state (dataclass and named-tuple fields, ``__dict__``,
``__slots__``, one level of nesting, simple values only). ``StaticWatch`` keeps, per function and
argument, the descriptions each equal value was traced with:

* at each trace (the miss path), a value equal to an earlier one but described otherwise is a
  finding seen by a trace (``seen="trace"``): an executable compiled for the old state exists;
* under ``--count-calls`` (``capture.counting``), after each counted call that traced nothing,
  a value whose description differs from every description its equal value was traced with
  ran an executable compiled for other values (``seen="call"``). Only counting sees a cache hit:
  without it no code of ours runs on one. Such a call traced nothing, so JAX did find a key
  equal to the value: the object it was compiled for changed in place counts too, even where
  its hash changed with its state (``_Equal.matches``: what JAX versions do differs there).

A difference is reported only where the traced code may read it: a field whose name no code
reachable from the traced function loads (its own code, the functions it names, the static's
class's methods) is left out; code that reads fields by name at run time (``getattr``,
``vars``, ``dataclasses.asdict``, ``jax.tree.map``) or code that cannot be read counts as
reading everything.
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import functools
import inspect
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Literal

import msgspec

from recompile_cli.capture import stale
from recompile_cli.capture.code.stack import is_user_file, python_function
from recompile_cli.session.model import StaleStatic, StaticDifference

FIELDS = 32  # described fields per static
PER_TABLE = 16  # equal values kept per function and argument
SNAPSHOTS = 8  # descriptions kept per equal value
CODE_LIMIT = 256  # code objects read to find what the traced code may load
_STATELESS = (type(None), bool, int, float, complex, str, bytes, enum.Enum, type,
              types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
              types.MethodType, functools.partial)
# names whose load means fields are read by name at run time: every field counts as read
_READS_ALL = frozenset({"getattr", "vars", "asdict", "astuple", "__dict__", "fields", "replace",
                        "map", "tree_map", "tree_leaves", "leaves", "tree_flatten", "flatten",
                        "__getattribute__", "dir"})
_METHODS = frozenset({"__call__", "__getattr__", "__getitem__", "__iter__", "__len__",
                      "__bool__", "__int__", "__float__", "__index__", "__post_init__"})

Description = dict[str, tuple[Any, str]]  # field path -> (fingerprint, repr)


def describe(value: Any) -> Description | None:
    """The state of ``value`` (None when it has none to describe): its fields' simple values,
    by paths relative to it (``dropout``, ``inner.rate``), at most ``FIELDS`` of them."""
    out: Description = {}
    for path, item in _walk(value, "", 2):
        seen = stale._fingerprint(item)
        if seen is not None:
            out[path] = seen
            if len(out) >= FIELDS:
                break
    return out or None


def _walk(value: Any, prefix: str, depth: int) -> Iterator[tuple[str, Any]]:
    for name, item in _fields(value):
        path = f"{prefix}{name}"
        yield path, item
        if depth > 1 and stale._fingerprint(item) is None:
            yield from _walk(item, f"{path}.", depth - 1)


def _fields(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, _STATELESS):
        return []
    try:
        if isinstance(value, tuple):
            names = getattr(type(value), "_fields", None)  # a named tuple
            if isinstance(names, tuple):
                return list(zip(names, value, strict=False))[:FIELDS]
            return [(f"[{i}]", v) for i, v in enumerate(value[:FIELDS])]
        if dataclasses.is_dataclass(value):
            return [(f.name, getattr(value, f.name, None))
                    for f in dataclasses.fields(value)][:FIELDS]
        found: dict[str, Any] = {}
        state = getattr(value, "__dict__", None)
        if isinstance(state, dict):
            found.update((k, v) for k, v in list(state.items())[:FIELDS]
                         if isinstance(k, str) and "__" not in k)
        for kind in type(value).__mro__:
            slots = kind.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if isinstance(name, str) and "__" not in name and hasattr(value, name):
                    found.setdefault(name, getattr(value, name))
        return list(found.items())[:FIELDS]
    except Exception:  # a property or __getattr__ that raises: nothing known
        return []


class _Equal:
    """One value JAX finds equal to later ones, and the descriptions it was traced with."""

    __slots__ = ("hash", "ref", "snapshots", "type")

    def __init__(self, value: Any, value_hash: int, snapshot: Description) -> None:
        self.type, self.hash = type(value), value_hash
        try:
            self.ref: Callable[[], Any] = weakref.ref(value)
        except TypeError:
            self.ref = functools.partial(lambda v: v, value)
        self.snapshots = [snapshot]

    def matches(self, value: Any, value_hash: int, reused: bool = False) -> bool:
        """Whether JAX finds ``value`` equal to the key it compiled for: the same type, hash
        and ``==``. ``reused``: a call that traced nothing, so JAX did find a key equal to it;
        JAX's key holds the earlier object itself, and JAX 0.10.2 finds that object equal to
        itself once changed in place even where its hash changed with its state (and a new
        object equal to its new state), where JAX 0.12.1 traces again: the same object, or
        the earlier object's hash now, then match too. At a trace, only the hash it was
        traced with counts (whether JAX would reuse is not known there)."""
        if type(value) is not self.type:
            return False
        earlier = self.ref()
        if earlier is None:
            return False
        if earlier is value and (reused or value_hash == self.hash):
            return True
        try:
            if value_hash != self.hash and not (reused and value_hash == hash(earlier)):
                return False
            return bool(earlier == value)
        except Exception:
            return False

    def changed_in_place(self, value: Any) -> bool:
        """Whether the object JAX compiled for was changed in place since its trace: it is
        ``value`` itself, or its state is no longer what it was traced with."""
        earlier = self.ref()
        return earlier is value or (earlier is not None
                                    and describe(earlier) != self.snapshots[0])


class _Table:
    __slots__ = ("entries", "fun")

    def __init__(self, fun: Any) -> None:
        self.entries: list[_Equal] = []
        try:
            self.fun: Callable[[], Any] = weakref.ref(fun)
        except TypeError:
            self.fun = lambda: None


class StaticWatch:
    """The static arguments of the user's functions, described at each trace of one recording;
    ``counting``: calls are counted (each cache hit is checked)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], _Table] = {}
        self._found: dict[tuple[str, str], StaleStatic] = {}
        self._reuses: dict[tuple[str, str], int] = {}
        self._traces: dict[str, int] = {}
        self._lock = threading.Lock()
        self.counting = False
        # (function, argument, type) of statics whose equality looks at less than their state
        self.partial: dict[tuple[str, str], str] = {}

    def traces(self, key: str) -> int:
        """How many traces of the function ``key`` were seen (a counted call compares it)."""
        return self._traces.get(key, 0)

    def traced(self, key: str, name: str, defined_at: str | None, fun: Any,
               values: dict[str, Any]) -> None:
        """A trace of ``name`` (``key``) with these static arguments (by parameter name)."""
        with self._lock:
            self._traces[key] = self._traces.get(key, 0) + 1
        for param, value in values.items():
            snapshot = describe(value)
            value_hash = _hash(value)
            if snapshot is None or value_hash is None:
                continue
            table = self._tables.get((key, param))
            if table is None:
                table = self._tables[(key, param)] = _Table(python_function(fun))
                if len(self.partial) < 8 and compares_part(type(value), snapshot):
                    self.partial[(name, param)] = _type_name(type(value))
            entry = next((e for e in reversed(table.entries)
                          if e.matches(value, value_hash)), None)
            if entry is None:
                table.entries.append(_Equal(value, value_hash, snapshot))
                del table.entries[:-PER_TABLE]
                continue
            if snapshot not in entry.snapshots:
                self._note(key, name, defined_at, param, value, table, entry.snapshots[0],
                           snapshot, "trace", entry.changed_in_place(value))
                entry.snapshots.append(snapshot)
                del entry.snapshots[1:-SNAPSHOTS]

    def called(self, key: str, name: str, defined_at: str | None,
               values: dict[str, Any]) -> None:
        """A counted call of ``key`` that traced nothing, with these static arguments: one
        whose state differs from every state its equal value was traced with ran stale."""
        for param, value in values.items():
            table = self._tables.get((key, param))
            if table is None:
                continue
            value_hash = _hash(value)
            entry = next((e for e in reversed(table.entries)
                          if value_hash is not None and e.matches(value, value_hash, True)),
                         None)
            if entry is None:
                continue
            snapshot = describe(value)
            if snapshot is not None and snapshot not in entry.snapshots:
                self._note(key, name, defined_at, param, value, table, entry.snapshots[0],
                           snapshot, "call", entry.changed_in_place(value))

    def _note(self, key: str, name: str, defined_at: str | None, param: str, value: Any,
              table: _Table, then: Description, now: Description,
              seen: Literal["call", "trace"], in_place: bool = False) -> None:
        paths = sorted(set(then) | set(now), key=lambda p: (p.count("."), p))
        differs = [p for p in paths if then.get(p, (None,))[0] != now.get(p, (None,))[0]]
        reads = reads_of(table.fun(), type(value))
        if reads is not None:
            differs = [p for p in differs if all(part in reads for part in p.split("."))]
        if not differs:
            return
        differences = tuple(StaticDifference(f"{param}.{p}", then.get(p, (None, "unset"))[1],
                                             now.get(p, (None, "unset"))[1])
                            for p in differs[:8])
        with self._lock:
            self._reuses[(key, param)] = self._reuses.get((key, param), 0) + 1
            earlier = self._found.get((key, param))
            if earlier is not None and (earlier.seen == "call" or seen == "trace"):
                return
            self._found[(key, param)] = StaleStatic(
                name, defined_at, param, _type_name(type(value)), differences,
                compares(type(value), [p.split(".")[0] for p in differs], in_place), seen)

    def findings(self) -> list[StaleStatic]:
        with self._lock:
            return [msgspec.structs.replace(found, seen_times=self._reuses.get(k, 1))
                    for k, found in self._found.items()]


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:
        return None


def _type_name(kind: type) -> str:
    name = getattr(kind, "__qualname__", None) or getattr(kind, "__name__", None)
    return name if isinstance(name, str) else str(kind)


def compares(kind: type, differing: list[str], in_place: bool = False) -> str:
    """What ``kind``'s equality looks at, as the warning says it: "`Config.__eq__` compares
    `name` only", "`Model` compares by identity (changed in place)"; ``in_place``: the value is
    the object the executable was compiled for, changed in place since."""
    name = _type_name(kind)
    eq = getattr(kind, "__eq__", None)
    if eq is object.__eq__:
        return f"`{name}` compares by identity, so the same object changed in place is equal"
    if in_place:
        return (f"the `{name}` object the executable was compiled for was changed in place "
                "after the compile: JAX's cache holds that object, so it finds it equal to "
                "itself and to any value equal to its new state, whatever `__eq__` and "
                "`__hash__` compare")
    if dataclasses.is_dataclass(kind) and "__eq__" in kind.__dict__:
        compared = [f.name for f in dataclasses.fields(kind) if f.compare]
        if len(compared) < len(dataclasses.fields(kind)):
            shown = ", ".join(f"`{n}`" for n in compared) or "no field"
            return f"`{name}.__eq__` compares {shown} only (the others have compare=False)"
    code = getattr(eq, "__code__", None)
    if code is not None:
        try:
            loaded = {i.argval for i in dis.get_instructions(code)
                      if i.opname in ("LOAD_ATTR", "LOAD_METHOD") and isinstance(i.argval, str)}
        except Exception:
            loaded = set()
        if loaded:
            shown = ", ".join(f"`{n}`" for n in sorted(loaded))
            return f"`{name}.__eq__` compares {shown} only"
    shown = ", ".join(f"`{n}`" for n in dict.fromkeys(differing))
    return f"`{name}.__eq__` does not compare {shown}"


def compares_part(kind: type, snapshot: Description) -> bool:
    """Whether ``kind``'s equality leaves out some of the described state (a dataclass field
    with compare=False, an ``__eq__`` that loads fewer fields): the run's hint that only
    ``--count-calls`` would see a stale reuse. Not identity: a static ``self`` compared by
    identity is JAX's own recipe for jitting a method (purejaxrl's environment wrappers, every
    ``partial(jax.jit, static_argnums=0)`` method), stale only if changed in place, which
    ``--count-calls`` and a later trace still catch; a hint on each such program says
    nothing of it."""
    eq = getattr(kind, "__eq__", None)
    if eq is object.__eq__:
        return False
    if dataclasses.is_dataclass(kind) and "__eq__" in kind.__dict__:
        return not all(f.compare for f in dataclasses.fields(kind))
    code = getattr(eq, "__code__", None)
    if code is None or isinstance(kind, tuple):
        return False
    try:
        attributes, globals_ = _code_names(code)
    except Exception:
        return False
    if (attributes | globals_) & _READS_ALL:
        return False
    return bool({p.split(".")[0] for p in snapshot} - attributes)


@functools.lru_cache(maxsize=256)
def _code_names(code: types.CodeType) -> tuple[frozenset[str], frozenset[str]]:
    """(attribute names and string constants, global names) ``code`` and its nested code
    load."""
    attributes: set[str] = set()
    globals_: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        for instruction in dis.get_instructions(current):
            value = instruction.argval
            if not isinstance(value, str):
                continue
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF"):
                globals_.add(value)
            elif instruction.opname.startswith("LOAD_") or instruction.opname == "IMPORT_FROM":
                attributes.add(value)
        for const in current.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
            elif isinstance(const, str):
                attributes.add(const)
    return frozenset(attributes), frozenset(globals_)


def reads_of(fun: Any, kind: type) -> frozenset[str] | None:
    """The attribute names the code traced from ``fun`` may load on a static of type ``kind``
    (its code, the user functions and classes it names, ``kind``'s own methods, but dunders
    other than ``_METHODS``); None when that cannot be known (code that reads by name at run
    time, code that cannot be read, more than ``CODE_LIMIT`` code objects)."""
    if fun is None:
        return None
    try:
        return _reads(fun, kind)
    except Exception:
        return None


def _reads(fun: Any, kind: type) -> frozenset[str] | None:
    names: set[str] = set()
    queue: list[Any] = [fun, *_methods(kind)]
    seen: set[int] = set()
    while queue:
        item = queue.pop()
        code = getattr(item, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        if len(seen) > CODE_LIMIT:
            return None
        attributes, globals_ = _code_names(code)
        if (attributes | globals_) & _READS_ALL:
            return None
        names |= attributes
        scope = getattr(item, "__globals__", {}) or {}
        cells = dict(zip(code.co_freevars, getattr(item, "__closure__", None) or (),
                         strict=False))
        for name in globals_:
            if name in cells:
                try:
                    target = cells[name].cell_contents
                except ValueError:
                    continue
            else:
                target = scope.get(name)
            if isinstance(target, type) and is_user_file(
                    getattr(inspect.getmodule(target), "__file__", None) or ""):
                queue.extend(_methods(target, every=True))
            target = python_function(target) if callable(target) else None
            inner = getattr(target, "__code__", None)
            if inner is not None and is_user_file(inner.co_filename):
                queue.append(target)
    return frozenset(names)


def _methods(kind: type, every: bool = False) -> list[Any]:
    """The functions of ``kind``'s classes (not ``object``'s): its methods and properties,
    but dunders other than ``_METHODS`` (unless ``every``)."""
    out: list[Any] = []
    for klass in kind.__mro__[:-1]:
        for name, member in vars(klass).items():
            if not every and name.startswith("__") and name not in _METHODS:
                continue
            if isinstance(member, property):
                out += [f for f in (member.fget, member.fset) if f is not None]
            elif isinstance(member, (staticmethod, classmethod)):
                out.append(member.__func__)
            elif isinstance(member, (types.FunctionType, functools.cached_property)):
                out.append(getattr(member, "func", member))
    return out
