"""The matrix's cells of static values: hashable values and fields of static configs, values that
print the same but compare unequal, callables re-created at each call, unhashable values, and
static fields of traced arguments (meta fields, ``pytree_node=False``, ``static=True``, aux
data). Importing it registers them in ``matrix_cells.CELLS``."""

from __future__ import annotations

import enum
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from matrix_cells import (
    ADDRESS,
    CONVERT,
    EQUALITY,
    FIELD,
    HASHABLE,
    LAMBDA,
    NO_TRACING,
    ONCE,
    OPTIMIZER,
    STATIC_FIELD,
    TRACED,
    UNEQUAL,
    cell,
    rx,
)
from matrix_containers import (
    Cfg,
    DataBatch,
    FrozenCfg,
    Opaque,
    Pair,
    Window,
    call_eqx,
    call_nnx,
    call_static,
    call_traced,
    eqx_model,
    flax_classes,
    nnx_model,
    ones,
    state,
)

AUX = "batch.aux"  # a custom node's aux data, named by the attribute that holds it (Pair.aux)


# -- hashable static values: 1 -> 2, or one field of a static config ----------------------------
@cell("static_value", "positional", "static_value", "cfg", before="1", after="2", advice=TRACED)
def static_value_positional() -> None:
    call_static(1, 2, by_keyword=False)


@cell("static_value", "keyword", "static_value", "cfg", before="1", after="2", advice=TRACED)
def static_value_keyword() -> None:
    call_static(1, 2)


@cell("static_value", "tuple", "static_value", "cfg[1]", before="2", after="3", advice=TRACED)
def static_value_tuple() -> None:
    call_static((0.1, 2), (0.1, 3))


@cell("static_value", "namedtuple", "static_value", "cfg.steps", before="2", after="3",
      advice=TRACED)
def static_value_namedtuple() -> None:
    call_static(Cfg(0.1, 2), Cfg(0.1, 3))


@cell("static_value", "register_dataclass", "static_value", "cfg.steps", before="2",
      after="3", advice=TRACED)
def static_value_register_dataclass() -> None:
    call_static(FrozenCfg(0.1, 2), FrozenCfg(0.1, 3))


@cell("static_value", "flax_struct", "static_value", "cfg.steps", before="2", after="3",
      advice=TRACED)
def static_value_flax_struct() -> None:
    StructCfg = flax_classes()[1]
    call_static(StructCfg(0.1, 2), StructCfg(0.1, 3))


@cell("static_value", "eqx_module", "static_value", "model.steps", before="2", after="3",
      advice=TRACED)
def static_value_eqx_module() -> None:  # a non-array field is static under filter_jit
    call_eqx(eqx_model(steps=2), eqx_model(steps=3))


@cell("static_value", "custom_pytree", "static_value", "cfg", before="Window(2)",
      after="Window(3)", advice=None, forbid=(NO_TRACING,))
def static_value_custom_pytree() -> None:  # an object, not a number: nothing to trace
    call_static(Window(2), Window(3))


# -- a static value that prints the same but compares unequal (identity __eq__) -----------------
OPAQUE = rx(r"^Opaque\(\)")
SAME_TEXT: dict[str, Any] = {"before": OPAQUE, "after": OPAQUE, "detail": UNEQUAL,
                             "advice": EQUALITY}


class Trainer:
    """Rebuilt every epoch; prints the same, compares by identity."""

    def __repr__(self) -> str:
        return "Trainer(lr=0.1)"

    def step(self, x: Any) -> Any:
        return x * 2


@cell("static_prints_equal", "positional", "static_value", "self",
      before=rx(r"^Trainer\(lr=0\.1\)"), after=rx(r"^Trainer\(lr=0\.1\)"), detail=UNEQUAL,
      advice=EQUALITY)
def prints_equal_positional() -> None:
    step = jax.jit(Trainer.step, static_argnums=0)
    for _epoch in range(2):
        step(Trainer(), ones())


@cell("static_prints_equal", "keyword", "static_value", "cfg", **SAME_TEXT)
def prints_equal_keyword() -> None:
    call_static(Opaque(), Opaque())


@cell("static_prints_equal", "tuple", "static_value", "cfg[1]", **SAME_TEXT)
def prints_equal_tuple() -> None:
    call_static((0.1, Opaque()), (0.1, Opaque()))


@cell("static_prints_equal", "namedtuple", "static_value", "cfg.obj", **SAME_TEXT)
def prints_equal_namedtuple() -> None:
    call_static(Cfg(0.1, 2, Opaque()), Cfg(0.1, 2, Opaque()))


@cell("static_prints_equal", "register_dataclass", STATIC_FIELD, "batch.obj", **SAME_TEXT)
def prints_equal_register_dataclass() -> None:
    call_traced("batch", DataBatch(ones(), obj=Opaque()), DataBatch(ones(), obj=Opaque()))


@cell("static_prints_equal", "flax_struct", STATIC_FIELD, "state.obj", **SAME_TEXT)
def prints_equal_flax_struct() -> None:
    call_traced("state", state(obj=Opaque()), state(obj=Opaque()))


@cell("static_prints_equal", "nnx_module", STATIC_FIELD, "model.obj", **SAME_TEXT)
def prints_equal_nnx_module() -> None:
    call_nnx(nnx_model(obj=Opaque()), nnx_model(obj=Opaque()))


@cell("static_prints_equal", "eqx_module", STATIC_FIELD, "model.obj", **SAME_TEXT)
def prints_equal_eqx_module() -> None:
    call_eqx(eqx_model(obj=Opaque()), eqx_model(obj=Opaque()))


@cell("static_prints_equal", "custom_pytree", STATIC_FIELD, AUX, **SAME_TEXT)
def prints_equal_custom_pytree() -> None:
    call_traced("batch", Pair(ones(), aux=Opaque()), Pair(ones(), aux=Opaque()))


# -- a static callable re-created at each call: define it once (it cannot be traced) -------------
NEW_CALLABLE: dict[str, Any] = {"before": LAMBDA, "after": LAMBDA, "advice": ONCE,
                                "forbid": (NO_TRACING,)}
NEW_OPTIMIZER: dict[str, Any] = {**NEW_CALLABLE, "before": OPTIMIZER, "after": OPTIMIZER}


@cell("static_callable", "positional", "static_value", "cfg", **NEW_CALLABLE)
def callable_positional() -> None:
    call_static(lambda v: v * 2, lambda v: v * 2, by_keyword=False)


@cell("static_callable", "keyword", "static_value", "cfg", **NEW_CALLABLE)
def callable_keyword() -> None:
    call_static(*(lambda v: v * 2 for _ in range(2)))


@cell("static_callable", "tuple", "static_value", "cfg[1]", **NEW_CALLABLE)
def callable_tuple() -> None:
    call_static(*((0.1, lambda v: v * 2) for _ in range(2)))


@cell("static_callable", "namedtuple", "static_value", "cfg.obj", **NEW_CALLABLE)
def callable_namedtuple() -> None:
    call_static(*(Cfg(0.1, 2, lambda v: v * 2) for _ in range(2)))


@cell("static_callable", "register_dataclass", STATIC_FIELD, "batch.obj", **NEW_CALLABLE)
def callable_register_dataclass() -> None:
    call_traced("batch", *(DataBatch(ones(), obj=lambda v: v * 2) for _ in range(2)))


@cell("static_callable", "flax_struct", STATIC_FIELD, "state.tx", needs=("flax", "optax"),
      **NEW_OPTIMIZER)
def callable_flax_struct() -> None:  # TrainState.tx when the optimizer is rebuilt
    import optax
    from flax.training.train_state import TrainState

    call_traced("state", *(TrainState.create(apply_fn=None, params={"w": ones()},
                                             tx=optax.adam(1e-3)) for _ in range(2)))


@cell("static_callable", "nnx_module", STATIC_FIELD, "model.act", **NEW_CALLABLE)
def callable_nnx_module() -> None:
    call_nnx(*(nnx_model(act=lambda v: v * 2) for _ in range(2)))


@cell("static_callable", "eqx_module", "static_value", "model.act", **NEW_CALLABLE)
def callable_eqx_module() -> None:  # a function field is static under filter_jit
    call_eqx(*(eqx_model(act=lambda v: v * 2) for _ in range(2)))


@cell("static_callable", "optax_state", "static_value", "cfg", **NEW_OPTIMIZER)
def callable_optax_state() -> None:  # the optimizer rebuilt each epoch, passed as a static
    import optax

    call_static(*(optax.adam(1e-3) for _ in range(2)))


@cell("static_callable", "custom_pytree", STATIC_FIELD, AUX, **NEW_CALLABLE)
def callable_custom_pytree() -> None:
    call_traced("batch", *(Pair(ones(), aux=lambda v: v * 2) for _ in range(2)))


# -- an unhashable static value: JAX raises; the report says which argument and how to fix it ----
UNHASHABLE: dict[str, Any] = {"advice": HASHABLE, "raises": (ValueError, TypeError)}


@cell("static_unhashable", "positional", None, "cfg", compiles=1, **UNHASHABLE)
def unhashable_positional() -> None:
    call_static((1, 2), [1, 2], by_keyword=False)


@cell("static_unhashable", "keyword", None, "cfg", compiles=1, **UNHASHABLE)
def unhashable_keyword() -> None:
    call_static(("a",), ["a"])


@cell("static_unhashable", "dict", None, "cfg", compiles=0, **UNHASHABLE)
def unhashable_dict() -> None:
    call_static({"lr": 0.1})


@cell("static_unhashable", "list", None, "cfg", compiles=0, **UNHASHABLE)
def unhashable_list() -> None:
    call_static([0.1, 2])


@cell("static_unhashable", "tuple", None, "cfg[1]", compiles=1, **UNHASHABLE)
def unhashable_tuple() -> None:
    call_static((0.1, 2), (0.1, [2]))


@cell("static_unhashable", "namedtuple", None, "cfg.steps", compiles=1, **UNHASHABLE)
def unhashable_namedtuple() -> None:
    call_static(Cfg(0.1, 2), Cfg(0.1, [2]))


# In a static field JAX compares a list with ==: no error, a static field change.
LISTS: dict[str, Any] = {"before": "[1]", "after": "[2]", "advice": FIELD}


@cell("static_unhashable", "register_dataclass", STATIC_FIELD, "batch.max_len", **LISTS)
def unhashable_register_dataclass() -> None:
    call_traced("batch", DataBatch(ones(), max_len=[1]), DataBatch(ones(), max_len=[2]))


@cell("static_unhashable", "flax_struct", STATIC_FIELD, "state.mode", **LISTS)
def unhashable_flax_struct() -> None:
    call_traced("state", state(mode=[1]), state(mode=[2]))


@cell("static_unhashable", "nnx_module", STATIC_FIELD, "model.mode", **LISTS)
def unhashable_nnx_module() -> None:
    call_nnx(nnx_model(mode=[1]), nnx_model(mode=[2]))


@cell("static_unhashable", "eqx_module", STATIC_FIELD, "model.mode", **LISTS)
def unhashable_eqx_module() -> None:
    call_eqx(eqx_model(mode=[1]), eqx_model(mode=[2]))


@cell("static_unhashable", "custom_pytree", STATIC_FIELD, AUX, **LISTS)
def unhashable_custom_pytree() -> None:
    call_traced("batch", Pair(ones(), aux=[1]), Pair(ones(), aux=[2]))


# -- a static field of a traced argument: the field, with that field's before -> after -----------
MODE: dict[str, Any] = {"before": "'train'", "after": "'eval'", "advice": FIELD}


@cell("static_field", "register_dataclass", STATIC_FIELD, "batch.max_len", before="4",
      after="5", advice=FIELD)
def static_field_register_dataclass() -> None:
    call_traced("batch", DataBatch(ones(), max_len=4), DataBatch(ones(), max_len=5))


@cell("static_field", "flax_struct", STATIC_FIELD, "state.mode", **MODE)
def static_field_flax_struct() -> None:
    call_traced("state", state(mode="train"), state(mode="eval"))


@cell("static_field", "nnx_module", STATIC_FIELD, "model.mode", **MODE)
def static_field_nnx_module() -> None:
    call_nnx(nnx_model(mode="train"), nnx_model(mode="eval"))


@cell("static_field", "eqx_module", STATIC_FIELD, "model.mode", **MODE)
def static_field_eqx_module() -> None:
    call_eqx(eqx_model(mode="train"), eqx_model(mode="eval"))


@cell("static_field", "custom_pytree", STATIC_FIELD, AUX, **MODE)
def static_field_custom_pytree() -> None:
    call_traced("batch", Pair(ones(), aux="train"), Pair(ones(), aux="eval"))


# -- a static whose __hash__ or __eq__ raises: JAX refuses the call; an event of the function ----
class BadHash:
    """Hashing it raises: JAX cannot look the value up."""

    def __hash__(self) -> int:
        raise RuntimeError("no hashing")


class BadEq:
    """Hashes alike, and comparing two of them raises: JAX cannot tell them apart."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        raise RuntimeError("no comparing")


REFUSED: dict[str, Any] = {"compiles": 1, "raises": (ValueError, TypeError, RuntimeError)}
HASH_RAISES: dict[str, Any] = {**REFUSED, "advice": rx(r"__hash__")}
EQ_RAISES: dict[str, Any] = {**REFUSED, "advice": rx(r"__eq__")}


@cell("static_hash_raises", "positional", None, "cfg", **HASH_RAISES)
def hash_raises_positional() -> None:
    call_static((1,), BadHash(), by_keyword=False)


@cell("static_hash_raises", "keyword", None, "cfg", **HASH_RAISES)
def hash_raises_keyword() -> None:
    call_static((1,), BadHash())


@cell("static_hash_raises", "tuple", None, "cfg[1]", **HASH_RAISES)
def hash_raises_tuple() -> None:
    call_static((0.1, 2), (0.1, BadHash()))


@cell("static_hash_raises", "namedtuple", None, "cfg.steps", **HASH_RAISES)
def hash_raises_namedtuple() -> None:
    call_static(Cfg(0.1, 2), Cfg(0.1, BadHash()))


@cell("static_eq_raises", "positional", None, "cfg", **EQ_RAISES)
def eq_raises_positional() -> None:
    call_static(BadEq(), BadEq(), by_keyword=False)


@cell("static_eq_raises", "keyword", None, "cfg", **EQ_RAISES)
def eq_raises_keyword() -> None:
    call_static(BadEq(), BadEq())


# inside a static tuple JAX's error names the tuple: the call shows no more than the argument
@cell("static_eq_raises", "tuple", None, "cfg", **EQ_RAISES)
def eq_raises_tuple() -> None:
    call_static((0.1, BadEq()), (0.1, BadEq()))


@cell("static_eq_raises", "namedtuple", None, "cfg", **EQ_RAISES)
def eq_raises_namedtuple() -> None:
    call_static(Cfg(0.1, BadEq()), Cfg(0.1, BadEq()))


# static data of a pytree node: JAX's error names no argument, and neither can the advice
STATIC_DATA: dict[str, Any] = {**REFUSED, "advice": rx(r"static data of a pytree node")}


@cell("static_eq_raises", "register_dataclass", None, None, **STATIC_DATA)
def eq_raises_register_dataclass() -> None:
    call_traced("batch", DataBatch(ones(), obj=BadEq()), DataBatch(ones(), obj=BadEq()))


@cell("static_eq_raises", "flax_struct", None, None, **STATIC_DATA)
def eq_raises_flax_struct() -> None:
    call_traced("state", state(obj=BadEq()), state(obj=BadEq()))


@cell("static_eq_raises", "nnx_module", None, None, **STATIC_DATA)
def eq_raises_nnx_module() -> None:
    call_nnx(nnx_model(obj=BadEq()), nnx_model(obj=BadEq()))


@cell("static_eq_raises", "eqx_module", None, None, **EQ_RAISES)
def eq_raises_eqx_module() -> None:  # filter_jit keeps it in its static argument
    call_eqx(eqx_model(obj=BadEq()), eqx_model(obj=BadEq()))


@cell("static_eq_raises", "custom_pytree", None, None, **STATIC_DATA)
def eq_raises_custom_pytree() -> None:
    call_traced("batch", Pair(ones(), aux=BadEq()), Pair(ones(), aux=BadEq()))


# -- an equal static value of another type: JAX keys statics on type (only a whole static) ------
class Mode(enum.StrEnum):
    TRAIN = "train"


@cell("static_type", "positional", "static_value", "cfg", before="2", after="np.int64(2)",
      detail=rx(r"another type \(int -> int64\)"), advice=CONVERT, forbid=(NO_TRACING,))
def static_type_positional() -> None:
    call_static(2, np.int64(2), by_keyword=False)


@cell("static_type", "keyword", "static_value", "cfg", before="<Mode.TRAIN: 'train'>",
      after="'train'", detail=rx(r"another type \(Mode -> str\)"), advice=rx(r"`Mode\(cfg\)`"),
      forbid=(NO_TRACING,))
def static_type_keyword() -> None:
    call_static(Mode.TRAIN, "train")


# inside containers and static data JAX compares with ==: 2 == np.int64(2), one compile
ONCE_ONLY: dict[str, Any] = {"compiles": 1}


@cell("static_type", "tuple", "first_compile", None, **ONCE_ONLY)
def static_type_tuple() -> None:
    call_static((0.1, 2), (0.1, np.int64(2)))


@cell("static_type", "namedtuple", "first_compile", None, **ONCE_ONLY)
def static_type_namedtuple() -> None:
    call_static(Cfg(0.1, 1), Cfg(0.1, True))


@cell("static_type", "register_dataclass", "first_compile", None, **ONCE_ONLY)
def static_type_register_dataclass() -> None:
    call_traced("batch", DataBatch(ones(), max_len=2), DataBatch(ones(), max_len=np.int64(2)))


@cell("static_type", "flax_struct", "first_compile", None, **ONCE_ONLY)
def static_type_flax_struct() -> None:
    call_traced("state", state(mode=1.0), state(mode=1))


@cell("static_type", "nnx_module", "first_compile", None, **ONCE_ONLY)
def static_type_nnx_module() -> None:
    call_nnx(nnx_model(mode=1), nnx_model(mode=True))


@cell("static_type", "eqx_module", "first_compile", None, **ONCE_ONLY)
def static_type_eqx_module() -> None:
    call_eqx(eqx_model(mode=Mode.TRAIN), eqx_model(mode="train"))


@cell("static_type", "custom_pytree", "first_compile", None, **ONCE_ONLY)
def static_type_custom_pytree() -> None:
    call_traced("batch", Pair(ones(), aux=2), Pair(ones(), aux=np.int64(2)))


# -- a function value replaced by another: named, never by address; different programs ---------
GELU: dict[str, Any] = {"before": "jax.nn.gelu", "after": "jax.nn.leaky_relu",
                        "forbid": (NO_TRACING, ADDRESS)}


@cell("function_value", "positional", "static_value", "cfg", **GELU)
def function_value_positional() -> None:
    call_static(jax.nn.gelu, jax.nn.leaky_relu, by_keyword=False)


@cell("function_value", "keyword", "static_value", "cfg", before="jax.nn.relu",
      after="jax.numpy.tanh", forbid=(NO_TRACING, ADDRESS))
def function_value_keyword() -> None:  # a custom_jvp, then a jitted jax.numpy function
    call_static(jax.nn.relu, jnp.tanh)


@cell("function_value", "tuple", "static_value", "cfg[1]", **GELU)
def function_value_tuple() -> None:
    call_static((0.1, jax.nn.gelu), (0.1, jax.nn.leaky_relu))


@cell("function_value", "namedtuple", "static_value", "cfg.obj", **GELU)
def function_value_namedtuple() -> None:
    call_static(Cfg(0.1, 2, jax.nn.gelu), Cfg(0.1, 2, jax.nn.leaky_relu))


FIELD_FUNCTION: dict[str, Any] = {**GELU, "advice": FIELD}


@cell("function_value", "register_dataclass", STATIC_FIELD, "batch.obj", **FIELD_FUNCTION)
def function_value_register_dataclass() -> None:
    call_traced("batch", DataBatch(ones(), obj=jax.nn.gelu),
                DataBatch(ones(), obj=jax.nn.leaky_relu))


@cell("function_value", "flax_struct", STATIC_FIELD, "state.obj", **FIELD_FUNCTION)
def function_value_flax_struct() -> None:
    call_traced("state", state(obj=jax.nn.gelu), state(obj=jax.nn.leaky_relu))


@cell("function_value", "nnx_module", STATIC_FIELD, "model.act", **FIELD_FUNCTION)
def function_value_nnx_module() -> None:
    call_nnx(nnx_model(act=jax.nn.gelu), nnx_model(act=jax.nn.leaky_relu))


@cell("function_value", "eqx_module", "static_value", "model.act", **GELU)
def function_value_eqx_module() -> None:
    call_eqx(eqx_model(act=jax.nn.gelu), eqx_model(act=jax.nn.leaky_relu))


@cell("function_value", "custom_pytree", STATIC_FIELD, AUX, **FIELD_FUNCTION)
def function_value_custom_pytree() -> None:
    call_traced("batch", Pair(ones(), aux=jax.nn.gelu), Pair(ones(), aux=jax.nn.leaky_relu))
