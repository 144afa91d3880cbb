"""Which traced leaves of a call were Python scalars: a Python number and an array made from one
without a dtype are both weakly typed with the same abstract value, and the advice on a
``weak_type`` re-compile names which it was. Cache misses only, inside the hooks' ``try``;
public JAX API only (``jax.tree_util``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

_PYTHON_SCALARS = (bool, int, float, complex)  # exactly these types: np.float64 is no scalar


def python_scalar_leaves(names: Sequence[str], avals: Sequence[Any], args: tuple[Any, ...],
                         kwargs: dict[str, Any], static_nums: Collection[int],
                         static_names: Collection[str]) -> tuple[str, ...] | None:
    """The names of the leaves passed as Python scalars (``()`` when none is weakly typed);
    None when the arguments do not line up with ``avals`` (a wrapper's own arguments)."""
    if not any(getattr(aval, "weak_type", False) for aval in avals):
        return ()
    import jax  # lazy: capture loads before the job's environment is set

    dynamic = ([a for i, a in enumerate(args) if i not in static_nums],
               {k: v for k, v in kwargs.items() if k not in static_names})
    values = jax.tree_util.tree_leaves(dynamic)  # the order jit flattens them in
    if len(values) != len(avals) or len(names) != len(avals):
        return None
    return tuple(name for name, value in zip(names, values, strict=True)
                 if type(value) in _PYTHON_SCALARS)
