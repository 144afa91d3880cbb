"""Serial vs parallel warm-up of one plan, measured side by side in one process.

A small model (an unrolled stack of dense layers, so that each compile takes a while) is jitted
at module level and called with ``--signatures`` batch sizes under ``recompile_cli.record()``;
``recompile-cli warmup``'s planning and rendering turn that recording into a plan, which is
imported like any user's plan. Each repetition clears JAX's in-memory caches and times
``warm_up()`` (one signature after the other), clears them again and times
``warm_up(parallel=N)`` (N threads, default: the CPU count), in an order that alternates
between repetitions; the figure is the median of the per-repetition ratios parallel / serial
(below 1: the parallel warm-up is faster). XLA releases the GIL while it compiles, so the
compiles overlap; tracing and lowering do not.

    python benchmarks/warmup.py [--signatures 8] [--reps 5] [--threads N] [--ratios-only]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax

import recompile_cli
from recompile_cli.analysis.warmup.plan import plan
from recompile_cli.render.warmup_plan import render_plan

MODEL = """
import jax
import jax.numpy as jnp

LAYERS = 24


@jax.jit
def forward(w, x):
    for i in range(LAYERS):
        x = jnp.tanh(x @ w[i] + jnp.sin(x) * 0.5)
    return jnp.sum(x * x)
"""


def make_plan(folder: Path, signatures: int) -> object:
    """Record the model at ``signatures`` batch sizes, write the plan and import it."""
    (folder / "warmup_bench_model.py").write_text(textwrap.dedent(MODEL))
    sys.path.insert(0, str(folder))
    model = importlib.import_module("warmup_bench_model")
    w = jax.numpy.ones((model.LAYERS, 64, 64)) * 0.01
    with recompile_cli.record() as rec:
        for n in range(1, signatures + 1):
            model.forward(w, jax.numpy.ones((8 * n, 64))).block_until_ready()
    found = plan(rec.session)
    if len(found.planned) != signatures:
        raise SystemExit(f"expected {signatures} planned signatures, got {len(found.planned)}")
    path = folder / "warmup_bench_plan.py"
    path.write_text(render_plan(found, "benchmark", str(folder), path.name))
    return importlib.import_module("warmup_bench_plan")


def timed(warm_up, parallel: int | None) -> float:
    jax.clear_caches()
    start = time.perf_counter()
    done = warm_up(parallel)
    seconds = time.perf_counter() - start
    if done["skipped"]:
        raise SystemExit(f"the plan skipped {done['skipped']}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--signatures", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=max(2, os.cpu_count() or 2))
    parser.add_argument("--ratios-only", action="store_true",
                        help="print only the JSON list of per-repetition ratios")
    args = parser.parse_args()
    # inside this repository: a plan runs only files inside the recorded program's project
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as folder:
        module = make_plan(Path(folder), args.signatures)
        warm_up = module.warm_up  # type: ignore[attr-defined]
        timed(warm_up, None)  # a first warm-up of JAX itself, not measured
        serial, parallel, ratios = [], [], []
        for rep in range(args.reps):
            if rep % 2:
                p = timed(warm_up, args.threads)
                s = timed(warm_up, None)
            else:
                s = timed(warm_up, None)
                p = timed(warm_up, args.threads)
            serial.append(s)
            parallel.append(p)
            ratios.append(p / s)
    if args.ratios_only:
        print(json.dumps(ratios))
        return
    print(f"plan of {args.signatures} signatures, {args.reps} repetitions, "
          f"{args.threads} threads")
    print(f"serial warm-up:   {statistics.median(serial):.3f} s (median)")
    print(f"parallel warm-up: {statistics.median(parallel):.3f} s (median)")
    print(f"parallel / serial (median of paired ratios): {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
