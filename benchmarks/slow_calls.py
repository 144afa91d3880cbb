"""What watching for slow calls costs, measured side by side in one process.

1. Cached calls: a ``jit(lambda x: x + 1)`` on f32[10], served by JAX's C++ fast path, with a
   recorder attached (its slow-call hooks installed) and not. Nothing of ours may run on them:
   goal <= 1.02 (the paired median of the per-repetition ratios).
2. Slow calls: a jitted step containing ``jax.debug.callback`` (every warm call runs JAX's
   Python dispatch), with a recorder attached and not: the microseconds the recording adds to
   each slow call (it is already a ~100 us Python dispatch; the goal is microseconds, not
   milliseconds: <= 20 us), and the ratio; and, of those, what the slow-call hooks add
   (a recorder with them against one without them: the rest is the recorder's lowering hook,
   which JAX's Python dispatch passes through at every call).

Timed figures need a quiet machine; two counted ones do not: the Python functions of
recompile-cli that start during 100 cached calls (must be 0) and during each slow call (the
recorder's lowering hook included), counted with ``sys.setprofile``.

Each repetition alternates ``--blocks`` short blocks of calls with the recorder attached and
not and keeps the fastest block of each (``guard._paired``); the figures are the medians over
the repetitions of those paired ratios and differences. The recorder's sessions say how many
slow calls it saw: every one of its slow blocks', none of the cached calls.

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
from guard import _paired, paired_ratios

from recompile_cli.capture import recorder as recorder_module
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


def _functions_of_ours(f, x, calls: int = 100) -> float:
    """Python functions of recompile-cli started per call of ``f`` with a recorder attached."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(recompile_module_file())))
    started = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            started[0] += 1

    with Recorder("bench"):
        jax.block_until_ready(f(x))
        import sys

        sys.setprofile(profile)
        try:
            for _ in range(calls):
                f(x)
        finally:
            sys.setprofile(None)
    return started[0] / calls


def recompile_module_file() -> str:
    return recorder_module.__file__ or ""


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
    seen = {"slow": 0, "cached": 0, "hooks": 0}

    def measure(f, calls: int, kind: str, base_records: bool = False):
        """``one(on)``: the seconds per call with a recorder (``on``), else without one, or
        with one that has no slow-call hooks (``base_records``)."""
        def one(on: bool) -> float:
            if not on and not base_records:
                return calls_seconds(f, x, calls)
            if not on:
                probe = recorder_module.slow_calls.probe
                recorder_module.slow_calls.probe = lambda: "benchmark: off"  # type: ignore
                try:
                    with Recorder("bench"):
                        return calls_seconds(f, x, calls)
                finally:
                    recorder_module.slow_calls.probe = probe  # type: ignore
            with Recorder("bench") as recorder:
                seconds = calls_seconds(f, x, calls)
            seen[kind] += sum(g.calls for g in recorder.session.slow_calls)
            return seconds
        return one

    counts = {"cached": _functions_of_ours(cached, x), "slow": _functions_of_ours(slow, x)}
    cached_ratios = paired_ratios(args.reps, measure(cached, args.calls, "cached"), args.blocks)
    off, on, slow_ratios = _paired(args.reps, measure(slow, args.slow_calls, "slow"), args.blocks)
    extras = [(b - a) * 1e6 for a, b in zip(off, on, strict=True)]  # per repetition, paired
    extra_us = statistics.median(extras)
    base, hooked, _ = _paired(args.reps, measure(slow, args.slow_calls, "hooks", True),
                              args.blocks)
    hooks = [(b - a) * 1e6 for a, b in zip(base, hooked, strict=True)]
    blocks = args.reps * args.blocks
    expected = blocks * (args.slow_calls + 1)  # each block's calls, and its warm-up call
    result = {
        "cached_ratio": statistics.median(cached_ratios), "cached_ratios": cached_ratios,
        "slow_ratio": statistics.median(slow_ratios), "slow_ratios": slow_ratios,
        "slow_us_off": statistics.median(off) * 1e6, "slow_us_on": statistics.median(on) * 1e6,
        "slow_extra_us": extra_us, "slow_extras_us": extras,
        "hooks_extra_us": statistics.median(hooks), "hooks_extras_us": hooks,
        "slow_calls_seen": seen["slow"], "slow_calls_made": expected,
        "cached_slow_calls_seen": seen["cached"],
        "functions_per_cached_call": counts["cached"], "functions_per_slow_call": counts["slow"]}
    print(f"cached call, recorder with slow-call hooks on / off (paired median): "
          f"{result['cached_ratio']:.3f} (goal <= 1.02); slow calls seen on cached calls: "
          f"{seen['cached']}")
    print(f"slow call (jax.debug.callback): {result['slow_us_off']:.1f} us without the recorder, "
          f"{result['slow_us_on']:.1f} us with it (+{extra_us:.1f} us, ratio "
          f"{result['slow_ratio']:.3f}); slow calls seen {seen['slow']} of {expected}; of "
          f"those us, the slow-call hooks' own: +{result['hooks_extra_us']:.1f} us")
    print(f"functions of recompile-cli started per cached call: {counts['cached']:g}, per slow "
          f"call: {counts['slow']:g}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
