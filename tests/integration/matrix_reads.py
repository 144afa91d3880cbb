"""The matrix's cells of values read at trace time or on the host: globals that a host callback
(``jax.debug.callback``, ``jax.pure_callback``, ``io_callback``) reads are read at every call,
never baked into the program, so they are never stale captures; a global that the traced code
reads is. Importing it registers them in ``matrix_cells.CELLS``."""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental import io_callback
from matrix_cells import cell
from matrix_containers import ones

STEP, SCALE, LOGGED, BAKED = 0, 2.0, [], 1.0


@cell("host_callback", "positional", "first_compile", None, compiles=1, stale=("BAKED",))
def host_callback_positional() -> None:
    global STEP, SCALE, BAKED

    @jax.jit
    def step(x: Any) -> Any:
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        jax.debug.callback(lambda v: LOGGED.append(STEP), x)
        y = jax.pure_callback(lambda v: (v * SCALE).astype(v.dtype), shape, x)
        z = io_callback(lambda v: v + len(LOGGED), shape, x, ordered=True)
        return y + z + BAKED  # BAKED is read while tracing: baked into the program

    for i in range(2):
        STEP, SCALE, BAKED = i, 2.0 + i, 1.0 + i
        step(ones())
