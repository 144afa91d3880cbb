"""A cache hit that runs a program compiled for other values: a stale static.

`train_step` takes its `Config` as a static argument, and `Config` compares (and hashes) by
`name` only. The second phase sets a new dropout rate under the same name: JAX finds the key
equal, reuses the executable compiled for `dropout=0.1`, and the step silently runs with the
old rate. No error, no log line, no re-compile.

    recompile-cli run --count-calls sample_programs/stale_static.py     # the warning
    recompile-cli run --count-calls --max-stale-statics 0 sample_programs/stale_static.py  # exits 1
    python sample_programs/stale_static.py --fixed                      # the fix: compare all
"""

import argparse
import functools

import jax
import jax.numpy as jnp


class Config:
    """Compared by name only: two configs of one name are equal whatever their rates."""

    def __init__(self, name: str, dropout: float) -> None:
        self.name, self.dropout = name, dropout

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class FixedConfig(Config):
    """Compared by every field the step reads."""

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Config) and (other.name, other.dropout)
                == (self.name, self.dropout))

    def __hash__(self) -> int:
        return hash((self.name, self.dropout))


@functools.partial(jax.jit, static_argnames="cfg")
def train_step(w, x, key, cfg):
    keep = jax.random.bernoulli(key, 1.0 - cfg.dropout, x.shape)
    return w - 0.1 * jnp.mean(jnp.where(keep, x, 0.0) / (1.0 - cfg.dropout))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixed", action="store_true", help="compare every field")
    args = parser.parse_args()
    make = FixedConfig if args.fixed else Config
    w, x, key = jnp.zeros(()), jnp.ones((64, 8)), jax.random.key(0)
    for dropout in (0.1, 0.5):  # phase two: a new rate under the same name
        cfg = make("base", dropout)
        for step in range(3):
            w = train_step(w, x, jax.random.fold_in(key, step), cfg)
    print(f"w = {float(w):.4f}")


if __name__ == "__main__":
    main()
