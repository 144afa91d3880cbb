"""An eager compile storm at one line of yours, as in a PPO training loop with DEBUG on: the
jitted `rollout_step` compiles once, but the `jax.debug.callback` that logs finished episodes
indexes its arguments with a boolean mask (`returns[done]`). Outside jit, each new count of True
is a new shape, so JAX compiles its eager gather (and the operations around it) again on most
calls: "rollout_step: 1 compile, no re-compile", while most of the compile time is spent at the
callback's line.

    recompile-cli run sample_programs/callback_storm.py
    recompile-cli run --max-eager-compiles 50 sample_programs/callback_storm.py   # exits 1
    recompile-cli run sample_programs/callback_storm.py --numpy                   # the fix
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

ENVS = 64
EPISODE_RETURNS: list[float] = []


def log_episodes(returns, done):
    finished = returns[done]  # boolean mask: a new result shape per count of True
    if finished.size:
        EPISODE_RETURNS.append(float(finished.mean()))


def log_episodes_numpy(returns, done):
    returns, done = np.asarray(returns), np.asarray(done)  # NumPy compiles nothing
    finished = returns[done]
    if finished.size:
        EPISODE_RETURNS.append(float(finished.mean()))


def make_rollout_step(logger):
    @jax.jit
    def rollout_step(key, returns):
        key, reward_key, done_key = jax.random.split(key, 3)
        returns = returns + jax.random.normal(reward_key, returns.shape)
        done = jax.random.uniform(done_key, returns.shape) < 0.3
        jax.debug.callback(logger, returns, done)
        return key, jnp.where(done, 0.0, returns)

    return rollout_step


def main(steps: int = 60, numpy: bool = False) -> None:
    rollout_step = make_rollout_step(log_episodes_numpy if numpy else log_episodes)
    key = jax.random.PRNGKey(0)
    returns = jnp.zeros(ENVS)
    for _ in range(steps):
        key, returns = rollout_step(key, returns)
    jax.block_until_ready(returns)
    jax.effects_barrier()  # every callback has run


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--numpy", action="store_true", help="convert to NumPy in the callback")
    args = parser.parse_args()
    main(args.steps, args.numpy)
