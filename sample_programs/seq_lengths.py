"""A sequence-length sweep: every new length compiles `encode` again.

    recompile-cli profile sample_programs/seq_lengths.py:encode --args sample_programs/seq_lengths.yaml

The suggestion proposes power-of-two buckets and predicts the compile count; the bucketed spec
re-runs the same lengths padded that way to confirm it:

    recompile-cli profile sample_programs/seq_lengths.py:encode --args sample_programs/seq_lengths_bucketed.yaml
"""

import jax
import jax.numpy as jnp

EMBED = 16


@jax.jit
def encode(tokens):
    """A toy encoder: embed, mix, pool. `tokens` is f32[length]."""
    x = jnp.outer(tokens, jnp.arange(EMBED, dtype=tokens.dtype))
    x = jnp.tanh(x @ jnp.ones((EMBED, EMBED), x.dtype))
    return x.mean(axis=0)


def next_power_of_two(n):
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def padded_tokens(length):
    """`length` real tokens padded with zeros to the next power of two (mask them in real code)."""
    tokens = jnp.arange(1, length + 1, dtype=jnp.float32)
    return jnp.pad(tokens, (0, next_power_of_two(length) - length))


if __name__ == "__main__":
    for length in range(1, 41):
        encode(jnp.arange(1, length + 1, dtype=jnp.float32))
    print("encoded 40 sequence lengths")
