"""What ``run --check-hosts`` costs, in a real two-process ``jax.distributed`` job on 127.0.0.1.

Each process runs the same measurements in the same order (the check waits for its peer):

1. Cached calls of a small jitted function (``x + 1`` on f32[10]) under a recorder with the
   host check (what ``run --check-hosts`` attaches) and under one without it, in alternating
   blocks, the fastest block of each per repetition; the ratio is the median of the
   per-repetition ratios. The check is not on the cached path, so the goal is <= 1.02.
2. Misses (a new shape: trace + lower + compile) of a function of a global array sharded over
   both processes (a program that spans processes: the check exchanges it; one on local arrays
   is not exchanged) with and without the check: what one exchange through JAX's key-value
   store adds to each compile (milliseconds, for information; it includes waiting for the
   slower process).

    python benchmarks/host_check.py [--reps 9] [--blocks 5] [--calls 2000] [--misses 20] [--json]

The parent starts the two processes and prints process 0's figures (``--json``: one JSON object
``{"cached_ratios": [...], "exchange_ms": [...], "miss_added_ms": [...]}``, for benchmarks/run.py).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(args: argparse.Namespace) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    jax.distributed.initialize(coordinator_address=args.coordinator, num_processes=2,
                               process_id=args.worker, initialization_timeout=60)
    sys.path.insert(0, HERE)
    from guard import paired_ratios
    from overhead import cached_call_seconds

    from recompile_cli.analysis.hosts import mismatch
    from recompile_cli.capture.hosts.host_check import HostCheck
    from recompile_cli.capture.recorder import Recorder

    spent: list[float] = []  # seconds in the check, per checked compile

    def recorded(on: bool, measure):
        check = HostCheck(60.0, mismatch.mismatch, mismatch.missing) if on else None

        def timed(event):
            start = time.perf_counter()
            try:
                check(event)
            finally:
                spent.append(time.perf_counter() - start)

        recorder = Recorder("bench", on_compile=timed if check is not None else None)
        if check is not None:
            check.bind(recorder)
        recorder.start()
        try:
            return measure()
        finally:
            recorder.stop()
            if check is not None:
                check.close()

    f = jax.jit(lambda v: v + 1)
    x = jnp.ones(10)
    ratios = paired_ratios(args.reps, lambda on: recorded(
        on, lambda: cached_call_seconds(f, x, args.calls)), args.blocks)
    g = jax.jit(lambda v: jnp.sin(v) * 2 + v.sum())
    size = [1000]
    rows = NamedSharding(jax.make_mesh((jax.device_count(),), ("rows",)), PartitionSpec("rows"))

    def miss() -> float:
        size[0] += 1  # a new shape: a real trace + lower + compile every time
        v = jax.make_array_from_process_local_data(rows, np.ones(size[0], np.float32))
        start = time.perf_counter()
        g(v).block_until_ready()
        return time.perf_counter() - start

    off, on = [], []
    spent.clear()
    for rep in range(args.misses):
        for flag in ((False, True) if rep % 2 == 0 else (True, False)):
            (on if flag else off).append(recorded(flag, miss))
    added = [(b - a) * 1e3 for a, b in zip(off, on, strict=True)]
    assert len(spent) == args.misses, "every miss of the global step is exchanged"
    if args.worker == 0:
        print(json.dumps({"cached_ratios": ratios, "miss_added_ms": added,
                          "exchange_ms": [t * 1e3 for t in spent]}), flush=True)
    jax.distributed.shutdown()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--misses", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--coordinator", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args)
        return
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    common = [f"--{k}={getattr(args, k)}" for k in ("reps", "blocks", "calls", "misses")]
    coordinator = f"127.0.0.1:{free_port()}"
    workers = [subprocess.Popen([sys.executable, __file__, *common, "--worker", str(i),
                                 "--coordinator", coordinator], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in range(2)]
    outputs = [w.communicate(timeout=900) for w in workers]
    for w, (_, err) in zip(workers, outputs, strict=True):
        if w.returncode != 0:
            sys.exit(f"a process of the benchmark job failed ({w.returncode}):\n{err[-2000:]}")
    result = json.loads(outputs[0][0].strip().splitlines()[-1])
    if args.json:
        print(json.dumps(result))
        return
    import statistics

    ratios, added, spent = (result[k] for k in ("cached_ratios", "miss_added_ms", "exchange_ms"))
    print(f"cached calls, check / no check: median ratio {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}; goal <= 1.02)")
    print(f"one exchange per compile, in the check: {statistics.median(spent):.2f} ms (median; "
          f"min {min(spent):.2f}, max {max(spent):.2f}; waiting for the slower process included)")
    print(f"a miss with / without the check: {statistics.median(added):+.2f} ms (median of "
          f"paired differences; min {min(added):+.2f}, max {max(added):+.2f})")


if __name__ == "__main__":
    main()
