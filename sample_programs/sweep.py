"""One run of a hyperparameter sweep: the learning rate, read from the command line, is baked
into `train_step` as a constant, so every run of the sweep compiles a different program and
misses JAX's persistent compilation cache.

    recompile-cli run --compilation-cache /tmp/jax-cache --save lr1.json sample_programs/sweep.py 0.1
    recompile-cli run --compilation-cache /tmp/jax-cache --save lr2.json sample_programs/sweep.py 0.05
    recompile-cli diff lr1.json lr2.json

The fix: pass the learning rate as an argument (`train_step(w, x, y, lr)`), and one cache entry
serves the whole sweep.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

LEARNING_RATE = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1


def loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@jax.jit
def train_step(w, x, y):
    grads = jax.grad(loss)(w, x, y)
    return w - LEARNING_RATE * grads  # a Python float: a constant of the compiled program


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = (x @ np.arange(8, dtype=np.float32)).reshape(64, 1)
    w = np.zeros((8, 1), np.float32)
    for _ in range(20):
        w = train_step(w, x, y)
    print(f"learning rate {LEARNING_RATE}: loss {float(loss(w, x, y)):.4f}")


if __name__ == "__main__":
    main()
