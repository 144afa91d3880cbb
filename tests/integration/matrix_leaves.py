"""The matrix's cells where one leaf changes (shape, dtype, weak type, PRNG key type, sharding,
committed placement, ``None`` then an array), generated for each container from two tables:
where the leaf sits in the container (``LEAF_IN``), and the change's two values with what the
report must say (``LEAF_CHANGES``). Importing it registers them in ``matrix_cells.CELLS``."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from matrix_cells import (
    AS_SCALAR,
    CAST,
    DTYPE_AT_CREATION,
    KEY,
    MODELS,
    NO_PAD,
    NONE_ENTRY,
    PAD,
    PLACE,
    SCALAR,
    Text,
    cell,
    rx,
)
from matrix_containers import (
    Batch,
    DataBatch,
    Pair,
    eqx_classes,
    flax_classes,
    is_typed_key,
    leaves,
    nnx_param,
    ones,
    step_on,
)


# -- one leaf in each container: (path of the leaf, run the calls with the leaf's values) -------
def _positional(values: Callable[[], tuple[Any, Any]]) -> None:
    @jax.jit
    def step(x: Any) -> Any:
        return x

    for v in values():
        step(v)


def _keyword(values: Callable[[], tuple[Any, Any]]) -> None:
    @jax.jit
    def step(x: Any) -> Any:
        return x

    for v in values():
        step(x=v)


def _traced(wrap: Callable[[Any], Any], name: str) -> Callable[..., None]:
    """The leaf wrapped into a container argument called ``name`` of a ``jax.jit`` function."""

    def run(values: Callable[[], tuple[Any, Any]]) -> None:
        step = step_on(name)
        for v in values():
            step(wrap(v))

    return run


def _nnx(values: Callable[[], tuple[Any, Any]]) -> None:
    _, _, Model, nnx = flax_classes()

    @nnx.jit
    def step(model: Any) -> Any:
        return leaves(nnx.state(model))

    pair = values()
    kind = "RngKey" if any(map(is_typed_key, pair)) else "Param"  # one variable type for both
    for v in pair:
        step(Model(w=nnx_param(v, kind)))


def _eqx(values: Callable[[], tuple[Any, Any]]) -> None:
    Model, _, eqx = eqx_classes()

    @eqx.filter_jit
    def step(model: Any) -> Any:
        return leaves(model)

    for v in values():
        step(Model(w=v))


def _optax(values: Callable[[], tuple[Any, Any]]) -> None:
    import optax

    tx = optax.adam(1e-3)
    step = step_on("opt_state")
    for v in values():
        step(tx.init({"w": v}))


LEAF_IN: dict[str, tuple[str, Callable[..., None]]] = {
    "positional": ("x", _positional),
    "keyword": ("x", _keyword),
    "dict": ("batch['x']", _traced(lambda v: {"x": v, "y": ones(2)}, "batch")),
    "list": ("xs[1]", _traced(lambda v: [ones(2), v], "xs")),
    "tuple": ("xs[1]", _traced(lambda v: (ones(2), v), "xs")),
    "namedtuple": ("batch.x", _traced(lambda v: Batch(v, ones(2)), "batch")),
    "register_dataclass": ("batch.x", _traced(lambda v: DataBatch(v, ones(2)), "batch")),
    "flax_struct": ("state.x", _traced(lambda v: flax_classes()[0](x=v), "state")),
    "nnx_module": ("model.w", _nnx),
    "eqx_module": ("model.w", _eqx),
    "optax_state": ("opt_state[0].mu['w']", _optax),
    "custom_pytree": ("batch[0]", _traced(lambda v: Pair(v, ones(2)), "batch")),
}


def _mesh_sharded(spec: tuple[str | None, ...]) -> jax.Array:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((1,), ("d",))
    return jax.device_put(ones(), NamedSharding(mesh, P(*spec)))


def _auto_sharded() -> jax.Array:
    """An array placed ``P('d')`` on a mesh of ``Auto`` axes: its abstract value has only the
    type-level spec, ``P(None,)``, whatever the placement."""
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((1,), ("d",), axis_types=(AxisType.Auto,))
    return jax.device_put(ones(), NamedSharding(mesh, P("d")))


def _weak(container: str) -> tuple[Any, Any]:
    # a Python float in data; jnp.array(1.0) (weakly typed too) for a model's parameter
    return (jnp.array(1.0) if container in MODELS else 1.0), jnp.float32(1.0)


# change -> (the two values, code, before, after, advice for data, advice for a model's parameters)
LEAF_CHANGES: dict[str, tuple[Callable[[str], tuple[Any, Any]], str, Text, Text,
                              re.Pattern[str] | None, re.Pattern[str] | None]] = {
    "shape": (lambda c: (ones(3), ones(4)), "shape", "f32[3]", "f32[4]", PAD, None),
    "dtype": (lambda c: (ones(3), jnp.ones(3, jnp.int32)), "dtype", "f32[3]", "i32[3]", CAST,
              CAST),
    "weak_type": (_weak, "weak_type", "~f32[]", "f32[]", SCALAR, DTYPE_AT_CREATION),
    "key_type": (lambda c: (jax.random.key(0), jax.random.PRNGKey(0)), "dtype", "key<fry>[]",
                 "u32[2]", KEY, KEY),
    "sharding": (lambda c: (_mesh_sharded(()), _mesh_sharded(("d",))), "sharding",
                 rx(r"P\((None,?)?\)"), rx(r"P\('d',?\)"), PLACE, PLACE),
    "auto_mesh": (lambda c: (ones(), _auto_sharded()), "sharding", "f32[3]",
                  "f32[3](P('d',), auto)", PLACE, PLACE),
    "committed": (lambda c: (ones(), jax.device_put(ones(), jax.devices()[0])), "sharding",
                  rx(r"UnspecifiedValue|uncommitted"), rx(r"SingleDeviceSharding|committed"),
                  PLACE, PLACE),
    "tree_none_array": (lambda c: (None, ones()), "tree_structure", "None",
                        rx(r"^(?!.*(hijax|NodeRef))(\*|f32\[3\]|.*Param.*)$"), NONE_ENTRY, None),
}
LEAF_FORBID = {"key_type": (NO_PAD,)}  # padding never merges two key types
NOT_LEAF = {("key_type", "optax_state")}  # listed in IMPOSSIBLE


def _leaf_cell(change: str, container: str) -> None:
    values, code, before, after, data_advice, model_advice = LEAF_CHANGES[change]
    path, run = LEAF_IN[container]
    forbid = LEAF_FORBID.get(change, ())
    if change == "weak_type" and container in MODELS:
        forbid = (AS_SCALAR,)  # jnp.array(1.0) was passed as an array: where was it made?
    cell(change, container, code, path, before=before, after=after,
         advice=model_advice if container in MODELS else data_advice, forbid=forbid,
         compiles=2)(functools.partial(run, functools.partial(values, container)))


for _change in LEAF_CHANGES:
    for _container in LEAF_IN:
        if (_change, _container) not in NOT_LEAF:
            _leaf_cell(_change, _container)
