"""Pytree structures and paths: a diffable description of an argument's structure, and the
user's paths behind a library wrapper's arguments (checked on JAX 0.10.2, flax 0.12, equinox
0.13).

``structure`` stores a large structure (a whole model) as a node map that ``analysis.causes``
diffs path by path; ``graphdef_nodes`` reads a Flax NNX ``GraphDef``; ``user_leaf_names`` maps
equinox's and Flax NNX's argument paths back to the user's parameters. Public JAX APIs only
(``jax.tree_util``); library objects are duck-typed, and anything unexpected leaves the plain
names and texts in place. Runs on cache misses only.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Sequence
from typing import Any

from recompile_cli.session.structures import node_map_text

# Stored values longer than this keep a prefix and a digest of the whole (compared in full).
FULL_LIMIT = 4000
# Structures whose treedef text is longer than this are stored as a node map (see structure()).
INLINE_STRUCTURE = 200


def full_repr(value: Any) -> str:
    """``repr(value)``, whole up to ``FULL_LIMIT`` characters; longer ones keep a prefix and a
    digest of the full text, so that two values compare equal exactly when their reprs do."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    if len(text) <= FULL_LIMIT:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{text[:FULL_LIMIT // 2]}... [{len(text)} chars, sha256 {digest}]"


# -- structures --------------------------------------------------------------------------
def structure(value: Any) -> str:
    """The pytree structure of one argument.

    Small structures are JAX's treedef text (``{'x': *, 'y': *}``). Large ones (a whole model)
    are a node map (``session.structures``) describing each node: containers by their keys or
    length, custom nodes by their node data, a Flax NNX graph by each module's static
    attributes. ``analysis.causes`` diffs node maps path by path.
    """
    import jax

    treedef = jax.tree_util.tree_structure(value)
    if getattr(treedef, "num_nodes", 0) == 1 == getattr(treedef, "num_leaves", 0):  # one leaf
        return "*"
    text = str(treedef)
    if text.startswith("PyTreeDef(") and text.endswith(")"):
        text = text[len("PyTreeDef("):-1]
    if len(text) <= INLINE_STRUCTURE:
        return text
    try:
        nodes = [(path, _one_line(description)) for path, description in _nodes(treedef, "", None)]
    except Exception:  # an unexpected node: the full text still tells structures apart
        nodes = []
    return node_map_text(nodes, text)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _nodes(treedef: Any, path: str, parent: str | None) -> list[tuple[str, str]]:
    data = treedef.node_data()
    if data is None:
        return []  # a leaf
    kind, aux = data
    children = treedef.children()
    name = getattr(kind, "__name__", str(kind))
    if kind is type(None):
        return [(path, "None")]
    if name == "NodeStates":  # Flax NNX: its GraphDef child describes the module at ``path``
        out, names = [], [f"[{i}]" for i in range(len(children))]
    elif kind is dict:
        keys = list(aux or [])
        out = [(path, "dict[" + ", ".join(repr(k) for k in keys) + "]")]
        names = [f"[{k!r}]" for k in keys]
    elif kind in (list, tuple):
        out = [(path, f"{name}[{len(children)}]")]
        names = [f"[{i}]" for i in range(len(children))]
    elif isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        out = [(path, name)]
        names = [f".{f}" for f in kind._fields]
    elif _is_graphdef(aux):
        owner = path[: -len("[0]")] if parent == "NodeStates" and path.endswith("[0]") else path
        return graphdef_nodes(aux, owner)[0]
    else:
        out = [(path, f"{name}[{full_repr(aux)}]")]
        names = [f"[{i}]" for i in range(len(children))]
    for child, child_name in zip(children, names, strict=False):
        out.extend(_nodes(child, path + child_name, name))
    return out


def _is_graphdef(obj: Any) -> bool:
    """A Flax NNX ``GraphDef`` (flax >= 0.11): a flat list of node defs and their attributes."""
    return (type(obj).__name__ == "GraphDef" and isinstance(getattr(obj, "nodes", None), list)
            and isinstance(getattr(obj, "attributes", None), list))


def graphdef_nodes(graphdef: Any, prefix: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(path -> description of every module and static attribute, the path of each state leaf
    in order) for a Flax NNX ``GraphDef``, walked the way ``nnx.graphlib`` unflattens it."""
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
            entries.append((path, f"{type_name} {full_repr(getattr(node, 'metadata', None))}"))
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
                    entries.append((sub, full_repr(attr.value)))
            elif attr_kind == "LeafAttr":
                leaves.append(sub)
            elif attr_kind == "NodeAttr":
                visit(next(nodes), sub)
            else:
                entries.append((sub, attr_kind))

    first = next(nodes, None)
    if first is not None:
        visit(first, prefix)
    return entries, leaves




# -- the user's paths behind library wrappers ---------------------------------------------------
def user_leaf_names(fun: Any, names: list[str], params: Sequence[str],
                    args: tuple[Any, ...]) -> list[str]:
    """``names`` with a library wrapper's argument paths replaced by the user's: equinox's
    ``dynamic_nodonate['rest'][0]`` -> ``x``, Flax NNX's ``model.states[0][3]`` ->
    ``model.lin.kernel``. Unknown wrappers and anything unexpected leave the names as they are."""
    renames: dict[str, str] = {}
    try:
        renames.update(_equinox_renames(fun, args))
    except Exception:
        pass
    for param, value in zip(params, args, strict=False):
        try:
            renames.update(_nnx_renames(param, value))
        except Exception:
            continue
    return [renames.get(n, n) for n in names] if renames else names


def _nnx_renames(param: str, value: Any) -> dict[str, str]:
    """``param.states[0][k]`` -> ``param.<path of leaf k>`` for a Flax NNX ``NodeStates``."""
    if type(value).__name__ != "NodeStates":  # checked first: the common case, and cheap
        return {}
    states = getattr(value, "states", None)
    graphdef = getattr(value, "_graphdef", None)
    if not _is_graphdef(graphdef):
        return {}
    if not isinstance(states, tuple) or len(states) != 1:
        return {}
    _, leaves = graphdef_nodes(graphdef, param)
    return {f"{param}.states[0][{k}]": path for k, path in enumerate(leaves)}


def _equinox_renames(fun: Any, args: tuple[Any, ...]) -> dict[str, str]:
    """Leaf names of ``equinox.filter_jit``'s ``fun_wrapped(dynamic_donate, dynamic_nodonate,
    static)`` (equinox 0.11-0.13) mapped back to the user's parameters."""
    code = getattr(fun, "__code__", None)
    if code is None or code.co_name != "fun_wrapped":
        return {}
    if not (getattr(fun, "__module__", "") or "").startswith("equinox"):
        return {}
    import jax

    if len(args) != 3 or not (isinstance(args[2], tuple) and len(args[2]) == 3):
        return {}
    static_fun, static_first, static_rest = args[2]
    user = next((f for f in static_fun[0] if callable(f)), None)
    try:
        sig = inspect.signature(user) if user is not None else None
    except (TypeError, ValueError):
        sig = None
    params = positional_names(sig, 64)

    def paths(static: Any) -> list[str]:
        treedef = static[1]
        tree = jax.tree_util.tree_unflatten(treedef, list(range(treedef.num_leaves)))
        return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]

    def rest_name(path: str) -> str:
        match = re.match(r"\[0\]\[(\d+)\](.*)", path)
        if match:
            return params[int(match.group(1)) + 1] + match.group(2)
        match = re.match(r"\[1\]\['([^']+)'\](.*)", path)
        return match.group(1) + match.group(2) if match else f"args{path}"

    out: dict[str, str] = {}
    for holder in ("dynamic_donate", "dynamic_nodonate"):
        for i, path in enumerate(paths(static_first)):
            out[f"{holder}['first'][{i}]"] = params[0] + path
        for i, path in enumerate(paths(static_rest)):
            out[f"{holder}['rest'][{i}]"] = rest_name(path)
    return out


def positional_names(sig: inspect.Signature | None, count: int) -> list[str]:
    """Names of the first ``count`` positional parameters (``args[i]`` past the known ones)."""
    names: list[str] = []
    if sig is not None:
        for p in sig.parameters.values():
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                break
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
    return [names[i] if i < len(names) else f"args[{i}]" for i in range(count)]
