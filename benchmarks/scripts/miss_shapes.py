"""The miss path: a jitted function compiled at SHAPES distinct input shapes (trace, lower and
XLA compile every time). Prints the seconds the misses took.

    python benchmarks/scripts/miss_shapes.py [SHAPES] [--explain]

``--explain`` turns on JAX's own explainer (``jax_explain_cache_misses``), the baseline that
recompile-cli should beat; its log output is dropped.
"""

import logging
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

args = [a for a in sys.argv[1:] if not a.startswith("--")]
shapes = int(args[0]) if args else 500
if "--explain" in sys.argv:
    jax.config.update("jax_explain_cache_misses", True)
    logging.getLogger("jax").addHandler(logging.NullHandler())
    logging.getLogger("jax").propagate = False


@jax.jit
def f(x, y):
    return jnp.sin(x) * y + x.sum()


y = jnp.float32(2.0)
start = time.perf_counter()
for n in range(1, shapes + 1):
    f(np.ones((n,), np.float32), y).block_until_ready()  # numpy input: one compile per shape
print(f"misses {time.perf_counter() - start:.4f}")
