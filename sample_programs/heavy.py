"""A slow compile, and why: a 300-step Python loop and a 16 MB numpy table baked into the program.

    recompile-cli run sample_programs/heavy.py            # names both, with their fixes
    recompile-cli run sample_programs/heavy.py --fixed    # jax.lax.fori_loop, TABLE passed in
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

TABLE = np.linspace(0.0, 1.0, 2048 * 2048, dtype=np.float32).reshape(2048, 2048)  # 16 MB


@jax.jit
def normalize(x):
    return (x - x.mean()) / (x.std() + 1e-6)


@jax.jit
def simulate(x, rows):
    for _ in range(300):  # unrolled while tracing: 1,500 equations
        x = x + 0.01 * jnp.tanh(x) * jnp.cos(x)
    looked_up = jnp.asarray(TABLE)[rows]  # TABLE becomes a constant of the program
    return normalize(x) + looked_up.sum(axis=0)[: x.shape[0]]


@jax.jit
def simulate_fixed(x, rows, table):
    x = jax.lax.fori_loop(0, 300, lambda _, x: x + 0.01 * jnp.tanh(x) * jnp.cos(x), x)
    return normalize(x) + table[rows].sum(axis=0)[: x.shape[0]]


def main(fixed=False):
    x = jnp.ones(1024, dtype=jnp.float32)
    rows = jnp.arange(4)
    normalize(x).block_until_ready()
    if fixed:
        simulate_fixed(x, rows, jnp.asarray(TABLE)).block_until_ready()
    else:
        simulate(x, rows).block_until_ready()


if __name__ == "__main__":
    main(fixed="--fixed" in sys.argv[1:])
