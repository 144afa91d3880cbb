"""``pytest --recompile`` against a plain ``pytest`` run of a real peer suite: optax's own tests,
which its wheel ships (issue 45).

    python benchmarks/pytest_suite.py [--quick] [--modules N] [--reps N] [--persistent]

The test modules are copied out of site-packages into a temporary folder (so that they are the
user's code and optax a library, as in a project's own suite) and run, one process per run,
interleaved (the order rotates every repetition): plain, ``--recompile`` (each test forgets the
programs of functions outside JAX and keeps JAX's own), and clearing every JAX cache before each
test without recording (what the earlier scheme, ``jax.clear_caches()`` per test, cost by
itself); with ``--persistent`` also ``--recompile`` with a persistent compilation cache in a
fresh folder. Prints, per condition, the median wall and CPU seconds (the run's user + system
time: less swayed by other work on a shared machine) and the median, min and max of the
per-repetition ratios to plain.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULES = ["_src/update_test.py", "_src/utils_test.py", "transforms/_clipping_test.py",
           "losses/_regression_test.py", "schedules/_join_test.py",
           "tree_utils/_tree_math_test.py", "_src/numerics_test.py"]

CLEAR_ONLY = """
import jax, pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    jax.clear_caches()
    return (yield)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two modules, one repetition")
    parser.add_argument("--modules", type=int, default=len(MODULES))
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--persistent", action="store_true",
                        help="also --recompile with a persistent compilation cache")
    args = parser.parse_args()
    try:
        import optax
    except ImportError:
        sys.exit("optax is not installed (pip install optax): nothing to measure")
    source = Path(optax.__file__).parent
    count = 2 if args.quick else args.modules
    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "suite"
        suite.mkdir()
        for module in MODULES[:count]:
            shutil.copy(source / module, suite / Path(module).name)
        (Path(folder) / "clear_only.py").write_text(CLEAR_ONLY)
        cache = Path(folder) / "cache"
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)]
        conditions = {
            "plain": (base, {}),
            "--recompile": ([*base, "--recompile"], {}),
            "clear caches only": ([*base, "-p", "clear_only"], {"PYTHONPATH": folder}),
        }
        if args.persistent:
            conditions["--recompile + persistent cache"] = ([*base, "--recompile"], {
                "JAX_COMPILATION_CACHE_DIR": str(cache),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"})
        seconds: dict[str, list[float]] = {name: [] for name in conditions}
        cpu: dict[str, list[float]] = {name: [] for name in conditions}
        for rep in range(1 if args.quick else args.reps):
            names = list(conditions)
            names = names[rep % len(names):] + names[:rep % len(names)]  # rotate the order
            for name in names:
                command, extra = conditions[name]
                shutil.rmtree(cache, ignore_errors=True)
                env = {**os.environ, "JAX_PLATFORMS": "cpu", **extra}
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(command, env=env, cwd=folder, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
                seconds[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(after.ru_utime - before.ru_utime
                                 + after.ru_stime - before.ru_stime)
    print(f"optax {optax.__version__}, {count} test modules, {os.cpu_count()} cores, "
          f"{len(seconds['plain'])} repetitions; ratios: min / median / max over repetitions")
    for name in conditions:
        print(f"{name:32} wall {_line(seconds[name], seconds['plain'])}   "
              f"cpu {_line(cpu[name], cpu['plain'])}")


def _line(values: list[float], plain: list[float]) -> str:
    ratios = [v / p for v, p in zip(values, plain, strict=True)]
    return (f"{statistics.median(values):6.1f} s  {min(ratios):4.2f} / "
            f"{statistics.median(ratios):4.2f} / {max(ratios):4.2f}x")


if __name__ == "__main__":
    main()
