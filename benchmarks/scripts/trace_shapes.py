"""Trace-only misses: a jitted function traced (never compiled) at N distinct shapes with
``jax.jit(f).trace(...)``; this is what a signature table of N rows costs to record.

    python benchmarks/scripts/trace_shapes.py [N]
"""

import sys
import time

import jax
import jax.numpy as jnp

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000


def f(x, y):
    return jnp.tanh(x) * y + 1.0


jitted = jax.jit(f)
y = jax.ShapeDtypeStruct((), jnp.float32)
start = time.perf_counter()
for i in range(1, n + 1):
    jitted.trace(jax.ShapeDtypeStruct((i, 4), jnp.float32), y)
print(f"traces {time.perf_counter() - start:.4f}")
