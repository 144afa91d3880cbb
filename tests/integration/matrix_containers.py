"""The containers of the change x container matrix (``matrix_cells.py``): the classes the cells
put values in (a NamedTuple, registered dataclasses, custom pytree nodes; the flax and equinox
classes are made on first use, so that this module imports with JAX alone) and the small jitted
``step`` functions that take them."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


# -- containers: the classes the cells put values in -------------------------------------------
def ones(n: int = 3) -> jax.Array:
    return jnp.ones(n)


def leaves(tree: Any) -> list[Any]:
    return [v for v in jax.tree_util.tree_leaves(tree) if isinstance(v, jax.Array)]


class Batch(NamedTuple):
    x: Any
    y: Any = None


class Cfg(NamedTuple):
    lr: Any
    steps: Any
    obj: Any = None


@functools.partial(jax.tree_util.register_dataclass, data_fields=["x", "y"],
                   meta_fields=["max_len", "obj"])
@dataclasses.dataclass
class DataBatch:
    x: Any
    y: Any = None
    max_len: Any = 4
    obj: Any = None


@functools.partial(jax.tree_util.register_dataclass, data_fields=["lr"], meta_fields=["steps"])
@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    lr: Any
    steps: Any


class Pair:
    """A custom pytree node: two children and aux data."""

    def __init__(self, x: Any, y: Any = None, aux: Any = "train") -> None:
        self.x, self.y, self.aux = x, y, aux


jax.tree_util.register_pytree_node(Pair, lambda p: ((p.x, p.y), p.aux),
                                   lambda aux, children: Pair(*children, aux=aux))


class Stack:
    """A custom pytree node with as many children as items."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items


jax.tree_util.register_pytree_node(Stack, lambda s: (tuple(s.items), None),
                                   lambda _, children: Stack(list(children)))


class Window:
    """A hashable value object (value equality) passed as a static argument."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Window) and other.size == self.size

    def __hash__(self) -> int:
        return hash(self.size)

    def __repr__(self) -> str:
        return f"Window({self.size})"


jax.tree_util.register_pytree_node(Window, lambda w: ((), w.size),
                                   lambda size, _: Window(size))


class Opaque:
    """Prints the same for every instance, compares by identity (object's ``__eq__``)."""

    def __repr__(self) -> str:
        return "Opaque()"


@functools.cache
def flax_classes() -> Any:
    from flax import nnx, struct

    @struct.dataclass
    class State:
        x: Any
        xs: Any = None
        mode: Any = struct.field(pytree_node=False, default="train")
        obj: Any = struct.field(pytree_node=False, default=None)

    @struct.dataclass
    class StructCfg:
        lr: Any
        steps: Any

    class Model(nnx.Module):
        def __init__(self, **attributes: Any) -> None:
            for name, value in attributes.items():
                setattr(self, name, value)

    return State, StructCfg, Model, nnx


@functools.cache
def eqx_classes() -> Any:
    import equinox as eqx

    class Model(eqx.Module):
        w: Any = None
        layers: Any = None
        steps: Any = 2
        act: Any = None
        mode: Any = eqx.field(static=True, default="train")
        obj: Any = eqx.field(static=True, default=None)

    class EqxCfg(eqx.Module):
        lr: Any
        steps: Any

    return Model, EqxCfg, eqx


def is_typed_key(value: Any) -> bool:
    return value is not None and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)


def nnx_param(value: Any, kind: str = "Param") -> Any:
    """``value`` as an NNX variable (``Param``, or ``RngKey`` for keys); None stays None."""
    return None if value is None else getattr(flax_classes()[3], kind)(value)


def step_on(name: str) -> Callable[..., Any]:
    """A jitted ``step`` whose one argument is called ``name``."""
    if name == "batch":
        def step(batch: Any) -> Any:
            return leaves(batch)
    elif name == "xs":
        def step(xs: Any) -> Any:
            return leaves(xs)
    elif name == "opt_state":
        def step(opt_state: Any) -> Any:
            return leaves(opt_state)
    else:
        assert name == "state", name

        def step(state: Any) -> Any:
            return leaves(state)
    return jax.jit(step)


def static_step(*, by_keyword: bool = False) -> Callable[..., Any]:
    """``step(x, cfg)`` with ``cfg`` static (by position, or by name)."""

    def step(x: Any, cfg: Any) -> Any:
        return x

    return (jax.jit(step, static_argnames="cfg") if by_keyword
            else jax.jit(step, static_argnums=1))


def call_static(*values: Any, by_keyword: bool = True) -> None:
    step = static_step(by_keyword=by_keyword)
    for value in values:
        step(ones(), cfg=value) if by_keyword else step(ones(), value)


def call_traced(name: str, *values: Any) -> None:
    step = step_on(name)
    for value in values:
        step(value)


def call_nnx(*models: Callable[[], Any]) -> None:
    nnx = flax_classes()[3]

    @nnx.jit
    def step(model: Any) -> Any:
        return jax.tree_util.tree_leaves(nnx.state(model))

    for model in models:
        step(model())


def call_eqx(*models: Any) -> None:
    eqx = eqx_classes()[2]

    @eqx.filter_jit
    def step(model: Any) -> Any:
        return [v for v in jax.tree_util.tree_leaves(model) if isinstance(v, jax.Array)]

    for model in models:
        step(model)


def nnx_model(**attributes: Any) -> Callable[[], Any]:
    return lambda: flax_classes()[2](w=nnx_param(ones()), **attributes)


def eqx_model(**fields: Any) -> Any:
    return eqx_classes()[0](w=ones(), **fields)


def state(**fields: Any) -> Any:
    return flax_classes()[0](x=ones(), **fields)
