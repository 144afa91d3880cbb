"""The same function with `size_param` marked static: one compile per distinct value.

    recompile-cli profile sample_programs/static_args.py:example_function_static --args sample_programs/static_args.yaml

It uses `functools.partial(jax.jit, ...)` rather than `@jax.jit(static_argnums=...)`, which only
JAX >= 0.8 accepts: every sample imports on every supported JAX (0.4.30 and newer).
"""

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, static_argnums=(1,))
def example_function_static(x, size_param):
    print(f"Compiling for size_param = {size_param}")  # runs only while tracing
    if size_param > 5:
        return jnp.sum(x * 2.0)
    else:
        return jnp.sum(x + 1.0)


if __name__ == "__main__":
    data = jax.random.normal(jax.random.PRNGKey(0), (10,))
    for size in (3, 3, 7, 7):
        print(example_function_static(data, size))
