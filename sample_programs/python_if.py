"""A Python `if` on a traced argument (from "why recompilation occurs").

With current JAX this raises TracerBoolConversionError at the first call: `size_param` is a
traced value, so Python cannot branch on it. recompile-cli names the argument and suggests
`static_argnames=('size_param',)` or `jax.lax.cond`.

    recompile-cli profile sample_programs/python_if.py:example_function --args sample_programs/python_if.yaml
"""

import jax
import jax.numpy as jnp


@jax.jit
def example_function(x, size_param):
    # Python control flow depends on size_param's value
    if size_param > 5:
        return jnp.sum(x * 2.0)
    else:
        return jnp.sum(x + 1.0)


if __name__ == "__main__":
    data = jax.random.normal(jax.random.PRNGKey(0), (10,))
    for size in (3, 3, 7, 7):
        print(example_function(data, size))
