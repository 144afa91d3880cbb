"""A small training loop whose last batch is smaller: `train_step` compiles twice.

100 examples in batches of 32 leave a last batch of 4, a new shape at batch['x'].

    recompile-cli run sample_programs/train_loop.py --epochs 1
    recompile-cli profile sample_programs/train_loop.py:train_step --args sample_programs/train_loop.yaml
"""

import argparse

import jax
import jax.numpy as jnp

FEATURES = 8


def init_params(seed=0):
    key = jax.random.PRNGKey(seed)
    return {"w": jax.random.normal(key, (FEATURES, 1)) * 0.1, "b": jnp.zeros((1,))}


def loss_fn(params, batch):
    pred = batch["x"] @ params["w"] + params["b"]
    return jnp.mean((pred - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr=0.1):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


def batches(x, y, batch_size):
    for start in range(0, len(x), batch_size):
        yield {"x": x[start:start + batch_size], "y": y[start:start + batch_size]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    key = jax.random.PRNGKey(1)
    x = jax.random.normal(key, (args.examples, FEATURES))
    y = x @ jnp.arange(FEATURES, dtype=jnp.float32).reshape(FEATURES, 1)
    params = init_params()
    for epoch in range(args.epochs):
        for batch in batches(x, y, args.batch_size):
            params, loss = train_step(params, batch)
        print(f"epoch {epoch}: loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
