"""Pytree structures: a diffable description of an argument's structure (checked on JAX 0.10.2,
flax 0.12, equinox 0.13). ``structure`` stores a large one, or one with static data in a custom
node, as a node map (``session.structures``) that ``analysis.causes.explain`` diffs path by
path; ``static_nodes`` does the same for a static pytree, ``full_repr`` is the text stored
values are compared by. Public JAX API only (``jax.tree_util``); library objects are
duck-typed, and anything unexpected leaves the plain texts. Cache misses only.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import queue
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from recompile_cli.capture.code.branches import mode_switch
from recompile_cli.capture.code.function_names import function_name, named_functions
from recompile_cli.capture.jax.arguments.telling import type_name
from recompile_cli.session.structures import (
    ATTR,
    AUX,
    FIELD,
    LEAF,
    WHOLE_AUX,
    Note,
    node_map_text,
    with_note,
)

# Stored values longer than this keep a prefix and a digest of the whole (compared in full).
FULL_LIMIT = 4000


def full_repr(value: Any) -> str:
    """``value``'s text (``value_text``)."""
    return value_text(value)[0]


def value_text(value: Any) -> tuple[str, bool]:
    """(``repr(value)``, whether ``value`` is or holds a function), a function shown by its
    name (``function_names``): whole up to ``FULL_LIMIT`` characters; longer ones keep a
    prefix and a digest of the full text, so that two values compare equal exactly when their
    texts do."""
    try:
        name = function_name(value, full_repr)
        text, function = (name, True) if name is not None else named_functions(bounded_repr(value))
    except Exception:
        text, function = f"<{type(value).__name__}>", False
    if len(text) <= FULL_LIMIT:
        return text, function
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{text[:FULL_LIMIT // 2]}... [{len(text)} chars, sha256 {digest}]", function


# Types whose repr is Python's own and holds no other object's: taken at once, in this thread.
_PLAIN_REPR = frozenset({int, float, bool, complex, str, bytes, type(None)})
REPR_SECONDS = 1.0  # a user's repr that takes longer is not waited for


def bounded_repr(value: Any, seconds: float = REPR_SECONDS) -> str:
    """``repr(value)``; a repr of the user's (any type but Python's plain scalars) runs on a
    helper thread and is waited for ``seconds`` at most: one that hangs is left running there,
    and the value is shown as ``<Type: its repr did not return in 1 s>``. Raises what the
    repr raised."""
    if type(value) in _PLAIN_REPR or _plain_container(value, [_PLAIN_ITEMS]):
        return repr(value)
    return _REPRS.run(value, seconds)


_PLAIN_ITEMS = 256  # a container of more items than this goes to the helper thread


def _plain_container(value: Any, budget: list[int]) -> bool:
    """A tuple, list or frozenset of plain scalars (and of such containers), a few hundred
    items at most: its repr is Python's own all the way down (a shape, a tuple of axes)."""
    if type(value) not in (tuple, list, frozenset):
        return False
    budget[0] -= len(value)
    return budget[0] >= 0 and all(type(item) in _PLAIN_REPR or _plain_container(item, budget)
                                  for item in value)


class _ReprThread:
    """The helper thread of ``bounded_repr``: one at a time, started when first needed (and
    again after a fork or a repr that did not return: that thread keeps its own queue)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def run(self, value: Any, seconds: float) -> str:
        thread = self._thread
        if thread is threading.current_thread():  # a repr that reached the recorder again
            return repr(value)
        with self._lock:
            if thread is None or thread is not self._thread or not thread.is_alive():
                thread, jobs = self._start()
            jobs = self._jobs
        done = threading.Event()
        box: list[Any] = [None, None]
        jobs.put((value, box, done))
        if not done.wait(seconds):
            with self._lock:
                if self._thread is thread:  # it is stuck: the next repr gets a new thread
                    self._thread = None
            return f"<{type(value).__name__}: its repr did not return in {seconds:g} s>"
        if box[1] is not None:
            raise box[1]
        return str(box[0])

    def _start(self) -> tuple[threading.Thread, queue.SimpleQueue[Any]]:
        jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        thread = threading.Thread(target=_serve, args=(jobs,), daemon=True,
                                  name="recompile-cli repr")
        thread.start()
        self._thread, self._jobs = thread, jobs
        return thread, jobs


def _serve(jobs: queue.SimpleQueue[Any]) -> None:
    while True:
        value, box, done = jobs.get()
        try:
            box[0] = repr(value)
        except BaseException as exc:  # handed to the caller, which raises it
            box[1] = exc
        finally:
            del value
            done.set()


_REPRS = _ReprThread()


# -- structures --------------------------------------------------------------------------
Classify = Callable[[str, Any, str], Any]  # (path, value, its text) -> its ``equality.Klass``
_UNKNOWN = object()  # a node whose value could not be followed


class _Array:
    def __repr__(self) -> str:
        return "array"


ARRAY = _Array()  # stands for an array in a static pytree (equinox's static part of an argument)


def structure(value: Any, classify: Classify | None = None) -> str:
    """The pytree structure of one argument: ``*`` for one array, else a node map
    (``session.structures``) with a line per node and per leaf (``*``), by the paths JAX names
    the leaves with: containers by their kind (their keys and lengths are in their children's
    paths), a custom node by its type and its static data (per named field where the node is a
    dataclass: ``.tx``, else as a whole: ``.<aux>``), a Flax NNX graph by its modules,
    variables and static attributes. ``classify`` gives static data its equality class
    (``equality.EqualityClasses``), so that a value that prints the same as an earlier one but
    compares unequal is told apart. ``analysis.causes.explain`` diffs node maps path by path; JAX's
    treedef text ends the map, so two maps are equal only when the treedefs are.
    """
    import jax  # lazy: capture loads before the job's environment is set

    treedef = jax.tree_util.tree_structure(value)
    if getattr(treedef, "num_nodes", 0) == 1 == getattr(treedef, "num_leaves", 0):  # one leaf
        return "*"
    text = str(treedef)
    if text.startswith("PyTreeDef(") and text.endswith(")"):
        text = text[len("PyTreeDef("):-1]
    try:
        nodes = _Walk(classify, _array_leaf).nodes(treedef, value, "", None)
    except Exception:  # an unexpected node: the text alone still tells structures apart
        return text
    return node_map_text(nodes, text)


def static_nodes(value: Any, path: str, classify: Classify | None) -> list[tuple[str, str]]:
    """The node map lines of a static pytree at ``path`` (equinox's static part of an argument,
    a static argument that is a container): its nodes, as in ``structure``, and its leaves: the
    value of each that is not ``ARRAY`` (JAX compares it with ``==``), ``*`` for an array."""
    import jax  # lazy: capture loads before the job's environment is set

    def leaf(leaf_path: str, item: Any, holder: Any) -> tuple[str, str]:
        if item is ARRAY or item is _UNKNOWN:
            return leaf_path, "*"
        return _static_line(leaf_path, item, LEAF, classify, holder)

    return _Walk(classify, leaf).nodes(jax.tree_util.tree_structure(value), value, path, None)


STATIC_NODES = 1000  # a static value with more nodes than this is kept as its text alone


def static_view(value: Any, path: str, classify: Classify | None) -> str | None:
    """A static argument that is a container (a tuple, a NamedTuple, a registered dataclass) as
    a node map by paths (``cfg.steps``), so that the part that changed is named; None for a
    plain value, a very large one, or anything unexpected."""
    import jax  # lazy: capture loads before the job's environment is set

    try:
        treedef = jax.tree_util.tree_structure(value)
        if not 1 < getattr(treedef, "num_nodes", 0) <= STATIC_NODES:
            return None
        return node_map_text(static_nodes(value, path, classify), full_repr(value))
    except Exception:
        return None


def _array_leaf(path: str, item: Any, holder: Any) -> tuple[str, str]:
    return path, "*"


_FLAT_INDEX = re.compile(r"\[<flat index (\d+)>\]")


def plain_path(path: str) -> str:
    """A path as the user reads it: JAX's ``[<flat index 0>]`` (a custom node's child without
    a key of its own) as ``[0]``."""
    return _FLAT_INDEX.sub(r"[\1]", path) if "<flat index" in path else path


def _one_line(text: str) -> str:
    return " ".join(text.split())


# (path, value, the custom node class whose attribute it is, or None) -> a node map line
LeafLine = Callable[[str, Any, Any], tuple[str, str]]


class _Walk:
    """Walks a treedef and its value together, node by node, into node map lines."""

    def __init__(self, classify: Classify | None, leaf: LeafLine) -> None:
        self.classify = classify
        self.leaf = leaf

    def nodes(self, treedef: Any, value: Any, path: str, parent: str | None,
              holder: Any = None) -> list[tuple[str, str]]:
        """The lines of ``treedef`` at ``path``; ``holder``: the custom node class whose
        attribute (``.name``) this is, if any."""
        data = treedef.node_data()
        if data is None:  # a leaf (none for NNX's state lists: its GraphDef names them)
            return [] if parent == "NodeStates" else [self.leaf(path, value, holder)]
        kind, aux = data
        children = treedef.children()
        name = getattr(kind, "__name__", str(kind))
        if kind is type(None):
            return [(path, "None")]
        values: list[Any] | None = None
        if name == "NodeStates":  # Flax NNX: its GraphDef child describes the module
            out, names = [], [f"[{i}]" for i in range(len(children))]
        elif kind is dict:
            keys = list(aux or [])
            out, names = [(path, "dict")], [f"[{k!r}]" for k in keys]
            values = _items(value, keys)
        elif kind in (list, tuple) or (isinstance(kind, type) and issubclass(kind, tuple)
                                       and hasattr(kind, "_fields")):
            fields = getattr(kind, "_fields", None)  # a NamedTuple's
            out = [(path, name)]
            names = ([f".{f}" for f in fields] if fields
                     else [f"[{i}]" for i in range(len(children))])
            values = _items(value, range(len(children)))
        elif is_graphdef(aux):
            owner = path[: -len("[0]")] if parent == "NodeStates" and path.endswith("[0]") else path
            return graphdef_nodes(aux, owner, self.classify)[0]
        else:
            keyed = _keyed_children(value, len(children))
            names = ([key for key, _ in keyed] if keyed
                     else [f"[{i}]" for i in range(len(children))])
            values = [child for _, child in keyed] if keyed else None
            out = [(path, _one_line(name)),
                   *_static_data(kind, aux, value, path, names, self.classify)]
            holder = kind
        custom = holder is kind
        for i, (child, child_name) in enumerate(zip(children, names, strict=False)):
            child_value = values[i] if values is not None and i < len(values) else _UNKNOWN
            out.extend(self.nodes(child, child_value, path + child_name,
                                  "NodeStates" if parent == "NodeStates" else name,
                                  kind if custom and child_name.startswith(".") else None))
        return out


def _items(value: Any, keys: Iterable[Any]) -> list[Any] | None:
    if value is _UNKNOWN:
        return None
    try:
        return [value[key] for key in keys]
    except Exception:
        return None


def _keyed_children(value: Any, count: int) -> list[tuple[str, Any]] | None:
    """A custom node's children with JAX's names for them (``.x``; ``[0]``: ``plain_path``)."""
    if value is _UNKNOWN:
        return None
    import jax  # lazy: capture loads before the job's environment is set

    try:
        pairs, _ = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda x: x is not value)
        if len(pairs) != count:
            return None
        return [(plain_path(jax.tree_util.keystr(tuple(keys))), child) for keys, child in pairs]
    except Exception:
        return None


def _static_data(kind: Any, aux: Any, value: Any, path: str, names: list[str],
                 classify: Classify | None) -> list[tuple[str, str]]:
    """The lines of a custom node's aux data: one per named static field, else one for all."""
    if aux is None:
        return []
    data = {n[1:] for n in names if n.startswith(".")}
    fields = _field_names(kind, aux, value, data)
    if fields is None:
        attribute = _attribute_holding(value, aux, data)
        if attribute is not None:  # the aux data is one attribute of the node: named by it
            return [_static_line(f"{path}.{attribute}", aux, FIELD, classify, kind)]
        return [_static_line(f"{path}.{AUX}", aux, WHOLE_AUX, classify)]
    return [_static_line(f"{path}.{field}", item, WHOLE_AUX if field.startswith("<") else FIELD,
                         classify, kind) for field, item in zip(fields, aux, strict=True)]


def _attribute_holding(value: Any, aux: Any, data: set[str]) -> str | None:
    """The one attribute of a custom node (not a child) that holds its aux data itself, the
    same object (``jax.tree_util.Partial``'s ``func``, a class whose flatten returns
    ``self.act``); None where none does, or several do."""
    if value is _UNKNOWN:
        return None
    names = [n for n in getattr(value, "__dict__", {}) if n not in data]
    names += [n for klass in type(value).__mro__ for n in getattr(klass, "__slots__", ())
              if isinstance(n, str) and n not in data]
    if isinstance(value, functools.partial):
        names.append("func")
    found = {n for n in names if not n.startswith("__") and _held(value, n) is aux}
    return found.pop() if len(found) == 1 else None


def _held(value: Any, name: str) -> Any:
    try:
        return getattr(value, name)
    except Exception:  # a slot never set, a property that raises
        return _UNKNOWN


def _field_names(kind: Any, aux: Any, value: Any, data: set[str]) -> list[str] | None:
    """The field names of a dataclass node's aux data, whose items are its static fields' values
    in field order (``register_dataclass``, flax ``struct``); equinox puts one more item, its
    wrapper data, first (``<aux 0>``). None when the values do not bear that out."""
    if not isinstance(aux, tuple) or value is _UNKNOWN or not dataclasses.is_dataclass(kind):
        return None
    fields = [f.name for f in dataclasses.fields(kind) if f.name not in data]
    extra = len(aux) - len(fields)
    if extra not in (0, 1):
        return None
    for field, item in zip(fields, aux[extra:], strict=True):
        if not _same(getattr(value, field, _UNKNOWN), item):
            return None
    return [f"<aux {i}>" for i in range(extra)] + fields


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _static_line(path: str, item: Any, kind: str, classify: Classify | None,
                 holder: Any = None) -> tuple[str, str]:
    """The line of one static value at ``path``; ``holder``: the class whose attribute (the
    last part of ``path``) it is, if known, to tell a library's mode switch."""
    text, function = value_text(item)
    text = _one_line(text)
    mode = (type(item) is bool and isinstance(holder, type)
            and mode_switch(holder, path.rpartition(".")[2]))
    note = Note(kind, mode=mode, function=function)
    if classify is not None:
        try:
            klass = classify(path, item, text)
            if klass.ordinal:
                note = Note(kind, klass.ordinal, type_name(klass.type), klass.identity, mode,
                            function)
        except Exception:  # never raise into user code: the text alone tells values apart
            pass
    return path, with_note(text, note)


def is_graphdef(obj: Any) -> bool:
    """A Flax NNX ``GraphDef`` (flax >= 0.11): a flat list of node defs and their attributes."""
    return (type(obj).__name__ == "GraphDef" and isinstance(getattr(obj, "nodes", None), list)
            and isinstance(getattr(obj, "attributes", None), list))


def graphdef_nodes(graphdef: Any, prefix: str, classify: Classify | None = None
                   ) -> tuple[list[tuple[str, str]], list[str]]:
    """(path -> description of every module, variable and static attribute, the path of each
    state leaf in order) for a Flax NNX ``GraphDef``, walked the way ``nnx.graphlib`` unflattens
    it. A variable is described by its type (``Param``), its metadata on a line of its own
    (``.<metadata>``); a static attribute by its value, told apart by ``classify`` from an
    earlier one that prints the same but compares unequal."""
    entries: list[tuple[str, str]] = []
    leaves: list[str] = []
    nodes = iter(graphdef.nodes)
    attributes = iter(graphdef.attributes)

    def attr_path(path: str, key: Any) -> str:
        if isinstance(key, str) and key.isidentifier():
            return f"{path}.{key}"
        return f"{path}[{key!r}]"

    def visit(node: Any, path: str) -> None:
        kind = type(node).__name__
        type_name = getattr(getattr(node, "type", None), "__name__", getattr(node, "type", kind))
        if kind == "VariableDef":
            entries.append((path, str(type_name)))
            metadata = getattr(node, "metadata", None)
            if metadata:
                entries.append((f"{path}.<metadata>",
                                with_note(_one_line(full_repr(metadata)), Note(ATTR))))
            leaves.append(path)
            return
        if kind in ("ArrayRefDef", "NodeRef"):
            entries.append((path, kind))
            if kind == "ArrayRefDef":
                leaves.append(path)
            return
        entries.append((path, str(type_name)))
        for _ in range(int(getattr(node, "num_attributes", 0))):
            key, attr = next(attributes)
            sub = attr_path(path, key)
            attr_kind = type(attr).__name__
            if attr_kind == "Static":
                if not (isinstance(key, str) and key.startswith("_pytree__")):
                    entries.append(_static_line(sub, attr.value, ATTR, classify,
                                                getattr(node, "type", None)))
            elif attr_kind == "LeafAttr":
                entries.append((sub, "*"))
                leaves.append(sub)
            elif attr_kind == "NodeAttr":
                visit(next(nodes), sub)
            else:
                entries.append((sub, attr_kind))

    first = next(nodes, None)
    if first is not None:
        visit(first, prefix)
    return entries, leaves
