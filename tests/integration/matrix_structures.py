"""The matrix's cells of tree structures (a key or argument added, a list grown), tracing contexts
and new function objects. Importing it registers them in ``matrix_cells.CELLS``."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from matrix_cells import (
    KEYS,
    LENGTH,
    MODE_SWITCH,
    NO_TRACING,
    ONCE,
    cell,
    rx,
)
from matrix_containers import (
    Batch,
    DataBatch,
    Stack,
    call_eqx,
    call_nnx,
    call_traced,
    eqx_classes,
    eqx_model,
    flax_classes,
    nnx_model,
    nnx_param,
    ones,
    state,
)

NEW_ITEM = r"\*|f32\[3\]|(nnx\.)?Param[^{]*"  # a new leaf, or an NNX Param without its metadata


def grown(path: str, two: str = "[*, *]", three: str = "[*, *, *]",
          kind: str = "list") -> dict[str, Any]:
    """A sequence at ``path`` grew from 2 items to 3: named as the sequence (``[*, *] ->
    [*, *, *]`` or ``list[2] -> list[3]``), or as the new item (``path[2]``: ``(absent) -> *``)."""
    return {"argument": rx(rf"^{re.escape(path)}(\[2\])?$"),
            "before": rx(rf"^({re.escape(two)}|{kind}\[2\]|\(absent\))$"),
            "after": rx(rf"^({re.escape(three)}|{kind}\[3\]|{NEW_ITEM})$")}


def added(path: str, key: str, before: str, after: str) -> dict[str, Any]:
    """A key added to the mapping at ``path``: named as the mapping, or as the new entry."""
    return {"argument": rx(rf"^{re.escape(path)}(\[{re.escape(key)}\])?$"),
            "before": rx(rf"^({re.escape(before)}|\(absent\))$"),
            "after": rx(rf"^({re.escape(after)}|{NEW_ITEM})$")}


def source_line(marker: str) -> int:
    """The line of this file that ends with ``# <marker>`` (for advice that names a line)."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.endswith(f"# {marker}"))


# -- tree structure: a key or argument added ------------------------------------------------------
def optional_step() -> Callable[..., Any]:
    def step(x: Any, y: Any = None) -> Any:
        return x if y is None else x + y

    return jax.jit(step)


@cell("tree_key_added", "positional", "arg_passing", "y", before="1 positional",
      after="2 positional", advice=None)
def key_added_positional() -> None:  # y is passed, then left to its default: not the same call
    step = optional_step()
    step(ones())
    step(ones(), ones())


@cell("tree_key_added", "keyword", "arg_passing", "y", before="1 positional",
      after="1 positional + y=", advice=None)
def key_added_keyword() -> None:
    step = optional_step()
    step(ones())
    step(ones(), y=ones())


@cell("tree_key_added", "dict", "tree_structure", advice=KEYS,
      **added("batch", "'y'", "{'x': *}", "{'x': *, 'y': *}"))
def key_added_dict() -> None:
    call_traced("batch", {"x": ones()}, {"x": ones(), "y": ones()})


NEW_PARAM = rx(r"^(?!.*(hijax|NodeRef)).*(Param|f32\[3\])")


@cell("tree_key_added", "nnx_module", "tree_structure", "model.extra", before="(absent)",
      after=NEW_PARAM, advice=None)
def key_added_nnx_module() -> None:
    def grown() -> Any:
        model = nnx_model()()
        model.extra = nnx_param(ones())
        return model

    call_nnx(nnx_model(), grown)


@cell("tree_key_added", "optax_state", "tree_structure", advice=None,
      **added("opt_state[0].mu", "'b'", "{'a': *}", "{'a': *, 'b': *}"))
def key_added_optax_state() -> None:  # the model gained a parameter; its moments follow
    import optax

    tx = optax.adam(1e-3)
    call_traced("opt_state", tx.init({"a": ones()}), tx.init({"a": ones(), "b": ones()}))


# -- tree structure: a list grows (None, then an array, is a leaf change: matrix_leaves.py) -----
@cell("tree_list_grows", "list", "tree_structure", advice=LENGTH, **grown("xs"))
def grows_list() -> None:
    call_traced("xs", [ones()] * 2, [ones()] * 3)


@cell("tree_list_grows", "tuple", "tree_structure", advice=LENGTH,
      **grown("xs", "(*, *)", "(*, *, *)", "tuple"))
def grows_tuple() -> None:
    call_traced("xs", (ones(),) * 2, (ones(),) * 3)


@cell("tree_list_grows", "namedtuple", "tree_structure", advice=LENGTH, **grown("batch.x"))
def grows_namedtuple() -> None:
    call_traced("batch", Batch([ones()] * 2), Batch([ones()] * 3))


@cell("tree_list_grows", "register_dataclass", "tree_structure", advice=LENGTH,
      **grown("batch.x"))
def grows_register_dataclass() -> None:
    call_traced("batch", DataBatch([ones()] * 2), DataBatch([ones()] * 3))


@cell("tree_list_grows", "flax_struct", "tree_structure", advice=LENGTH, **grown("state.xs"))
def grows_flax_struct() -> None:
    call_traced("state", state(xs=[ones()] * 2), state(xs=[ones()] * 3))


# a model with one more layer is another model: nothing to advise
@cell("tree_list_grows", "nnx_module", "tree_structure", advice=None,
      **grown("model.layers", kind="(nnx\\.)?List"))
def grows_nnx_module() -> None:
    nnx = flax_classes()[3]

    def layers(n: int) -> Callable[[], Any]:
        return nnx_model(layers=nnx.List([nnx.Param(ones()) for _ in range(n)]))

    call_nnx(layers(2), layers(3))


@cell("tree_list_grows", "eqx_module", "tree_structure", advice=None, **grown("model.layers"))
def grows_eqx_module() -> None:
    call_eqx(eqx_model(layers=[ones()] * 2), eqx_model(layers=[ones()] * 3))


@cell("tree_list_grows", "optax_state", "tree_structure", advice=None,
      **grown("opt_state[0].mu"))
def grows_optax_state() -> None:  # one more layer's parameters; the moments follow
    import optax

    tx = optax.adam(1e-3)
    call_traced("opt_state", tx.init([ones()] * 2), tx.init([ones()] * 3))


@cell("tree_list_grows", "custom_pytree", "tree_structure", advice=LENGTH, **grown("batch"))
def grows_custom_pytree() -> None:
    call_traced("batch", Stack([ones()] * 2), Stack([ones()] * 3))


# -- tracing contexts: one cell each (a context belongs to no argument) --------------------------
def in_context(manager: Callable[[], Any]) -> None:
    @jax.jit
    def step(x: Any) -> Any:
        return x @ x

    x = jnp.ones((2, 2))  # made outside the context: only the context changes
    step(x)
    with manager():
        step(x)


def enable_x64() -> Any:
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64 as experimental  # JAX < 0.8

    return experimental()


@cell("ctx_x64", "positional", "tracing_context", "jax_enable_x64", before="False",
      after="True", advice=ONCE)
def context_x64() -> None:
    in_context(enable_x64)


@cell("ctx_matmul_precision", "positional", "tracing_context", "jax_default_matmul_precision",
      before="None", after="'highest'", advice=ONCE)
def context_matmul_precision() -> None:
    in_context(lambda: jax.default_matmul_precision("highest"))


@cell("ctx_dtype_promotion", "positional", "tracing_context", "jax_numpy_dtype_promotion",
      before="'standard'", after="'strict'", advice=ONCE)
def context_dtype_promotion() -> None:
    in_context(lambda: jax.numpy_dtype_promotion("strict"))


@cell("ctx_default_device", "positional", "tracing_context", "jax_default_device",
      before="None", after=rx(r"(?i)cpu"), advice=ONCE)
def context_default_device() -> None:
    in_context(lambda: jax.default_device(jax.devices("cpu")[0]))


# -- a new function object: advice names the line that creates it, not the call ----------------
def creating_line(marker: str) -> re.Pattern[str]:
    line = source_line(marker)
    return rx(rf"(?s)(?=.*matrix_structures\.py:{line}\b)(?=.*(once|outside the loop))")


@cell("new_function", "positional", "new_function", None, function="<lambda>",
      advice=creating_line("new lambda"))
def new_function_lambda() -> None:
    for _epoch in range(2):
        step = jax.jit(lambda v: v + 1)  # new lambda
        step(ones())


def scale(x: Any, *, k: float) -> Any:
    return x * k


@cell("new_function", "keyword", "new_function", None, function="scale",
      advice=creating_line("new partial"))
def new_function_partial() -> None:
    for _epoch in range(2):
        step = jax.jit(functools.partial(scale, k=2.0))  # new partial
        step(ones())


# -- a library module's Python-bool mode flag: each mode compiles once, as expected -------------
LIBRARY_MODE: dict[str, Any] = {"before": "False", "after": "True", "advice": MODE_SWITCH,
                                "forbid": (NO_TRACING,)}


@cell("library_mode", "nnx_module", "tree_structure", "model.bn.use_running_average",
      **LIBRARY_MODE)
def library_mode_nnx_module() -> None:  # BatchNorm branches on it in Python
    nnx = flax_classes()[3]
    model = nnx_model(bn=nnx.BatchNorm(3, rngs=nnx.Rngs(0)))()

    def mode(train: bool) -> Any:
        model.train() if train else model.eval()
        return model

    call_nnx(lambda: mode(True), lambda: mode(False))


@cell("library_mode", "eqx_module", "static_value", "model.layers.inference", **LIBRARY_MODE)
def library_mode_eqx_module() -> None:  # Dropout branches on it in Python
    eqx = eqx_classes()[2]
    model = eqx_model(layers=eqx.nn.Dropout(0.5))
    call_eqx(model, eqx.nn.inference_mode(model))
