"""Slow calls on real JAX: warm calls that JAX dispatches in Python without compiling, found
with their reason code, the line responsible and the call site, gated, and absent where every
call takes the C++ fast path.

Each reason this machine can produce has a program: a ``jax.debug.callback`` and an ordered
``jax.debug.print`` (effects), an AOT ``Compiled`` with a ``pure_callback``, ``jax.disable_jit``
(in a ``with`` and through ``jax.config``), a first call that raised (``jax_debug_nans``), an
uncommitted array on 2 CPU devices (a subprocess with ``--xla_force_host_platform_device_count``)
and evicted entries (a subprocess whose C++ jit caches hold 4 entries)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import pandas as pd
import pytest
from helpers import ROOT
from jax_support import JAX_VERSION, requires_slow_calls

import recompile_cli
from recompile_cli.guards import SlowCallLimitExceeded, SlowCallWarning
from recompile_cli.session.files import load_session

pytestmark = requires_slow_calls

STEP = """
import sys
import jax, jax.numpy as jnp

LOGGED = []

def log(value):
    LOGGED.append(float(value))

@jax.jit
def step(x):
    y = jnp.sin(x) * 0.5
    if "--no-callback" not in sys.argv:
        jax.debug.callback(log, y.sum())  # callback-line
    return y

x = jnp.ones(8)
for _ in range(200):
    x = step(x)  # call-line
"""


def line(source: str, marker: str) -> int:
    """The line of ``source`` (as written by the ``program`` fixture) ending in ``# marker``."""
    lines = textwrap.dedent(source).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def groups(report: dict, function: str | None = None) -> list[dict]:
    return [g for g in report["slow_calls"]["groups"]
            if function is None or g["function"] == function]


def test_a_debug_callback_keeps_every_warm_call_slow_with_its_line(cli, program, tmp_path):
    prog = program("prog", STEP)
    log = tmp_path / "log.jsonl"
    result, report = cli.json("run", "--max-slow-calls", "0", "--events-log", log, prog,
                              tmp_path=tmp_path)
    assert result.exit_code == 1, result.output  # the gate: 199 slow calls, budget 0
    slow = report["slow_calls"]
    assert slow["observable"] is True and slow["fast_call_seconds"] is None  # none compiled
    assert "did not finish" not in slow["baseline"]
    (group,) = groups(report, "step")
    assert (group["calls"], group["reason"], group["kind"]) == (199, "unordered_effect", "jit")
    assert group["detail"] == "jax.debug.callback"
    assert group["line"] == f"{prog}:{line(STEP, 'callback-line')}"
    assert group["call_site"].startswith(f"{prog}:{line(STEP, 'call-line')} ")
    assert group["arguments"] == "x: f32[8]"
    assert 0 < group["avoidable_seconds"] <= group["seconds"]
    assert "jax.pure_callback" in group["fix"] and "199 slow calls -> 0" in group["fix"]
    (function,) = [f for f in slow["functions"] if f["function"] == "step"]
    assert (function["slow_calls"], function["reasons"]) == (199, {"unordered_effect": 199})
    # ranked with the compile causes in the cost-ranked table
    assert [(r["kind"], r["code"], r["count"]) for r in report["cause_table"]] == [
        ("slow_calls", "unordered_effect", 199)]
    out = result.stdout
    assert "slow calls: 199 calls in JAX's Python dispatch, nothing compiled" in out
    assert "Slow calls (" in out and "slow:unordered_effect" in out
    assert f"prog.py:{line(STEP, 'callback-line')}" in out
    assert "max_slow_calls" in result.output or "slow calls" in result.output
    # the events log holds the same groups, read back by `report`
    again, from_log = cli.json("report", log, tmp_path=tmp_path)
    assert again.exit_code == 0
    assert from_log["slow_calls"]["groups"] == slow["groups"]


def test_the_same_step_without_the_callback_makes_no_slow_call(cli, program, tmp_path):
    prog = program("prog", STEP)
    result, report = cli.json("run", "--max-slow-calls", "0", prog, "--no-callback",
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report["slow_calls"]["observable"] is True
    assert (report["slow_calls"]["calls"], report["slow_calls"]["groups"]) == (0, [])
    assert "Slow calls" not in result.stdout


FAST = """
import jax, jax.numpy as jnp, numpy as np

plain = jax.jit(lambda v: v * 2 + 1)
x = jnp.ones(4)
for _ in range(50):
    plain(x)
for _ in range(20):  # new C++ entries of the same executable, no compile: not slow calls
    plain(np.ones(4, np.float32))
    plain(x.astype(jnp.float32))

def host(v):
    return jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct(v.shape, v.dtype), v)

with_callback = jax.jit(host)
for _ in range(50):
    with_callback(x)
compiled = jax.jit(lambda v: v - 1).lower(x).compile()
for _ in range(50):
    compiled(x)
"""


@pytest.mark.skipif(JAX_VERSION < (0, 7, 2), reason="pure_callback keeps the jit fast path "
                    "only on JAX >= 0.7.2")
def test_calls_the_fast_path_serves_are_no_slow_calls(cli, program, tmp_path):
    result, report = cli.json("run", "--max-slow-calls", "0", program("fast", FAST),
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report["slow_calls"]["observable"] is True
    assert report["slow_calls"]["groups"] == []


EFFECTS = """
import jax, jax.numpy as jnp, numpy as np

@jax.jit
def ordered(x):
    jax.debug.print("x {}", x.sum(), ordered=True)  # print-line
    return x + 1

def clip(v):
    return jax.pure_callback(lambda a: np.clip(a, 0, 1), jax.ShapeDtypeStruct(v.shape, v.dtype),
                             v)  # pure-line

x = jnp.ones(4)
for _ in range(30):
    ordered(x)
compiled = jax.jit(clip).lower(x).compile()
for _ in range(100):
    compiled(x)  # aot-call
"""


def test_an_ordered_print_and_an_aot_compiled_with_pure_callback(cli, program, tmp_path):
    prog = program("effects", EFFECTS)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (printed,) = groups(report, "ordered")
    assert (printed["calls"], printed["reason"]) == (29, "ordered_effect")
    assert printed["detail"] == "jax.debug.print(..., ordered=True)"
    assert printed["line"] == f"{prog}:{line(EFFECTS, 'print-line')}"
    (aot,) = groups(report, "clip")
    assert (aot["calls"], aot["reason"], aot["kind"]) == (100, "aot_host_callback", "aot")
    assert aot["detail"] == "jax.pure_callback"
    assert aot["line"].startswith(f"{prog}:")  # the pure_callback's statement
    assert aot["call_site"].startswith(f"{prog}:{line(EFFECTS, 'aot-call')} ")
    assert "call the jitted function instead of the AOT Compiled" in aot["fix"]


DISABLED = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return jnp.cos(x) + 1

x = jnp.ones(4)
step(x)
with jax.disable_jit():
    for _ in range(20):
        step(x)  # disabled-call
jax.config.update("jax_disable_jit", True)
try:
    for _ in range(10):
        step(x)
finally:
    jax.config.update("jax_disable_jit", False)
for _ in range(10):
    step(x)  # fast again
"""


def test_calls_under_disable_jit_are_slow_calls(cli, program, tmp_path):
    prog = program("disabled", DISABLED)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (group,) = groups(report, "step")
    assert (group["calls"], group["reason"]) == (30, "disable_jit")
    assert group["call_site"].startswith(f"{prog}:{line(DISABLED, 'disabled-call')} ")
    assert "remove `jax.disable_jit`" in group["fix"]


RAISED = """
import jax, jax.numpy as jnp

log = jax.jit(lambda v: jnp.log(v))
jax.config.update("jax_debug_nans", True)
try:
    try:
        log(-jnp.ones(3))
    except FloatingPointError:
        pass
    for _ in range(25):
        log(jnp.ones(3))
finally:
    jax.config.update("jax_debug_nans", False)
"""


def test_a_signature_whose_first_call_raised_stays_slow(cli, program, tmp_path):
    result, report = cli.json("run", program("raised", RAISED), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (group,) = groups(report, "<lambda>")
    assert (group["calls"], group["reason"]) == (25, "first_call_raised")


def run_in_subprocess(tmp_path: Path, source: str, *options: str,
                      env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess,
                                                                  dict]:
    """``recompile-cli run`` in a process of its own (for JAX flags and patches that must
    not reach this one); returns the process and its JSON report."""
    prog = tmp_path / "sub.py"
    prog.write_text(textwrap.dedent(source))
    out = tmp_path / "sub.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_cli", "run", "--output", str(out), *options,
         str(prog)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", **(env or {})})
    return done, json.loads(out.read_text()) if out.exists() else {}


UNCOMMITTED = """
import jax, numpy as np
from jax._src import array  # JAX's public API no longer makes such arrays: build one
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2,), ("d",))
sharding = NamedSharding(mesh, P("d"))
committed = jax.device_put(np.ones(8, np.float32), sharding)
loose = array.ArrayImpl(committed.aval, sharding, committed._arrays, committed=False)
double = jax.jit(lambda v: v * 2, in_shardings=sharding)
for _ in range(15):
    double(loose)
for _ in range(15):
    double(committed)  # committed: the fast path
"""


def test_an_uncommitted_array_on_two_devices_is_slow_at_every_call(tmp_path):
    done, report = run_in_subprocess(
        tmp_path, UNCOMMITTED, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert done.returncode == 0, done.stderr[-2000:]
    (group,) = groups(report, "<lambda>")
    assert (group["calls"], group["reason"]) == (14, "uncommitted_multidevice")
    assert group["detail"] == "`v` is an uncommitted array on 2 devices"
    assert "jax.device_put" in group["fix"]


EVICTED = """
import jax, jax.numpy as jnp
from jax._src import pjit

# A C++ cache of 4 entries instead of 8,192 (jits made from now on use it).
pjit._cpp_pjit_cache_fun_only = pjit.make_jit_cpp_cache(4)
pjit._cpp_pjit_cache_explicit_attributes = pjit.make_jit_cpp_cache(4)
functions = [jax.jit(lambda v, k=k: v + k) for k in range(6)]
x = jnp.ones(3)
for _ in range(5):
    for f in functions:
        f(x)
"""


def test_entries_evicted_from_a_full_cpp_cache_are_slow_calls(tmp_path):
    done, report = run_in_subprocess(tmp_path, EVICTED)
    assert done.returncode == 0, done.stderr[-2000:]
    found = groups(report)
    assert {g["reason"] for g in found} == {"eviction"}
    assert sum(g["calls"] for g in found) == 4 * 6  # every call after each first
    assert "C++ jit cache is full (4 entries" in found[0]["detail"]


# A jitted step whose every warm call is slow, for the programs below.
NOISY = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    jax.debug.callback(lambda v: None, x)
    return x + 1

x = jnp.ones(3)
"""

TEST_EVENTS = NOISY + """
from jax._src import util

seen = []
util.test_event_listener = lambda name, *args: seen.append(name)  # the user's own listener
for _ in range(10):
    step(x)
assert util.test_event_listener is not None and "jit_cpp_cache_miss" in seen, seen
import jax._src.test_util  # overwrites JAX's one test-event slot
for _ in range(10):
    step(x)
"""


def test_importing_jax_test_util_changes_nothing_and_a_listener_is_kept(tmp_path):
    done, report = run_in_subprocess(tmp_path, TEST_EVENTS)
    assert done.returncode == 0, done.stderr[-2000:]
    (group,) = groups(report, "step")
    assert group["calls"] == 19  # both halves: the first call compiled


KILLED = NOISY + """
import os, signal, time

for _ in range(120):
    step(x)
time.sleep(0.4)
step(x)  # the counts go to the events log at most every 0.25 s: this call sends them
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_run_killed_mid_way_leaves_its_slow_calls_in_the_report_and_events_log(cli,
                                                                                 tmp_path):
    """The measured process is killed (SIGKILL) after 120 slow calls: the supervisor's report
    and the events log hold them, counted up to the last streamed update."""
    log = tmp_path / "log.jsonl"
    done, report = run_in_subprocess(tmp_path, KILLED, "--events-log", str(log))
    assert done.returncode == 3, done.stderr[-2000:]  # the target ended by a signal
    assert "SIGKILL" in done.stderr
    (group,) = groups(report, "step")
    assert (group["calls"], group["reason"]) == (120, "unordered_effect")
    assert report["slow_calls"]["fast_call_seconds"] is None
    session = load_session(log)
    (kept,) = [g for g in session.slow_calls if g.function == "step"]
    assert kept.calls == 120 and str(kept.reason) == "unordered_effect"
    result = cli("report", log)
    assert result.exit_code == 0 and "slow calls: 120 calls" in result.stdout
    assert "outside the program's execution" in result.stdout


def _noop(value):
    return None


@jax.jit
def noisy(x):
    jax.debug.callback(_noop, x)  # guard-callback
    return x * 2


def _line_here(marker: str) -> int:
    import inspect

    source, start = inspect.getsourcelines(sys.modules[__name__])
    return next(i for i, text in enumerate(source, start or 1)
                if text.rstrip().endswith(f"# {marker}"))


def test_the_guard_raises_from_the_slow_call_beyond_its_limit():
    x = jnp.ones(3)
    noisy(x)
    calls = 0
    with (pytest.raises(SlowCallLimitExceeded) as raised,
          recompile_cli.guard(max_slow_calls=3, on="raise")):
        for _ in range(10):
            noisy(x)
            calls += 1
    violation = raised.value.violation
    assert calls == 3 and violation.slow_calls == 4 and violation.limit == 3
    assert violation.cause == "unordered_effect"
    assert violation.call_site == f"{__file__}:{_line_here('guard-callback')}"
    assert "jax.debug.callback" in violation.message
    assert noisy(x).shape == (3,)  # JAX stays usable


def test_the_guard_warns_once_per_function_and_counts_nothing_without_the_limit():
    x = jnp.ones(3)
    noisy(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with recompile_cli.guard(max_slow_calls=2, on="warn"):
            for _ in range(10):
                noisy(x)
        with recompile_cli.guard(on="warn"):
            for _ in range(10):
                noisy(x)
    ours = [w for w in caught if issubclass(w.category, SlowCallWarning)]
    assert len(ours) == 1 and "3 slow calls, limit 2" in str(ours[0].message)


def test_the_python_api_counts_and_gates_slow_calls():
    x = jnp.ones(3)
    with recompile_cli.record() as rec:
        for _ in range(10):
            noisy(x)
    report = rec.report
    assert report.slow_calls("noisy") == 9 and report.slow_calls() == 9
    checked = report.check(max_slow_calls=5)
    assert [v.rule for v in checked.violations] == ["max_slow_calls"]
    frame = report.to_pandas().slow_calls
    assert list(frame["reason"]) == ["unordered_effect"] and list(frame["calls"]) == [9]


def test_check_budgets_junit_and_annotations_at_the_line_responsible(cli, project,
                                                                     monkeypatch):
    (project / "noisy.py").write_text(textwrap.dedent(STEP))
    (project / "recompile-budget.yaml").write_text(
        "targets:\n  - script: noisy.py\n    budgets:\n      step: {max_slow_calls: 10}\n")
    junit = project / "junit.xml"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = cli("check", project / "recompile-budget.yaml", "--junit-xml", junit)
    assert result.exit_code == 1, result.output
    assert "199 / 10" in result.stdout and "slow calls" in result.stdout
    annotation = [text for text in result.stdout.splitlines() if text.startswith("::error")]
    assert annotation and f"line={line(STEP, 'callback-line')}" in annotation[0]
    assert "max_slow_calls" in annotation[0]
    failures = ET.parse(junit).getroot().findall(".//failure")
    assert [f.get("type") for f in failures] == ["max_slow_calls"]
    again = cli("check", project / "recompile-budget.yaml", "--max-slow-calls", "1000")
    assert again.exit_code == 1  # the file's budget still fails


def test_public_only_mode_cannot_see_them_and_fails_their_gate(cli, program, tmp_path):
    result, report = cli.json("run", "--hook-mode", "public-only", "--max-slow-calls", "0",
                              program("prog", STEP), tmp_path=tmp_path)
    assert result.exit_code == 1
    assert report["slow_calls"]["observable"] is False
    assert "slow calls: not observable with --hook-mode public-only" in result.stdout
    assert "cannot be checked" in result.stdout


def test_every_format_and_merge_carry_them(cli, program, tmp_path):
    prog = program("prog", STEP)
    saved = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in saved:
        assert cli("run", "--save", path, prog).exit_code == 0
    markdown = cli("report", saved[0], "--format", "markdown").stdout
    assert "### Slow calls" in markdown and "slow:unordered_effect" in markdown
    page = tmp_path / "r.html"
    assert cli("report", saved[0], "--output", page).exit_code == 0
    html = page.read_text()
    assert "<h2>Slow calls</h2>" in html and "unordered_effect" in html
    folder = tmp_path / "csv"
    assert cli("report", saved[0], "--format", "csv", "--output", folder).exit_code == 0
    table = pd.read_csv(folder / "slow_calls.csv")
    assert list(table["reason"]) == ["unordered_effect"] and list(table["calls"]) == [199]
    merged, report = tmp_path / "merged.json", tmp_path / "merge-report.json"
    result = cli("merge", *saved, "--save", merged, "--output", report)
    assert result.exit_code == 0, result.output
    assert "Slow calls (each process" in result.stdout
    (row,) = json.loads(report.read_text())["slow_calls"]
    assert (row["function"], row["per_process"], row["reasons"]) == (
        "step", {"0": 199, "1": 199}, ["unordered_effect"])
    _, data = cli.json("report", merged, tmp_path=tmp_path)
    assert sorted((g["process"], g["calls"]) for g in data["slow_calls"]["groups"]) == [
        (0, 199), (1, 199)]


FLATTEN = """
import dataclasses
import jax, jax.numpy as jnp

@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Weight:
    value: jax.Array

@jax.jit
def total(params, scale):
    return sum(w.value.sum() for w in params) * scale

params = [Weight(jnp.ones(2)) for _ in range(300)]
total(params, 2.0)
"""


def test_each_signature_counts_the_nodes_every_call_flattens(cli, program, tmp_path):
    result, report = cli.json("run", program("flat", FLATTEN), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (event,) = [e for e in report["events"] if e["function"] == "total"]
    flatten = event["flatten"]
    assert (flatten["leaves"], flatten["custom_nodes"]) == (301, 300)
    assert flatten["argument"] == "params" and flatten["argument_nodes"] == 301  # list + 300
    assert flatten["node_type"] == "__main__.Weight" and flatten["seconds"] > 0


STALLS = """
import time
import jax, jax.numpy as jnp

flattens = 0

@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, value):
        self.value = value

    def tree_flatten(self):
        global flattens
        flattens += 1
        if flattens % 2:  # every other flatten stalls, as one preempted by the machine does
            time.sleep(0.005)
        return (self.value,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

@jax.jit
def double(box):
    return box.value * 2

double(Box(jnp.ones(2)))
"""


def test_a_flatten_that_stalls_once_is_not_a_dispatch_cost(cli, program, tmp_path):
    """One timed flatten read a 2-node tree as milliseconds on a busy CI machine and told the
    user to restructure it: the cost is the fastest of a few flattens."""
    result, report = cli.json("run", program("stalls", STALLS), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (event,) = [e for e in report["events"] if e["function"] == "double"]
    assert event["flatten"]["custom_nodes"] == 1
    assert 0 < event["flatten"]["seconds"] < 0.005
    assert report["slow_calls"]["flatten"] == []


PROFILED = """
import jax, jax.numpy as jnp

def step(x):
    jax.debug.callback(lambda v: None, x.sum())  # profiled-callback
    return x * 2
"""


def test_profile_gates_the_slow_calls_of_its_target(cli, program, tmp_path):
    prog = program("profiled", PROFILED)
    spec = tmp_path / "spec.yaml"
    spec.write_text("calls:\n  - args: [{array: [8]}]\n    repeat: 12\n")
    result, report = cli.json("profile", "--max-slow-calls", "5", f"{prog}:step", "--args",
                              spec, tmp_path=tmp_path)
    assert result.exit_code == 1, result.output
    (group,) = groups(report, "step")
    assert (group["calls"], group["reason"]) == (11, "unordered_effect")
    assert group["line"] == f"{prog}:{line(PROFILED, 'profiled-callback')}"
    (compiled,) = [e for e in report["events"] if e["function"] == "step"]
    assert group["call_site"] == compiled["call_site"]  # named as the compile's call is
    (function,) = report["slow_calls"]["functions"]
    assert function["calls"] == 12  # the profiled target's calls are counted: 11 of 12
    assert "step 11 of 12 (unordered_effect)" in result.stdout


def test_nothing_of_ours_runs_on_a_call_the_fast_path_serves():
    """Counted, not timed: every Python function that starts during the calls, by its file."""
    package = str(ROOT / "recompile_cli")
    ours: dict[str, int] = {}

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            ours[frame.f_code.co_name] = ours.get(frame.f_code.co_name, 0) + 1

    plain, x = jax.jit(lambda v: v + 1), jnp.ones(3)

    def counted(f) -> int:
        ours.clear()
        sys.setprofile(profile)
        try:
            for _ in range(100):
                f(x)
        finally:
            sys.setprofile(None)
        return sum(ours.values())

    with recompile_cli.record() as rec:
        plain(x)
        noisy(x)
        fast, slow = counted(plain), counted(noisy)
    assert fast == 0  # the C++ fast path served all 100: no function of ours started
    assert slow >= 100 and "_get_fastpath_data" in ours  # a slow call goes through the hooks
    assert rec.report.slow_calls("noisy") == 100 and rec.report.slow_calls("<lambda>") == 0


# Issue 43: the first call of a new C++ entry is no slow call, whatever its leaves (BlackJAX's
# quickstart: a typed key, and a state of Python floats that the first call turns into arrays
# of the same types: the second call makes a new entry without compiling, later ones are fast).
TYPED_KEY = """
import jax, jax.numpy as jnp

@jax.jit
def step(key, state):
    k1, k2 = jax.random.split(key)
    return jax.tree.map(lambda v: v * 2.0, state)

rng_key = jax.random.key(0)
state = {"loc": 1.0, "scale": 2.0}
for i in range(100):
    state = step(jax.random.fold_in(rng_key, i), state)
"""


def test_a_new_entry_with_a_typed_key_whose_later_calls_are_fast_is_no_slow_call(cli, program,
                                                                                  tmp_path):
    result, report = cli.json("run", "--max-slow-calls", "0", program("key", TYPED_KEY),
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report["slow_calls"]["groups"] == [] and report["slow_calls"]["calls"] == 0
    assert "did not finish" not in json.dumps(report)  # a finished run, no slow call


# Its neighbour: a leaf the fast path refuses at every call makes a new entry (no compile) and
# comes back: each of its calls is slow, its first one too.
LOOSE_AFTER_COMMITTED = """
import jax, numpy as np
from jax._src import array
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2,), ("d",))
sharding = NamedSharding(mesh, P("d"))
committed = jax.device_put(np.ones(8, np.float32), sharding)
loose = array.ArrayImpl(committed.aval, sharding, committed._arrays, committed=False)
triple = jax.jit(lambda v: v * 3, in_shardings=sharding)
triple(committed)  # compiled for a committed array
for _ in range(15):
    triple(loose)  # the same program, a new C++ entry that the fast path refuses every time
"""


def test_a_refused_entry_made_without_compiling_counts_every_call(tmp_path):
    done, report = run_in_subprocess(
        tmp_path, LOOSE_AFTER_COMMITTED,
        env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert done.returncode == 0, done.stderr[-2000:]
    (group,) = groups(report, "<lambda>")
    assert (group["calls"], group["reason"]) == (15, "uncommitted_multidevice")


SIGNATURES = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    jax.debug.callback(lambda v: None, x.sum())  # callback-line
    return x * 2

for n in range(1, 6):
    x = jnp.ones(n)
    for _ in range(4):
        step(x)
"""


def test_one_group_per_function_line_and_reason_with_its_signatures(cli, program, tmp_path):
    prog = program("signatures", SIGNATURES)
    result, report = cli.json("run", "--max-slow-calls", "3", prog, tmp_path=tmp_path)
    assert result.exit_code == 1, result.output
    (group,) = groups(report, "step")  # 5 signatures, one callback line: one group
    assert (group["calls"], group["reason"]) == (15, "unordered_effect")
    assert group["line"] == f"{prog}:{line(SIGNATURES, 'callback-line')}"
    assert group["signatures"] == [f"x: f32[{n}]" for n in range(1, 6)]
    assert "15 slow calls -> 0" in group["fix"]
    table = cli("run", prog)
    assert table.stdout.count("Fix: move it out of `step`") == 1
    assert "15 calls (5 signatures)" in table.stdout
    # the gate prices the whole violation: its 15 calls, not one signature's 3
    assert "step: 15 slow calls" in result.output and "15 slow calls -> 0" in result.output


# A step whose own computation takes tens of milliseconds, with a cheap callback: the program's
# execution, which the fast path runs too, is no part of what the fix saves (it was: "saving
# about 2.198 s" for 95 calls of a 23 ms step, of which removing the callback saved 0.37 s).
LONG_STEP = """
import sys, time
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    y = jax.lax.fori_loop(0, 40, lambda i, m: jnp.tanh(m @ m) * 0.5, x)
    jax.debug.callback(lambda v: None, y[0, 0])
    return y

x = jnp.full((256, 256), 0.01)
jax.block_until_ready(step(x))
start = time.perf_counter()
for _ in range(10):
    x = step(x)
jax.block_until_ready(x)
print("STEP", (time.perf_counter() - start) / 10, file=sys.stderr)
"""

# A callback whose own work takes 20 ms a call: taking it out of the step saves that too.
SLOW_CALLBACK = """
import time
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    jax.debug.callback(lambda v: time.sleep(0.02), x.sum())
    return x + 1

x = jnp.ones(4)
for _ in range(11):
    x = step(x)
jax.block_until_ready(x)
"""


def test_the_avoidable_seconds_leave_the_programs_execution_out(tmp_path):
    done, report = run_in_subprocess(tmp_path, LONG_STEP)
    assert done.returncode == 0, done.stderr[-2000:]
    step_seconds = float(done.stderr.split("STEP ")[1].split()[0])
    (group,) = groups(report, "step")
    assert group["calls"] == 10
    assert step_seconds > 0.005  # the step computes for milliseconds...
    assert group["per_call_seconds"] < 0.3 * step_seconds, (group, step_seconds)  # ...not saved


def test_the_avoidable_seconds_count_the_callbacks_own_run(cli, program, tmp_path):
    result, report = cli.json("run", program("slowcb", SLOW_CALLBACK), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (group,) = groups(report, "step")
    assert group["calls"] == 10
    assert 0.02 <= group["per_call_seconds"] < 0.2, group
    assert group["avoidable_seconds"] >= 10 * 0.02


def compiling_lines(text: str) -> list[str]:
    return sorted(line.split(" with ")[0] for line in text.splitlines()
                  if line.startswith("Compiling "))


def test_the_recorder_compiles_nothing_that_jaxs_log_shows(tmp_path):
    """JAX_LOG_COMPILES: the same `Compiling` lines with and without recompile-cli, on a
    program whose every warm call is slow (the old fast-path baseline compiled a jit of ours)."""
    env = {"JAX_LOG_COMPILES": "1"}
    done, report = run_in_subprocess(tmp_path, STEP, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert groups(report, "step")[0]["calls"] == 199
    plain = subprocess.run([sys.executable, str(tmp_path / "sub.py")], capture_output=True,
                           text=True, timeout=300, cwd=tmp_path,
                           env={**os.environ, "JAX_PLATFORMS": "cpu", **env})
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert compiling_lines(plain.stderr) and (
        compiling_lines(done.stderr + done.stdout) == compiling_lines(plain.stderr))
