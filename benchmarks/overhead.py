"""Overhead of the recorder, measured side by side in one process.

1. Cached calls: per-call time of a cached ``jit(lambda x: x + 1)`` on f32[10] with and without a
   recorder attached. Conditions alternate within each repetition and the ratio is the median of
   per-repetition ratios (paired), so machine noise cancels. Goal: <= 1.02.
2. Re-compiles: time of a cache miss (a new input shape, so trace + lower + compile) of a small
   function with and without the recorder, interleaved the same way.
3. The opt-in call counter (``run --count-calls``): the same cached call through its wrapper.

    python benchmarks/overhead.py [--reps 30] [--calls 5000]
    python benchmarks/overhead.py --ratios-only [--reps 21] [--calls 1000] [--blocks 5]

``--ratios-only`` (for ``benchmarks/run.py``) measures only the cached calls, the way
``benchmarks/guard.py`` does: each repetition alternates ``--blocks`` short blocks of calls with
the recorder attached and not, keeps the fastest block of each, and the per-repetition on/off
ratios are printed as one JSON list.
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

from recompile_cli.capture.counting import CallCounter
from recompile_cli.capture.recorder import Recorder


def cached_call_seconds(f, x, calls: int) -> float:
    f(x).block_until_ready()
    start = time.perf_counter()
    for _ in range(calls):
        out = f(x)
    out.block_until_ready()
    return (time.perf_counter() - start) / calls


def recompile_seconds(f, n: int) -> float:
    x = jnp.ones((n,))
    start = time.perf_counter()
    f(x).block_until_ready()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--recompiles", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=5,
                        help="with --ratios-only: blocks per condition and repetition")
    parser.add_argument("--ratios-only", action="store_true",
                        help="print only the cached-call ratios (recorder on / off), one per "
                        "repetition, as a JSON list (for benchmarks/run.py)")
    args = parser.parse_args()

    f = jax.jit(lambda x: x + 1)
    x = jnp.ones(10)
    if args.ratios_only:
        from guard import paired_ratios  # the same fastest-block pairing as the guard's goal

        def recorded_call(on: bool) -> float:
            if not on:
                return cached_call_seconds(f, x, args.calls)
            with Recorder("bench"):
                return cached_call_seconds(f, x, args.calls)

        print(json.dumps(paired_ratios(args.reps, recorded_call, args.blocks)))
        return
    plain, hooked, ratios = [], [], []
    for rep in range(args.reps):
        order = (False, True) if rep % 2 == 0 else (True, False)
        measured = {}
        for attached in order:
            if attached:
                with Recorder("bench"):
                    measured[attached] = cached_call_seconds(f, x, args.calls)
            else:
                measured[attached] = cached_call_seconds(f, x, args.calls)
        plain.append(measured[False])
        hooked.append(measured[True])
        ratios.append(measured[True] / measured[False])
    print(f"cached call, no recorder:    {statistics.median(plain) * 1e6:8.3f} us/call (median)")
    print(f"cached call, recorder on:    {statistics.median(hooked) * 1e6:8.3f} us/call (median)")
    ratio = statistics.median(ratios)
    print(f"cached-call ratio (paired median over {args.reps} reps): {ratio:.3f} "
          f"({'OK' if ratio <= 1.02 else 'ABOVE'} the 1.02 goal)")

    with CallCounter(lambda key, index: None):
        counted = jax.jit(lambda x: x + 1)
    counting = []
    for rep in range(args.reps):
        order = (False, True) if rep % 2 == 0 else (True, False)
        measured = {flag: cached_call_seconds(counted if flag else f, x, args.calls)
                    for flag in order}
        counting.append(measured[True] / measured[False])
    print(f"opt-in call counting ratio (paired median): {statistics.median(counting):.3f}")

    g = jax.jit(lambda v: jnp.sin(v) * 2 + v.sum())
    base, with_rec, compile_ratios = [], [], []
    size = 1000
    for rep in range(args.recompiles):
        order = (False, True) if rep % 2 == 0 else (True, False)
        measured = {}
        for attached in order:
            size += 1  # a new shape: a real trace + lower + compile every time
            if attached:
                with Recorder("bench"):
                    measured[attached] = recompile_seconds(g, size)
            else:
                measured[attached] = recompile_seconds(g, size)
        base.append(measured[False])
        with_rec.append(measured[True])
        compile_ratios.append(measured[True] / measured[False])
    extra = statistics.median(with_rec) - statistics.median(base)
    print(f"re-compile, no recorder:     {statistics.median(base) * 1e3:8.3f} ms (median)")
    print(f"re-compile, recorder on:     {statistics.median(with_rec) * 1e3:8.3f} ms (median)")
    print(f"re-compile ratio (paired median over {args.recompiles} reps): "
          f"{statistics.median(compile_ratios):.3f} (about {extra * 1e3:+.2f} ms per re-compile)")


if __name__ == "__main__":
    main()
