"""What the compile-cost profile (``capture.jax_cost``) and the program fingerprint
(``capture.jax.programs.fingerprint``, computed with it) add to the miss path, in process, paired.

    python benchmarks/compile_cost.py [--reps N] [--ratios-only]

Each repetition compiles the same fresh programs twice, under a ``Recorder`` with the profile on
and with it off (``Recorder(compile_cost=False)``), in alternating order, JAX's caches cleared
before each: a function with a 100-step unrolled Python loop (~400 equations), one with a 4 MB
closed-over table, and 30 small functions of new shapes. The figure is the ratio of the
seconds with / without ("paired"; on a shared machine its spread is wide), and the ratio of the
seconds with the profile to those seconds less the time spent inside ``jax_cost.cost_of`` and
``fingerprint_of`` ("attributed": what the profile itself costs, measured in the same run); the
goal is <= 1.05 for both (``benchmarks/run.py`` goal ``cost``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp
import numpy as np

from recompile_cli.capture.jax.programs import cost as jax_cost
from recompile_cli.capture.jax.programs import fingerprint as jax_fingerprint
from recompile_cli.capture.recorder import Recorder

TABLE = np.linspace(0.0, 1.0, 1024 * 1024, dtype=np.float32).reshape(1024, 1024)  # 4 MB


def programs() -> float:
    """Compile the programs once (fresh function objects); returns the seconds."""

    def loop(x):
        for _ in range(100):
            x = x + 0.01 * jnp.tanh(x) * jnp.cos(x)
        return x

    def table(i):
        return jnp.asarray(TABLE)[i].sum()

    start = time.perf_counter()
    jax.jit(loop)(jnp.ones(256)).block_until_ready()
    jax.jit(table)(jnp.arange(3)).block_until_ready()
    for n in range(1, 31):
        jax.jit(lambda x: jnp.sin(x) * 2 + x.sum())(jnp.ones(n)).block_until_ready()
    return time.perf_counter() - start


_SPENT: list[float] = []  # seconds inside jax_cost.cost_of, per call


def _timed(function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _SPENT.append(time.perf_counter() - start)

    return timed


def measure(cost: bool) -> float:
    jax.clear_caches()
    _SPENT.clear()
    with Recorder("bench", compile_cost=cost):
        return programs()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--ratios-only", action="store_true")
    args = parser.parse_args()
    jax_cost.cost_of = _timed(jax_cost.cost_of)  # the recorder calls it through the module
    jax_fingerprint.fingerprint_of = _timed(jax_fingerprint.fingerprint_of)  # and the same here
    measure(True), measure(False)  # warm up: imports, JAX's own first-time work
    paired, attributed = [], []
    for rep in range(args.reps):
        order = (True, False) if rep % 2 == 0 else (False, True)
        seconds, inside = {}, 0.0
        for cost in order:
            seconds[cost] = measure(cost)
            if cost:
                inside = sum(_SPENT)
        paired.append(seconds[True] / seconds[False])
        attributed.append(seconds[True] / (seconds[True] - inside))
        if not args.ratios_only:
            print(f"rep {rep}: with {seconds[True]:.3f} s ({inside * 1000:.1f} ms of it "
                  f"profiling), without {seconds[False]:.3f} s: paired ratio "
                  f"{paired[-1]:.3f}, attributed {attributed[-1]:.4f}")
    if not args.ratios_only:
        print(f"median paired ratio {statistics.median(paired):.3f}, attributed "
              f"{statistics.median(attributed):.4f} (goal <= 1.05)")
    print(json.dumps({"paired": paired, "attributed": attributed}))


if __name__ == "__main__":
    main()
