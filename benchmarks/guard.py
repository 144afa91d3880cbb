"""Hot-path cost of the runtime guard, measured side by side in one process.

1. Cached calls of a small jitted function (``x + 1`` on f32[10]) with ``install_guard()`` on
   and off. Each repetition alternates short blocks of calls with the guard on and off and keeps
   the fastest block of each (bursts of load from other processes only ever slow a block down);
   the ratio is the median of the per-repetition ratios (paired). Goal: <= 1.02.
2. The same with ``warmup_calls`` (the function is jitted while the guard is installed, so its
   calls go through the counting wrapper): the one configuration with Python on the hot path.
3. A miss (new shape: trace + lower + compile) with and without the guard.

    python benchmarks/guard.py [--reps 30] [--calls 1000] [--blocks 10] [--recompiles 20]
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
from overhead import cached_call_seconds  # the same timing loop as overhead.py

import recompile_cli


def paired(reps: int, measure, blocks: int = 1) -> tuple[float, float, float]:
    """Median seconds off, on, and the median of the paired on/off ratios; with ``blocks``,
    each repetition alternates that many blocks per condition and keeps the fastest of each."""
    off, on, ratios = _paired(reps, measure, blocks)
    return statistics.median(off), statistics.median(on), statistics.median(ratios)


def paired_ratios(reps: int, measure, blocks: int = 1) -> list[float]:
    """The per-repetition on/off ratios of ``paired``."""
    return _paired(reps, measure, blocks)[2]


def _paired(reps: int, measure, blocks: int) -> tuple[list[float], list[float], list[float]]:
    off, on, ratios = [], [], []
    for rep in range(reps):
        measured: dict[bool, list[float]] = {False: [], True: []}
        for block in range(blocks):
            order = (False, True) if (rep + block) % 2 == 0 else (True, False)
            for flag in order:
                measured[flag].append(measure(flag))
        best_off, best_on = min(measured[False]), min(measured[True])
        off.append(best_off)
        on.append(best_on)
        ratios.append(best_on / best_off)
    return off, on, ratios


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--calls", type=int, default=1000, help="calls per block")
    parser.add_argument("--blocks", type=int, default=10, help="blocks per condition and rep")
    parser.add_argument("--recompiles", type=int, default=20)
    parser.add_argument("--ratios-only", action="store_true",
                        help="print only the cached-call ratios, one per rep, as a JSON list "
                        "(for benchmarks/run.py)")
    args = parser.parse_args()
    x = jnp.ones(10)

    f = jax.jit(lambda v: v + 1)

    def guarded_call(on: bool) -> float:
        if not on:
            return cached_call_seconds(f, x, args.calls)
        handle = recompile_cli.install_guard(max_compiles=1, on="raise")
        try:
            return cached_call_seconds(f, x, args.calls)
        finally:
            handle.uninstall()

    if args.ratios_only:
        print(json.dumps(paired_ratios(args.reps, guarded_call, args.blocks)))
        return
    off, on, ratio = paired(args.reps, guarded_call, args.blocks)
    print(f"cached call, no guard:       {off * 1e6:8.3f} us/call (median)")
    print(f"cached call, guard on:       {on * 1e6:8.3f} us/call (median)")
    print(f"guard cached-call ratio (paired median over {args.reps} reps of the fastest of "
          f"{args.blocks} blocks): {ratio:.3f} "
          f"({'OK' if ratio <= 1.02 else 'ABOVE'} the 1.02 goal)")

    warm = recompile_cli.install_guard(max_compiles=1, warmup_calls=3, on="raise")
    counted = jax.jit(lambda v: v + 1)  # jitted under the guard: its calls are counted
    try:
        off, on, ratio = paired(args.reps, lambda flag: cached_call_seconds(
            counted if flag else f, x, args.calls), args.blocks)
    finally:
        warm.uninstall()
    print(f"with warmup_calls (counting wrapper): {on * 1e6:.3f} vs {off * 1e6:.3f} us/call, "
          f"ratio {ratio:.3f}")

    g = jax.jit(lambda v: jnp.sin(v) * 2 + v.sum())
    size = [1000]

    def miss(on: bool) -> float:
        size[0] += 1  # a new shape: a real trace + lower + compile every time
        v = jnp.ones((size[0],))
        handle = recompile_cli.install_guard(max_compiles=10 ** 6, on="raise") if on else None
        try:
            start = time.perf_counter()
            g(v).block_until_ready()
            return time.perf_counter() - start
        finally:
            if handle is not None:
                handle.uninstall()

    off, on, ratio = paired(args.recompiles, miss)
    print(f"miss (trace+lower+compile), no guard: {off * 1e3:.3f} ms, guard on: "
          f"{on * 1e3:.3f} ms, ratio {ratio:.3f} ({(on - off) * 1e3:+.2f} ms per miss)")


if __name__ == "__main__":
    main()
