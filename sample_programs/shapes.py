"""A function re-compiled by a new input shape (from "the trace-compile-cache cycle").

    recompile-cli profile sample_programs/shapes.py:slow_function --args sample_programs/shapes.yaml
    recompile-cli run sample_programs/shapes.py
"""

import time

import jax
import jax.numpy as jnp


@jax.jit
def slow_function(x):
    # Simulate some work with matrix operations
    for _ in range(5):
        # A Python `if` on a shape is fine: shapes are static while tracing.
        if x.shape[0] == x.shape[1]:  # noqa: SIM108 - the example shows a Python `if`
            x = jnp.dot(x, x.T) + 0.5 * x
        else:
            x = x * x + 0.5 * x
    return x


def main():
    key = jax.random.PRNGKey(0)
    data = jax.random.normal(key, (100, 100))
    data_different_shape = jax.random.normal(key, (150, 150))
    for label, value in [("first call (compilation)", data), ("second call (cached)", data),
                         ("new shape (re-compilation)", data_different_shape),
                         ("original shape again (cached)", data)]:
        start = time.time()
        slow_function(value).block_until_ready()
        print(f"{label:32s} {time.time() - start:.4f} s")


if __name__ == "__main__":
    main()
