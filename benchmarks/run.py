"""Every speed goal of recompile-cli, each measured side by side with its baseline, in one run.

    python benchmarks/run.py [--quick] [--only NAME ...]

Each goal's conditions run as whole processes (what a user sees), interleaved: within each
repetition the conditions run one after another, in an order that rotates between repetitions,
so that load from other processes falls on all of them alike. A goal's figure is the median of
the per-repetition ratios (with their min and max); the 100k-event report and start-up goals are
absolute (seconds, MB) and also take medians. The last lines are a table, one row per goal; the
exit status is 1 when a goal is missed.

Goals (see benchmarks/RESULTS.md for the figures and the machine):

* hot:      a cached-call loop, plain ``python`` vs ``recompile-cli run`` (whole process) <= 1.02,
            and the loop alone as the script's own timer sees it <= 1.02
* miss:     a script compiling 500 shapes, plain vs ``recompile-cli run`` <= 1.10, and cheaper
            than JAX's own ``jax_explain_cache_misses``
* table-N:  N = 2,000 and 10,000 trace-only misses (``jax.jit(f).trace``), plain vs
            ``recompile-cli run --format json --output /dev/null`` <= 1.5
* report:   a saved session of 100,000 events: ``report --format table`` < 3 s, ``--output
            x.html`` < 5 s, peak memory (max RSS) < 500 MB; memory per event < 2 KB
* startup:  ``recompile-cli --help`` minus ``python -c pass`` < 0.15 s
* guard:    cached calls with ``install_guard()`` on / off <= 1.02 (benchmarks/guard.py)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
PY = sys.executable
CLI = [PY, "-m", "recompile_cli"]
ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(HERE.parent)}


@dataclass
class Row:
    goal: str
    what: str
    values: list[float]  # ratios, or seconds / MB for absolute goals
    limit: float
    unit: str = "x"
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def met(self) -> bool:
        return self.median <= self.limit

    def line(self) -> str:
        low, mid, high = min(self.values), self.median, max(self.values)
        fmt = "{:.3f}" if self.unit == "x" else "{:.2f}"
        figures = " / ".join(fmt.format(v) for v in (low, mid, high))
        return (f"| {self.goal} | {self.what} | {figures} {self.unit} | <= {self.limit:g} "
                f"{self.unit} | {'ok' if self.met else 'MISSED'} |{self.note}")


def wall(command: Sequence[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, int]:
    """Seconds a whole process took, and its peak memory (max RSS, KB), by ``os.wait4``."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=ENV, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0,):
        raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(command)}")
    return seconds, usage.ru_maxrss


def interleaved(conditions: dict[str, Sequence[str]], reps: int,
                printed: dict[str, list[str]] | None = None) -> dict[str, list[float]]:
    """Whole-process seconds of each condition, ``reps`` times, in a rotating order; with
    ``printed``, each run's standard output is appended to ``printed[condition]``."""
    names = list(conditions)
    out: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            if printed is None:
                out[name].append(wall(conditions[name])[0])
                continue
            with tempfile.TemporaryFile() as captured:
                out[name].append(wall(conditions[name], stdout=captured.fileno())[0])
                captured.seek(0)
                printed.setdefault(name, []).append(captured.read().decode(errors="replace"))
    return out


def printed_seconds(outputs: list[str], label: str) -> list[float]:
    """The ``<label> <seconds>`` figure a benchmark script printed, one per run."""
    pattern = re.compile(rf"{re.escape(label)} (\d+(?:\.\d+)?)")
    return [float(found.group(1)) for text in outputs for line in text.splitlines()
            if (found := pattern.fullmatch(line.strip()))]


def ratios(times: dict[str, list[float]], over: str, base: str) -> list[float]:
    return [a / b for a, b in zip(times[over], times[base], strict=True)]


def median_s(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s"


def hot(quick: bool) -> list[Row]:
    calls = "100000" if quick else "300000"
    script = [str(SCRIPTS / "hot_loop.py"), calls]
    empty = [str(SCRIPTS / "import_jax.py")]
    printed: dict[str, list[str]] = {}
    times = interleaved({"plain": [PY, *script], "run": [*CLI, "run", *script],
                         "plain empty": [PY, *empty], "run empty": [*CLI, "run", *empty]},
                        3 if quick else 5, printed)
    fixed = [a - b for a, b in zip(times["run empty"], times["plain empty"], strict=True)]
    loops = {name: printed_seconds(printed[name], "loop") for name in ("plain", "run")}
    return [Row("hot path", f"cached-call loop ({calls} calls), plain {median_s(times['plain'])}"
                f" vs run {median_s(times['run'])}", ratios(times, "run", "plain"), 1.02,
                note=f" fixed cost of `run` (a script that imports jax): "
                f"{statistics.median(fixed):.2f} s"),
            Row("hot path", f"the same loop as the script times it, plain "
                f"{median_s(loops['plain'])} vs run {median_s(loops['run'])}",
                ratios(loops, "run", "plain"), 1.02)]


def miss(quick: bool) -> list[Row]:
    shapes = "150" if quick else "500"
    script = [str(SCRIPTS / "miss_shapes.py"), shapes]
    printed: dict[str, list[str]] = {}
    times = interleaved({"plain": [PY, *script], "run": [*CLI, "run", *script],
                         "explain": [PY, *script, "--explain"]}, 2, printed)
    mid = {k: median_s(v) for k, v in times.items()}
    cheaper = ratios(times, "run", "explain")
    loops = {name: printed_seconds(printed[name], "misses") for name in ("plain", "run")}
    return [Row("miss path", f"{shapes} shapes compiled, plain {mid['plain']} vs run "
                f"{mid['run']}", ratios(times, "run", "plain"), 1.10),
            Row("miss path", f"the same misses as the script times them, plain "
                f"{median_s(loops['plain'])} vs run {median_s(loops['run'])}",
                ratios(loops, "run", "plain"), 1.10),
            Row("miss path", f"run vs JAX's explainer ({mid['explain']})", cheaper, 1.0)]


def signatures(quick: bool) -> list[Row]:
    rows = []
    for n, reps in ((2_000, 2), (10_000, 1)):
        if quick and n > 2_000:
            continue
        script = [str(SCRIPTS / "trace_shapes.py"), str(n)]
        times = interleaved({"plain": [PY, *script], "run": [
            *CLI, "run", "--format", "json", "--output", os.devnull, *script]}, reps)
        rows.append(Row(f"table N={n:,}", f"{n:,} trace-only misses, plain "
                        f"{median_s(times['plain'])} vs run -f json "
                        f"{median_s(times['run'])}", ratios(times, "run", "plain"), 1.5))
    return rows


def report(quick: bool) -> list[Row]:
    """The 100k-event goals. The session file is written by a child process and the ``report``
    processes run before this process builds anything big: a child started from a large process
    inherits its peak RSS on Linux (``ru_maxrss`` survives ``fork`` and ``exec``), which would
    inflate the peak memory measured."""
    sys.path.insert(0, str(HERE))
    events = 100_000
    folder = Path(tempfile.mkdtemp(prefix="recompile-bench-"))
    try:
        path = folder / "session.json"
        saved, _ = wall([PY, str(HERE / "synthetic.py"), str(path), "--events", str(events)])
        reps = 1 if quick else 2
        table, page, rss = [], [], []
        for _ in range(reps):
            seconds, kb = wall([*CLI, "report", str(path), "--format", "table"])
            table.append(seconds)
            rss.append(kb / 1024)
            seconds, kb = wall([*CLI, "report", str(path), "--output", str(folder / "r.html")])
            page.append(seconds)
            rss.append(kb / 1024)
        size = path.stat().st_size / 1e6
        import synthetic

        from recompile_cli.session.files import load_session

        tracemalloc.start()
        session = synthetic.build(events)
        built = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del session
        start = time.perf_counter()
        loaded = load_session(path)
        load = time.perf_counter() - start
        del loaded
        tracemalloc.start()
        loaded = load_session(path)
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del loaded
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    note = (f" file {size:.0f} MB, built and written in {saved:.1f} s (synthetic.py), loaded "
            f"in {load:.1f} s (load_session)")
    return [Row("report 100k", "report --format table (whole process)", table, 3.0, "s",
                note=note),
            Row("report 100k", "report --output x.html (whole process)", page, 5.0, "s"),
            Row("report 100k", "peak memory of those (max RSS)", rss, 500.0, "MB"),
            Row("report 100k", "memory per event, session built in memory",
                [built / events / 1024], 2.0, "KB"),
            Row("report 100k", "memory per event, session loaded from its file",
                [held / events / 1024], 2.0, "KB")]


def startup(quick: bool) -> list[Row]:
    times = interleaved({"pass": [PY, "-c", "pass"], "help": [*CLI, "--help"]},
                        7 if quick else 15)
    extra = [a - b for a, b in zip(times["help"], times["pass"], strict=True)]
    return [Row("start-up", f"--help ({median_s(times['help'])}) minus python -c pass",
                extra, 0.15, "s")]


def guard(quick: bool) -> list[Row]:
    reps = "9" if quick else "21"
    out = subprocess.run([PY, str(HERE / "guard.py"), "--reps", reps, "--blocks", "5",
                          "--ratios-only"], env=ENV, capture_output=True, text=True,
                         check=True).stdout
    values = json.loads(out.strip().splitlines()[-1])
    return [Row("guard", "cached calls, install_guard() on / off (in process, paired)",
                values, 1.02)]


GOALS: dict[str, Callable[[bool], list[Row]]] = {
    "startup": startup, "hot": hot, "guard": guard, "miss": miss, "table": signatures,
    "report": report}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import jax

    return (f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, "
            f"JAX {jax.__version__}, {time.strftime('%Y-%m-%d')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    parser.add_argument("--only", nargs="*", choices=list(GOALS), help="run these goals only")
    args = parser.parse_args()
    started = time.perf_counter()
    rows: list[Row] = []
    for name, goal in GOALS.items():
        if args.only and name not in args.only:
            continue
        begun = time.perf_counter()
        found = goal(args.quick)
        rows += found
        for row in found:
            print(row.line(), flush=True)
        print(f"  ({name}: {time.perf_counter() - begun:.0f} s)", file=sys.stderr, flush=True)
    print()
    print(machine() + f"; {time.perf_counter() - started:.0f} s in all"
          + (" (--quick)" if args.quick else ""))
    print("| goal | measured | min / median / max | goal | |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        print(row.line())
    missed = [row for row in rows if not row.met]
    if missed:
        print(f"{len(missed)} goal(s) missed.")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
