"""The change x container matrix of issue 18, as data: what a user changes between two calls of a
jitted function (a shape, a static value, a tree's structure, a context...), inside which
container (a positional argument, a dict, a flax ``struct.dataclass``, an equinox Module...), and
what recompile-cli must say about it: the cause code, the argument path down to the leaf or
field, the ``before -> after`` text, and the advice (or that there is none).

This module holds the vocabulary: the changes, the containers, ``Cell`` and ``cell()`` (which
registers a cell in ``CELLS``), and the patterns of right and wrong advice. The containers'
classes are in ``matrix_containers.py``; the cells in ``matrix_leaves.py`` (one changed leaf),
``matrix_statics.py`` and ``matrix_structures.py``; ``matrix.py`` imports them all and holds
``IMPOSSIBLE`` and the README's table. flax, equinox and optax are imported inside the cells
that use them, so every module imports with JAX alone (on any supported version).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

CHANGES: dict[str, str] = {
    "shape": "an array's shape",
    "dtype": "an array's dtype",
    "weak_type": "a weakly typed value (a Python scalar; `jnp.array(1.0)` in models), then a typed one",
    "static_value": "a hashable static value (an int, or a field of a static config)",
    "static_prints_equal": "a static value that prints the same but compares unequal",
    "static_callable": "a static callable re-created (a lambda, an optax optimizer)",
    "static_unhashable": "an unhashable static value (a list or dict)",
    "static_hash_raises": "a static value whose `__hash__` raises",
    "static_eq_raises": "a static value (or a node's static data) whose `__eq__` raises",
    "static_type": "an equal static value of another type (`2`, then `np.int64(2)`)",
    "function_value": "a function value replaced by another (`jax.nn.gelu`, then "
                      "`jax.nn.leaky_relu`)",
    "library_mode": "a library module's Python-bool mode flag (`Dropout`, `BatchNorm`)",
    "host_callback": "globals read by a host callback (`jax.debug.callback`, "
                     "`pure_callback`, `io_callback`) change",
    "tree_key_added": "a dict key, attribute or argument added",
    "tree_none_array": "`None`, then an array",
    "tree_list_grows": "a list or tuple grows",
    "static_field": "a static field changes (meta field, `pytree_node=False`, `static=True`, aux data)",
    "sharding": "a `NamedSharding`'s spec (on a 1-device mesh)",
    "auto_mesh": "an array placed `P('d')` on a mesh of `Auto` axes (its abstract value: "
                 "`P(None,)`)",
    "committed": "an uncommitted array, then one committed by `jax.device_put`",
    "ctx_x64": "`jax.enable_x64`",
    "ctx_matmul_precision": "`jax.default_matmul_precision`",
    "ctx_dtype_promotion": "`jax.numpy_dtype_promotion`",
    "ctx_default_device": "`jax.default_device`",
    "key_type": "a typed key (`jax.random.key`), then a raw one (`jax.random.PRNGKey`)",
    "new_function": "a new function object (a lambda, a `functools.partial`)",
}

# container -> (README column, what it is)
CONTAINERS: dict[str, tuple[str, str]] = {
    "positional": ("pos", "a positional argument, `f(x)`"),
    "keyword": ("kw", "a keyword argument, `f(x=x)`"),
    "dict": ("dict", "a dict, `{'x': x}`"),
    "list": ("list", "a list"),
    "tuple": ("tuple", "a tuple"),
    "namedtuple": ("NT", "a `typing.NamedTuple`"),
    "register_dataclass": ("reg-dc", "a `jax.tree_util.register_dataclass` dataclass"),
    "flax_struct": ("struct", "a flax `struct.dataclass` (e.g. `TrainState`)"),
    "nnx_module": ("nnx", "an attribute of a flax NNX Module (`nnx.jit`)"),
    "eqx_module": ("eqx", "a field of an equinox Module (`eqx.filter_jit`)"),
    "optax_state": ("optax", "an optax optimizer state (or the optimizer, as a static)"),
    "custom_pytree": ("custom", "a class registered with `jax.tree_util.register_pytree_node`"),
}

# The code of a changed static field of a traced argument: JAX keys its cache on the treedef,
# which holds the static fields (the README's cause table: "a model's static attributes").
STATIC_FIELD = "tree_structure"

Text = str | re.Pattern[str] | None  # exact text, a pattern to search for, or not checked


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (change, container) pair: how to produce it, and what the report must say about the
    last miss of ``function``."""

    change: str
    container: str
    run: Callable[[], None]  # makes the calls, inside the recording
    code: str | None  # the primary cause of the last miss; None: the last call raises
    argument: Text  # the cause's argument (for an error: named in the advice)
    before: Text = None
    after: Text = None
    advice: re.Pattern[str] | None = None  # None: no suggestion at all for the function
    forbid: tuple[re.Pattern[str], ...] = ()  # in no suggestion for the function
    detail: re.Pattern[str] | None = None  # in the cause's detail, before or after
    compiles: int = 2
    needs: tuple[str, ...] = ()  # modules the cell imports (skipped when missing)
    function: str = "step"
    raises: tuple[type[BaseException], ...] = ()  # the last call raises one of these
    stale: tuple[str, ...] | None = None  # the function's stale captures (None: not checked)


CELLS: dict[tuple[str, str], Cell] = {}

MODELS = ("nnx_module", "eqx_module", "optax_state")  # containers of a model's parameters
NEEDS = {"flax_struct": ("flax",), "nnx_module": ("flax",), "eqx_module": ("equinox",),
         "optax_state": ("optax",)}


def rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# the advice expected, as patterns that a right suggestion contains
PAD = rx(r"\bpad")
CAST = rx(r"astype|dtype")
SCALAR = rx(r"Python scalar")
DTYPE_AT_CREATION = rx(r"dtype")
KEY = rx(r"jax\.random\.key|key_data|wrap_key_data")
PLACE = rx(r"(?i)\bplace|device_put")
NONE_ENTRY = rx(r"\bNone\b")
KEYS = rx(r"(?i)\bkeys\b")
LENGTH = rx(r"(?i)length|\bpad")
ONCE = rx(r"(?i)\bonce\b|outside the loop")
TRACED = rx(r"traced array|jnp\.where|lax\.cond")
EQUALITY = rx(r"(?i)one instance|__eq__|value equality|frozen")
HASHABLE = rx(r"(?i)hashable|\btuple\b")
FIELD = rx(r"(?i)on purpose|keep it fixed|data field|pytree_node")
UNEQUAL = rx(r"(?i)compares? unequal|not equal|__eq__|identity")
LAMBDA = rx(r"lambda")
OPTIMIZER = rx(r"GradientTransformation")
CONVERT = rx(r"different types.*e\.g\. `\w+\(cfg\)`")
MODE_SWITCH = rx(r"is the mode switch of `\w+`")
ADDRESS = rx(r"0x[0-9a-fA-F]{6,}")
# never right: padding a PRNG key, tracing a function, a "fix" that saves nothing
NO_PAD = rx(r"(?i)\bpad (inputs |it |them )?to\b|\(and mask\)|mask the padding")
NO_TRACING = rx(r"(?i)\bpass (it|them) as a traced array")
AS_SCALAR = rx(r"(?i)\bas a Python scalar")  # for jnp.array(1.0): it was no Python scalar
USELESS = rx(r"\b(\d+) compiles -> \1\b")


def cell(change: str, container: str, code: str | None, argument: Text,
         **expect: Any) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register ``run`` as the cell of ``(change, container)`` with these expectations."""

    def register(run: Callable[[], None]) -> Callable[[], None]:
        expect.setdefault("needs", NEEDS.get(container, ()))
        expect["forbid"] = (*expect.get("forbid", ()), USELESS)
        CELLS[change, container] = Cell(change, container, run, code, argument, **expect)
        return run

    return register
