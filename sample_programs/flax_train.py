"""A real training step: a Flax model's parameters, an optax state whose learning rate is an
injected hyperparameter, a PRNG key for dropout, and a static config.

Two re-compilations wait in the loop of `main`, as in real training scripts: the learning rate
is decayed at epoch 2 with a Python float (weakly typed, where optax made a float32 array), and
the last batch is smaller.

    recompile-cli run sample_programs/flax_train.py
    recompile-cli forecast sample_programs/flax_train.py:train_step --args sample_programs/flax_train.yaml

The factories (`init_params`, `init_opt_state`, `decayed_opt_state`, `make_key`,
`default_config`) build the step's arguments for a spec (`{call: "flax_train:init_params"}`,
sample_programs/flax_train.yaml); each returns a new value built from its arguments alone, and
the step changes none of them, so calling a factory once or once per call gives the same
arguments.
"""

import argparse
import dataclasses
import functools

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn


@dataclasses.dataclass(frozen=True)
class Config:
    """What changes the program: hashable, so it is passed as a static argument."""

    features: int = 8
    hidden: int = 32
    dropout: float = 0.1


class MLP(nn.Module):
    config: Config

    @nn.compact
    def __call__(self, x, train):
        x = nn.relu(nn.Dense(self.config.hidden)(x))
        x = nn.Dropout(self.config.dropout, deterministic=not train)(x)
        return nn.Dense(1)(x)


def default_config():
    return Config()


def init_params(seed=0, config=None):
    config = config or Config()
    x = jnp.zeros((1, config.features))
    return MLP(config).init(jax.random.PRNGKey(seed), x, train=False)["params"]


def optimizer():
    return optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)


def init_opt_state(seed=0, config=None):
    return optimizer().init(init_params(seed, config))


def decayed_opt_state(seed=0, config=None, learning_rate=5e-3):
    """The optimizer state after a decay that sets the rate to a Python float, as `main` does."""
    state = init_opt_state(seed, config)
    state.hyperparams["learning_rate"] = learning_rate
    return state


def make_key(seed=0):
    return jax.random.PRNGKey(seed)


@functools.partial(jax.jit, static_argnames=("config",))
def train_step(params, opt_state, batch, key, config):
    def loss_fn(p):
        pred = MLP(config).apply({"params": p}, batch["inputs"], train=True,
                                 rngs={"dropout": key})
        return jnp.mean((pred - batch["targets"]) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = optimizer().update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def batches(x, y, batch_size):
    for start in range(0, len(x), batch_size):
        yield {"inputs": x[start:start + batch_size], "targets": y[start:start + batch_size]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    config = default_config()
    x = jax.random.normal(make_key(1), (args.examples, config.features))
    y = x @ jnp.arange(config.features, dtype=jnp.float32).reshape(config.features, 1)
    params, opt_state, key = init_params(0, config), init_opt_state(0, config), make_key(2)
    learning_rate = 1e-2
    for epoch in range(args.epochs):
        if epoch == 2:  # decay: a Python float where optax made a float32 array
            learning_rate *= 0.5
            opt_state.hyperparams["learning_rate"] = learning_rate
        for batch in batches(x, y, args.batch_size):
            key, step_key = jax.random.split(key)
            params, opt_state, loss = train_step(params, opt_state, batch, step_key, config)
        print(f"epoch {epoch}: loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
