"""`jax.lax.cond` instead of a Python `if`: one compile handles both branches.

    recompile-cli profile sample_programs/lax_cond.py:example_function_lax --args sample_programs/lax_cond.yaml
"""

import jax
import jax.numpy as jnp


@jax.jit
def example_function_lax(x, size_param_val):
    pred = size_param_val > 5

    def true_fun(operand):
        return jnp.sum(operand * 2.0)

    def false_fun(operand):
        return jnp.sum(operand + 1.0)

    return jax.lax.cond(pred, true_fun, false_fun, x)


if __name__ == "__main__":
    data = jnp.arange(10.0)
    print(example_function_lax(data, jnp.array(3)))  # 55.0 = sum(x + 1)
    print(example_function_lax(data, jnp.array(7)))  # 90.0 = sum(2x)
