"""The user's view of a library jit wrapper's arguments (checked on JAX 0.10.2, flax 0.12, equinox
0.13): ``equinox.filter_jit`` and ``flax.nnx.jit`` jit a function of their own, so
``user_leaf_names`` maps the traced leaves back to the user's parameters (``model.lin.kernel``)
and ``equinox_static`` names a changed static field (``model.act``) instead of the whole static
tuple. Library objects are duck-typed; anything unexpected leaves the plain names and texts.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

from recompile_cli.capture.jax.arguments import pytrees
from recompile_cli.session.structures import FUNCTION, node_map_text


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
    if not pytrees.is_graphdef(graphdef):
        return {}
    if not isinstance(states, tuple) or len(states) != 1:
        return {}
    _, leaves = pytrees.graphdef_nodes(graphdef, param)
    return {f"{param}.states[0][{k}]": path for k, path in enumerate(leaves)}


def _equinox_parts(fun: Any, args: tuple[Any, ...]) -> tuple[list[str], Any, Any, Any] | None:
    """(the user's parameter names, ``static_fun``, ``static_first``, ``static_rest``) of a call
    of ``equinox.filter_jit``'s ``fun_wrapped(dynamic_donate, dynamic_nodonate, static)``
    (equinox 0.11-0.13); None for any other function."""
    code = getattr(fun, "__code__", None)
    if code is None or code.co_name != "fun_wrapped":
        return None
    if not (getattr(fun, "__module__", "") or "").startswith("equinox"):
        return None
    if len(args) != 3 or not (isinstance(args[2], tuple) and len(args[2]) == 3):
        return None
    static_fun, static_first, static_rest = args[2]
    user = next((f for f in static_fun[0] if callable(f)), None)
    try:
        sig = inspect.signature(user) if user is not None else None
    except (TypeError, ValueError):
        sig = None
    return positional_names(sig, 64), static_fun, static_first, static_rest


def _equinox_renames(fun: Any, args: tuple[Any, ...]) -> dict[str, str]:
    """Leaf names of ``equinox.filter_jit``'s ``fun_wrapped`` mapped back to the user's
    parameters."""
    parts = _equinox_parts(fun, args)
    if parts is None:
        return {}
    import jax  # lazy: capture loads before the job's environment is set

    params, _, static_first, static_rest = parts

    def paths(static: Any) -> list[str]:
        treedef = static[1]
        tree = jax.tree_util.tree_unflatten(treedef, list(range(treedef.num_leaves)))
        return [pytrees.plain_path(jax.tree_util.keystr(p))
                for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]

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


def equinox_static(fun: Any, args: tuple[Any, ...], classify: pytrees.Classify | None
                   ) -> str | None:
    """``equinox.filter_jit``'s static argument as a node map by the user's paths: the user's
    function (``<function>``), and each parameter's static part: its containers, the static
    fields of its modules (``model.act``) and its leaves that are not arrays (``n``: equinox
    makes them static). None for any other function, or anything unexpected."""
    parts = _equinox_parts(fun, args)
    if parts is None:
        return None
    params, static_fun, static_first, static_rest = parts
    try:
        user_args = (_rebuilt(static_first), *_rebuilt(static_rest)[0])[:-1]  # less the dummy
        keywords = _rebuilt(static_rest)[1]
        lines = pytrees.static_nodes(_rebuilt(static_fun), FUNCTION, classify)
        for name, value in [*zip(params, user_args, strict=False), *keywords.items()]:
            lines += pytrees.static_nodes(value, name, classify)
    except Exception:  # an unflatten that wants arrays, a layout of another version
        return None
    return node_map_text(lines, pytrees.full_repr(args[2]))


def _rebuilt(static: Any) -> Any:
    """A value split by equinox (``(leaves, treedef)``, arrays left out as None) put together
    again, with ``pytrees.ARRAY`` in place of each array."""
    import jax  # lazy: capture loads before the job's environment is set

    leaves, treedef = static
    return jax.tree_util.tree_unflatten(
        treedef, [pytrees.ARRAY if leaf is None else leaf for leaf in leaves])


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
