"""Serial vs parallel warm-up of one plan, measured side by side in one process.

A small model (an unrolled stack of dense layers, so that each compile takes a while) is jitted
at module level and called with ``--signatures`` batch sizes under ``recompile_cli.record()``;
``recompile-cli warmup``'s planning and rendering turn that recording into a plan, which is
imported like any user's plan. Each repetition clears JAX's in-memory caches and times, in an
order that rotates between repetitions: ``warm_up()`` (one signature after the other),
``warm_up(parallel=N)`` (N threads) and ``warm_up(processes=N, cache_dir=...)`` (N - 1 other
processes compile into a fresh persistent compilation cache while this one compiles its share,
then this one loads theirs). Serial and threads run with the persistent cache off. The figures
are the medians of the per-repetition ratios serial / mode (above 1: the mode is faster), with
their min and max. XLA releases the GIL while it compiles, so threads overlap the compiles
(not tracing and lowering); processes overlap everything but pay a start-up (Python, JAX, the
plan) and this process's loads from the cache.

    python benchmarks/warmup.py [--signatures 8] [--reps 5] [--layers 24] [--threads N]
                                [--ratios-only]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
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

LAYERS = {layers}


@jax.jit
def forward(w, x):
    for i in range(LAYERS):
        x = jnp.tanh(x @ w[i] + jnp.sin(x) * 0.5)
    return jnp.sum(x * x)
"""


def make_plan(folder: Path, signatures: int, layers: int) -> object:
    """Record the model at ``signatures`` batch sizes, write the plan and import it."""
    (folder / "warmup_bench_model.py").write_text(textwrap.dedent(MODEL).format(layers=layers))
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


def _cache(folder: str | None) -> None:
    """The persistent compilation cache on at ``folder``, or off (None)."""
    from jax._src import compilation_cache  # a cache JAX looked at is looked at again

    if folder is None:
        jax.config.update("jax_enable_compilation_cache", False)
        jax.config.update("jax_compilation_cache_dir", None)
    compilation_cache.reset_cache()


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of its ended children."""
    own, children = (resource.getrusage(resource.RUSAGE_SELF),
                     resource.getrusage(resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(warm_up, mode: str, n: int, cache_root: Path) -> tuple[float, float]:
    """The wall seconds of one warm-up in ``mode``, and the CPU seconds it used."""
    jax.clear_caches()
    _cache(None)
    kwargs: dict = {}
    if mode == "threads":
        kwargs = {"parallel": n}
    elif mode == "processes":
        kwargs = {"processes": n, "cache_dir": tempfile.mkdtemp(dir=cache_root)}
    start, cpu = time.perf_counter(), _cpu()
    done = warm_up(**kwargs)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    if done["skipped"]:
        raise SystemExit(f"the plan skipped {done['skipped']}")
    return seconds, cpu


MODES = ("serial", "threads", "processes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--signatures", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--layers", type=int, default=24,
                        help="dense layers of the model (more: each signature compiles longer)")
    parser.add_argument("--threads", type=int, default=max(2, os.cpu_count() or 2),
                        help="threads and processes of the parallel warm-ups")
    parser.add_argument("--ratios-only", action="store_true",
                        help="print only the JSON list of per-repetition ratios "
                        "(threads / serial seconds, as before)")
    args = parser.parse_args()
    # inside this repository: a plan runs only files inside the recorded program's project
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as folder:
        module = make_plan(Path(folder), args.signatures, args.layers)
        warm_up = module.warm_up  # type: ignore[attr-defined]
        caches = Path(folder) / "caches"
        caches.mkdir()
        timed(warm_up, "serial", 1, caches)  # a first warm-up of JAX itself, not measured
        seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
        busy: dict[str, list[float]] = {mode: [] for mode in MODES}  # CPU s / wall s
        for rep in range(args.reps):
            order = MODES[rep % 3:] + MODES[:rep % 3]
            for mode in order:
                wall, cpu = timed(warm_up, mode, args.threads, caches)
                seconds[mode].append(wall)
                busy[mode].append(cpu / wall)
        _cache(None)
    serial = seconds["serial"]
    speedups = {mode: [s / p for s, p in zip(serial, seconds[mode], strict=True)]
                for mode in MODES[1:]}
    if args.ratios_only:
        print(json.dumps([1 / r for r in speedups["threads"]]))
        return
    print(f"plan of {args.signatures} signatures of {args.layers} layers, {args.reps} repetitions, "
          f"{args.threads} threads / processes, {os.cpu_count()} CPUs visible, "
          f"jax {jax.__version__}")
    for mode in MODES:
        print(f"{mode + ' warm-up:':22}{statistics.median(seconds[mode]):.3f} s (median; "
              f"min {min(seconds[mode]):.3f}, max {max(seconds[mode]):.3f}); cores busy "
              f"{statistics.median(busy[mode]):.2f} of {os.cpu_count()}")
    for mode, ratios in speedups.items():
        print(f"speed-up of {mode} over serial (median of paired ratios): "
              f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}; "
              f"each: {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
