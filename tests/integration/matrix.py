"""The whole change x container matrix of issue 18 (see ``matrix_cells.py``): importing this
module registers every cell in ``CELLS``; ``IMPOSSIBLE`` lists the pairs that cannot occur, each
with the reason; ``table()`` renders the matrix for docs/causes.md's "What it explains" section
(``python tests/integration/matrix.py`` prints it). The cells live in ``matrix_leaves.py``,
``matrix_statics.py``, ``matrix_structures.py`` and ``matrix_reads.py``; ``test_matrix.py``
runs them."""

from __future__ import annotations

import matrix_leaves  # noqa: F401  (registers its cells)
import matrix_reads  # noqa: F401
import matrix_statics  # noqa: F401
import matrix_structures  # noqa: F401
from matrix_cells import CELLS, CHANGES, CONTAINERS

# -- the pairs that cannot occur -------------------------------------------------------------------
ONE_CONTEXT = "a tracing context belongs to no argument: the positional cell covers it"
ONE_FUNCTION = ("a new function object is the function, not an argument: the lambda (pos) and "
                "functools.partial (kw) cells cover it")
UNHASHABLE_STATIC = ("as a static argument a dict or list is unhashable (static_unhashable); a "
                     "traced one cannot hold a non-array leaf")
ONLY_ARRAYS = "an optimizer state holds only arrays (the optimizer itself: static_callable)"
FIXED_FIELDS = "an instance cannot gain a field: its class fixes them"
NO_STATIC_FIELDS = "every entry is pytree data: it has no static fields"
NEVER_HASHED = ("JAX compares a pytree node's static data with == and never hashes it: no "
                "refusal (a new object compiles again: 'static, prints equal')")
ELEMENTWISE = "a traced container holds a number as a leaf, not a static value: the dtype rows"
MODULE_FLAG = "a library module's flag is an attribute of its module: the nnx and eqx columns"
ONE_READ = "a global read on the host belongs to no argument: the positional cell covers it"

IMPOSSIBLE: dict[tuple[str, str], str] = {
    ("key_type", "optax_state"): "an optimizer state holds moments shaped like the "
                                 "parameters, never PRNG keys",
    ("static_value", "dict"): UNHASHABLE_STATIC,
    ("static_value", "list"): UNHASHABLE_STATIC,
    ("static_value", "nnx_module"): "an NNX Module is graph state, not a static argument; its "
                                    "int attributes are static fields (static_field)",
    ("static_value", "optax_state"): ONLY_ARRAYS,
    ("static_prints_equal", "dict"): UNHASHABLE_STATIC,
    ("static_prints_equal", "list"): UNHASHABLE_STATIC,
    ("static_prints_equal", "optax_state"): ONLY_ARRAYS,
    ("static_callable", "dict"): UNHASHABLE_STATIC,
    ("static_callable", "list"): UNHASHABLE_STATIC,
    ("static_unhashable", "optax_state"): ONLY_ARRAYS,
    **{("static_hash_raises", c): NEVER_HASHED for c in (
        "register_dataclass", "flax_struct", "nnx_module", "eqx_module", "custom_pytree")},
    **{(change, c): UNHASHABLE_STATIC for change in (
        "static_hash_raises", "static_eq_raises", "function_value") for c in ("dict", "list")},
    **{(change, "optax_state"): ONLY_ARRAYS for change in (
        "static_hash_raises", "static_eq_raises", "static_type", "function_value")},
    ("static_type", "dict"): ELEMENTWISE,
    ("static_type", "list"): ELEMENTWISE,
    **{("library_mode", c): MODULE_FLAG for c in CONTAINERS
       if c not in ("nnx_module", "eqx_module")},
    **{("host_callback", c): ONE_READ for c in CONTAINERS if c != "positional"},
    ("tree_key_added", "list"): "a list has no keys: it grows (tree_list_grows)",
    ("tree_key_added", "tuple"): "a tuple has no keys: it grows (tree_list_grows)",
    ("tree_key_added", "namedtuple"): FIXED_FIELDS,
    ("tree_key_added", "register_dataclass"): FIXED_FIELDS,
    ("tree_key_added", "flax_struct"): FIXED_FIELDS,
    ("tree_key_added", "eqx_module"): FIXED_FIELDS,
    ("tree_key_added", "custom_pytree"): "a custom node's children have no keys: they grow "
                                         "(tree_list_grows)",
    ("tree_list_grows", "positional"): "one more argument is an argument added (tree_key_added)",
    ("tree_list_grows", "keyword"): "one more argument is an argument added (tree_key_added)",
    ("tree_list_grows", "dict"): "a dict grows by a key (tree_key_added)",
    ("static_field", "positional"): "a static argument is a static value (static_value)",
    ("static_field", "keyword"): "a static argument is a static value (static_value)",
    ("static_field", "dict"): NO_STATIC_FIELDS,
    ("static_field", "list"): NO_STATIC_FIELDS,
    ("static_field", "tuple"): NO_STATIC_FIELDS,
    ("static_field", "namedtuple"): NO_STATIC_FIELDS,
    ("static_field", "optax_state"): "optax states have no static fields",
    **{(context, container): ONE_CONTEXT for context in CHANGES if context.startswith("ctx_")
       for container in CONTAINERS if container != "positional"},
    **{("new_function", container): ONE_FUNCTION for container in CONTAINERS
       if container not in ("positional", "keyword")},
}


# -- docs/causes.md's table -----------------------------------------------------------------------
ROW_LABELS = {
    "shape": "shape", "dtype": "dtype", "weak_type": "weak type",
    "static_value": "static value", "static_prints_equal": "static, prints equal",
    "static_callable": "static callable re-created", "static_unhashable": "unhashable static",
    "static_hash_raises": "static whose `__hash__` raises",
    "static_eq_raises": "static whose `__eq__` raises",
    "static_type": "equal static, other type", "function_value": "another function value",
    "library_mode": "library mode flag",
    "host_callback": "global read by a host callback (never stale)",
    "tree_key_added": "key or argument added", "tree_none_array": "`None` -> array",
    "tree_list_grows": "list grows", "static_field": "static field",
    "sharding": "sharding", "auto_mesh": "placed on an `Auto` mesh", "committed": "committed vs not",
    "ctx_x64": "`enable_x64`", "ctx_matmul_precision": "`default_matmul_precision`",
    "ctx_dtype_promotion": "`numpy_dtype_promotion`", "ctx_default_device": "`default_device`",
    "key_type": "typed vs raw PRNG key", "new_function": "new function object",
}
CODE_LABELS = {
    "shape": "shape", "dtype": "dtype", "weak_type": "weak", "static_value": "static",
    "tree_structure": "tree", "arg_passing": "args", "tracing_context": "ctx",
    "sharding": "shard", "new_function": "new-fn", "first_compile": "once", None: "refused",
}


def table() -> str:
    """The matrix in Markdown: per change (rows) and container (columns), the cause code the
    report gives, ``+`` where it also advises a fix, ``-`` where the pair cannot occur."""
    columns = [short for short, _ in CONTAINERS.values()]
    lines = ["| change | " + " | ".join(columns) + " |",
             "| --- |" + " --- |" * len(columns)]
    for change in CHANGES:
        row = []
        for container in CONTAINERS:
            found = CELLS.get((change, container))
            row.append("-" if found is None else
                       CODE_LABELS[found.code] + ("+" if found.advice is not None else ""))
        lines.append(f"| {ROW_LABELS[change]} | " + " | ".join(row) + " |")
    legend = "; ".join(f"`{short}` {what}" for short, what in CONTAINERS.values())
    refused = ("JAX refuses the call: an event of the function called, naming the static "
               "argument where the call shows it, whether or not the program catches it")
    named = {"first_compile": "compiles once: nothing changed for JAX"}
    codes = ", ".join(f"`{label}` {named.get(str(code), code) if code else refused}"
                      for code, label in CODE_LABELS.items() if label != code)
    return "\n".join([*lines, "", f"Columns: {legend}.", "",
                      f"Cause codes: {codes}; `+` with advice; `-` cannot occur."])


if __name__ == "__main__":
    print(table())
