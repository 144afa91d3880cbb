"""The saving a slow call's fix promises, against the saving the fix really makes: an A/B.

A train step of a small MLP (its parameters a pytree of ``--layers`` weight and bias pairs, a
``--batch`` by ``--width`` batch: 5 to 20 ms a call on this VM's CPU) that logs its loss with
``jax.debug.callback``, so that every warm call runs JAX's Python dispatch; and the same step
without the callback (the fix: "move it out of the step"), which takes the C++ fast path. Both
are jitted and warm before anything is timed.

Each repetition runs three blocks of ``--calls`` calls, in a rotating order, in this process:
the step with the callback, the step without it, and the step with the callback under a
``Recorder`` (its report's avoidable seconds are the tool's promise). Each block is a chain of
dependent steps, ended by ``block_until_ready``. The measured saving of a repetition is the
per-call seconds with the callback less those without it (the fastest of ``--blocks`` blocks
of each); the figure is the promise over that saving, per repetition: 1.0 is a promise kept
exactly, above 1 a promise larger than the fix delivers. The goal (issue 43): within 30%
(``benchmarks/run.py``, goal ``saving``: the median ratio <= 1.3, and its inverse <= 1/0.7).

    python benchmarks/slow_call_saving.py [--reps 9] [--blocks 3] [--calls 60] [--json]
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

from recompile_cli.analysis.slow_calls import analyse_slow_calls
from recompile_cli.capture.recorder import Recorder

LOGGED: list[float] = []


def _log(loss) -> None:
    LOGGED.append(float(loss))


def make_step(callback: bool):
    """A train step of an MLP, logging its loss with ``jax.debug.callback`` when ``callback``
    (the line the fix removes), returning the new parameters and the loss either way."""

    def loss_of(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_of)(params, x, y)
        if callback:
            jax.debug.callback(_log, loss)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss

    return jax.jit(step)


def block(step, params, x, y, calls: int) -> float:
    """Seconds per call of ``calls`` dependent calls of ``step``."""
    start = time.perf_counter()
    for _ in range(calls):
        params, loss = step(params, x, y)
    jax.block_until_ready((params, loss))
    return (time.perf_counter() - start) / calls


def promised(step, params, x, y, calls: int) -> tuple[float, float]:
    """(seconds per call, the avoidable seconds per call the report promises) of a block run
    under a ``Recorder``."""
    with Recorder("saving") as recorder:
        seconds = block(step, params, x, y, calls)
    report = analyse_slow_calls(recorder.session)
    groups = [g for g in report.groups if g.function == "step"]
    slow = sum(g.calls for g in groups)
    if slow != calls:
        raise SystemExit(f"the recorder saw {slow} slow calls of step, not {calls}")
    return seconds, sum(g.avoidable_seconds for g in groups) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--blocks", type=int, default=3, help="blocks per condition and rep")
    parser.add_argument("--calls", type=int, default=60, help="calls per block")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    keys = jax.random.split(jax.random.key(0), args.layers + 2)
    params = [(jax.random.normal(k, (args.width, args.width)) / args.width ** 0.5,
               jnp.zeros(args.width)) for k in keys[:args.layers]]
    x = jax.random.normal(keys[-2], (args.batch, args.width))
    y = jax.random.normal(keys[-1], (args.batch, args.width))
    with_callback, without = make_step(True), make_step(False)
    for step in (with_callback, without):  # compile and warm both, outside any recording
        block(step, params, x, y, 3)

    conditions = ["with", "without", "recorded"]
    reps: list[dict[str, float]] = []
    every: dict[str, list[float]] = {name: [] for name in conditions}
    fastest = (float("inf"), 0.0)  # the fastest recorded block: (its seconds, its promise)
    for rep in range(args.reps):
        found: dict[str, list[float]] = {name: [] for name in conditions}
        promises: list[float] = []
        for index in range(args.blocks):
            shift = (rep + index) % len(conditions)
            for name in conditions[shift:] + conditions[:shift]:
                if name == "recorded":
                    seconds, promise = promised(with_callback, params, x, y, args.calls)
                    promises.append(promise)
                    fastest = min(fastest, (seconds, promise))
                else:
                    seconds = block(with_callback if name == "with" else without, params, x,
                                    y, args.calls)
                found[name].append(seconds)
                every[name].append(seconds)
        best = {name: min(values) for name, values in found.items()}
        saving = best["with"] - best["without"]
        promise = statistics.median(promises)
        reps.append({**best, "saving": saving, "promise": promise,
                     "ratio": promise / saving if saving > 0 else float("inf")})
    ratios = [r["ratio"] for r in reps]
    result = {
        "ratio": statistics.median(ratios), "ratios": ratios,
        "inverse_ratios": [1 / r if r > 0 else float("inf") for r in ratios],
        "step_ms_with": statistics.median(r["with"] for r in reps) * 1e3,
        "step_ms_without": statistics.median(r["without"] for r in reps) * 1e3,
        "saving_us": statistics.median(r["saving"] for r in reps) * 1e6,
        "promise_us": statistics.median(r["promise"] for r in reps) * 1e6,
        "calls": args.calls,
        # what the report promised before issue 43: the whole dispatch, the execution included
        # (about the recorded block's seconds a call)
        "whole_dispatch_ratio": statistics.median(
            r["recorded"] / r["saving"] if r["saving"] > 0 else float("inf") for r in reps),
        # the quietest moments: the fastest block of each condition over the whole run
        "quietest_ratio": fastest[1] / max(min(every["with"]) - min(every["without"]), 1e-9)}
    print(f"step with the callback {result['step_ms_with']:.2f} ms, without "
          f"{result['step_ms_without']:.2f} ms a call: saving {result['saving_us']:.0f} us a "
          f"call measured, {result['promise_us']:.0f} us promised (promise / saving, median of "
          f"{args.reps}: {result['ratio']:.2f}; goal 0.7 to 1.3; over the fastest blocks: "
          f"{result['quietest_ratio']:.2f}; the whole dispatch, as promised before: "
          f"{result['whole_dispatch_ratio']:.1f})")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
