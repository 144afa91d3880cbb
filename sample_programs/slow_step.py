"""A training step that compiles once and is still slow on every call: a `jax.debug.callback`
that logs the loss keeps `train_step` off JAX's C++ fast path, so each of its 200 calls runs
through JAX's Python dispatch (no trace, no compile, nothing in jax_log_compiles). A clipping step
compiled ahead of time with a `jax.pure_callback`, called every 10 steps, is slow on every call
too.

    recompile-cli run sample_programs/slow_step.py
    recompile-cli run --max-slow-calls 0 sample_programs/slow_step.py     # exits 1
    python sample_programs/slow_step.py --no-callback                     # the fast version
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

FEATURES = 8
LOSSES = []


def log_loss(loss):
    LOSSES.append(float(loss))


def make_train_step(with_callback):
    def train_step(w, x, y):
        loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        if with_callback:
            jax.debug.callback(log_loss, loss)
        return w - 0.1 * grad, loss

    return jax.jit(train_step)


def clip_norm(v):
    return jax.pure_callback(lambda a: np.asarray(a / max(np.linalg.norm(a), 1.0), a.dtype),
                             jax.ShapeDtypeStruct(v.shape, v.dtype), v)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no-callback", action="store_true")
    args = parser.parse_args(argv)
    x = jax.random.normal(jax.random.PRNGKey(0), (64, FEATURES))
    y = x @ jnp.arange(FEATURES, dtype=jnp.float32)
    w = jnp.zeros(FEATURES)
    train_step = make_train_step(not args.no_callback)
    for _ in range(args.steps):
        w, loss = train_step(w, x, y)
    clip = jax.jit(clip_norm).lower(jax.block_until_ready(w)).compile()
    for _ in range(args.steps // 10):
        w = clip(w)
    print(f"loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
