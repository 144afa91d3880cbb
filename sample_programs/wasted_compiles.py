"""Compiles that bought nothing: the same program compiled again.

`train_step` takes its `Config` as a static argument. The program reads `cfg.lr` but never
`cfg.log_every`, yet each new `log_every` compiles `train_step` again, to the same program. The
weights are normalised after each run by a function jitted anew each time (a lambda made in
the loop): each compiles the same program again too.

    recompile-cli run sample_programs/wasted_compiles.py
    recompile-cli run --max-wasted-compiles 0 sample_programs/wasted_compiles.py   # exits 1
    python sample_programs/wasted_compiles.py --fixed                              # the fix
"""

import argparse
import dataclasses
import functools

import jax
import jax.numpy as jnp

FEATURES = 8


@dataclasses.dataclass(frozen=True)
class Config:
    lr: float = 0.1
    log_every: int = 10  # read by the Python loop only


@dataclasses.dataclass(frozen=True)
class FixedConfig:
    lr: float = 0.1
    log_every: int = dataclasses.field(default=10, compare=False)  # not in the hash


@functools.partial(jax.jit, static_argnames="cfg")
def train_step(w, x, y, cfg):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - cfg.lr * grad, loss


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args(argv)
    x = jax.random.normal(jax.random.PRNGKey(0), (64, FEATURES))
    y = x @ jnp.arange(FEATURES, dtype=jnp.float32)
    w = jnp.zeros(FEATURES)
    make = FixedConfig if args.fixed else Config
    normalize_once = jax.jit(lambda v: v / jnp.linalg.norm(v))
    for log_every in (5, 10, 20):  # three runs, logging more or less often
        cfg = make(lr=0.1, log_every=log_every)
        for step in range(args.steps):
            w, loss = train_step(w, x, y, cfg)
            if step % cfg.log_every == 0:
                print(f"log_every {log_every} step {step}: loss {float(loss):.4f}")
        normalize = normalize_once if args.fixed else jax.jit(lambda v: v / jnp.linalg.norm(v))
        w = normalize(w)


if __name__ == "__main__":
    main()
