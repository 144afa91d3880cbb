"""What watching for slow calls costs, measured side by side in one process.

1. Cached calls: a ``jit(lambda x: x + 1)`` on f32[10], served by JAX's C++ fast path, with a
   recorder attached (its slow-call hooks installed) and not. Nothing of ours may run on them:
   goal <= 1.02 (the paired median of the per-repetition ratios).
2. Slow calls: a jitted step containing ``jax.debug.callback`` (every warm call runs JAX's
   Python dispatch), with a recorder attached and not: the microseconds the recording adds to
   each slow call (it is already a ~100 us Python dispatch; the goal is microseconds, not
   milliseconds: <= 20 us), and the ratio.

Each repetition alternates ``--blocks`` short blocks of calls with the recorder attached and
not and keeps the fastest block of each (``guard.paired``); the recorder checks that it saw
every slow call of its blocks and none of the cached calls.

    python benchmarks/slow_calls.py [--reps 21] [--blocks 5] [--calls 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
from guard import paired_ratios

from recompile_cli.capture.recorder import Recorder


def _noop(value):
    return None


def calls_seconds(f, x, calls: int) -> float:
    jax.block_until_ready(f(x))
    start = time.perf_counter()
    for _ in range(calls):
        out = f(x)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000, help="cached calls per block")
    parser.add_argument("--slow-calls", type=int, default=200, help="slow calls per block")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    x = jnp.ones(10)
    cached = jax.jit(lambda v: v + 1)

    def step(v):
        jax.debug.callback(_noop, v)
        return v * 2

    slow = jax.jit(step)
    seen = {"slow": 0, "cached": 0}

    def measure(f, calls: int, kind: str):
        def one(on: bool) -> float:
            if not on:
                return calls_seconds(f, x, calls)
            with Recorder("bench") as recorder:
                seconds = calls_seconds(f, x, calls)
            seen[kind] += sum(g.calls for g in recorder.session.slow_calls)
            return seconds
        return one

    cached_ratios = paired_ratios(args.reps, measure(cached, args.calls, "cached"), args.blocks)
    off: list[float] = []
    on: list[float] = []

    def slow_one(flag: bool) -> float:
        seconds = measure(slow, args.slow_calls, "slow")(flag)
        (on if flag else off).append(seconds)
        return seconds

    slow_ratios = paired_ratios(args.reps, slow_one, args.blocks)
    extra_us = (min(on) - min(off)) * 1e6
    blocks = args.reps * args.blocks
    expected = blocks * (args.slow_calls + 1)  # each block's calls, and its warm-up call
    result = {
        "cached_ratio": statistics.median(cached_ratios), "cached_ratios": cached_ratios,
        "slow_ratio": statistics.median(slow_ratios), "slow_ratios": slow_ratios,
        "slow_us_off": min(off) * 1e6, "slow_us_on": min(on) * 1e6, "slow_extra_us": extra_us,
        "slow_calls_seen": seen["slow"], "slow_calls_made": expected,
        "cached_slow_calls_seen": seen["cached"]}
    print(f"cached call, recorder with slow-call hooks on / off (paired median): "
          f"{result['cached_ratio']:.3f} (goal <= 1.02); slow calls seen on cached calls: "
          f"{seen['cached']}")
    print(f"slow call (jax.debug.callback): {result['slow_us_off']:.1f} us without the recorder, "
          f"{result['slow_us_on']:.1f} us with it (+{extra_us:.1f} us, ratio "
          f"{result['slow_ratio']:.3f}); slow calls seen {seen['slow']} of {expected}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
