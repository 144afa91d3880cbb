"""A cached-call loop: one compile, then CALLS cached calls of a small jitted function.

Prints the seconds the loop took; the whole-process time is measured from outside
(``benchmarks/run.py``: plain ``python`` vs ``recompile-cli run``).

    python benchmarks/scripts/hot_loop.py [CALLS]
"""

import sys
import time

import jax
import jax.numpy as jnp

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
f = jax.jit(lambda v: v * 2.0 + 1.0)
x = jnp.ones(16)
f(x).block_until_ready()
start = time.perf_counter()
for _ in range(calls):
    out = f(x)
out.block_until_ready()
print(f"loop {time.perf_counter() - start:.4f}")
