"""Diagnosis beyond counting: cost-ranked causes, kinds of miss, stale captures, the persistent
cache, new-function patterns, predicted savings and noise control, on real programs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT, SAMPLES, on_python_path, user_events, user_functions
from jax_support import requires_private_hooks


@pytest.fixture
def record(cli, program, tmp_path):
    def run(source: str, name: str = "prog", *options: str):
        script = program(name, source)
        result, report = cli.json("run", *options, script, tmp_path=tmp_path)
        return result, report

    return run


def suggestion(report, code):
    found = [s for s in report["suggestions"] if s["code"] == code]
    assert len(found) == 1, report["suggestions"]
    return found[0]


@requires_private_hooks
def test_sequence_sweep_prediction_is_confirmed_by_a_bucketed_rerun(cli, tmp_path):
    target = f"{SAMPLES / 'seq_lengths.py'}:encode"
    result, report = cli.json("profile", target, "--args", SAMPLES / "seq_lengths.yaml",
                              tmp_path=tmp_path)
    assert user_functions(report)["encode"]["compiles"] == 40
    [row] = report["cause_table"]
    assert (row["count"], row["code"], row["argument"]) == (39, "shape", "tokens")
    assert row["values"] == "f32[1] ... f32[40] (40 values)"
    assert "x39" in result.stdout and "f32[1] ... f32[40]" in result.stdout
    advice = suggestion(report, "shape")
    assert advice["predicted_compiles"] == 7
    assert "40 compiles -> 7 with power-of-two buckets of `tokens` dim 0" in advice["message"]
    assert "or 5 with multiples of 8" in advice["message"]

    _, rerun = cli.json("profile", target, "--args", SAMPLES / "seq_lengths_bucketed.yaml",
                        tmp_path=tmp_path)
    assert user_functions(rerun)["encode"]["compiles"] == advice["predicted_compiles"]


@requires_private_hooks
def test_last_partial_batch_suggestion(cli, tmp_path):
    _, report = cli.json("profile", f"{SAMPLES / 'train_loop.py'}:train_step", "--args",
                         SAMPLES / "train_loop.yaml", tmp_path=tmp_path)
    advice = suggestion(report, "shape")
    assert advice["predicted_compiles"] == 1
    assert "the last batch is smaller: `batch['x']` dim 0 is 32, then 4" in advice["message"]
    assert "drop" in advice["message"]


@requires_private_hooks
def test_cause_table_is_ranked_by_cost_and_collapses_repeats(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def small(x): return x + 1
        @jax.jit
        def big(x):
            for _ in range(30):
                x = jnp.tanh(x @ x.T) + x
            return x
        for n in range(2, 6):
            small(jnp.ones(n))
        big(jnp.ones((4, 4))); big(jnp.ones((5, 5)))
    """)
    table = report["cause_table"]
    assert {(r["function"], r["code"], r["argument"], r["count"]) for r in table} == {
        ("small", "shape", "x", 3), ("big", "shape", "x", 1)}
    seconds = [r["seconds"] for r in table]
    assert seconds == sorted(seconds, reverse=True) and all(s > 0 for s in seconds)
    assert all(r["call_site"].endswith("(<module>)") for r in table)


@requires_private_hooks
def test_kinds_of_miss_are_separated(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x): return x * 2
        f(jnp.ones(3))                                      # re-traced and compiled
        f.trace(jnp.ones(4))                                # traced, nothing compiled
        f(jax.device_put(jnp.ones(3), jax.devices()[0]))    # compiled without a re-trace
    """)
    kinds = [e["kind"] for e in user_events(report, "f")]
    assert kinds == ["retraced_and_compiled", "retraced_executable_reused",
                     "compiled_without_retrace"]
    totals = report["totals"]
    assert (totals["retraced_and_compiled"], totals["retraced_executable_reused"],
            totals["compiled_without_retrace"]) == (1, 1, 1)


@requires_private_hooks
def test_donation_change_compiles_without_retrace(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        def f(x): return x * 2
        jax.jit(f)(jnp.ones(3))
        jax.jit(f, donate_argnums=0)(jnp.ones(3))
    """)
    [_, second] = user_events(report, "f")
    assert second["kind"] == "compiled_without_retrace"
    assert second["cause"]["code"] == "sharding"
    assert "donate" in second["cause"]["detail"]
    assert (second["cause"]["before"], second["cause"]["after"]) == ("False", "True")


@requires_private_hooks
def test_stale_global_and_closure_values(record):
    result, report = record("""
        import jax, jax.numpy as jnp
        SCALE = 2.0
        @jax.jit
        def scaled(x): return x * SCALE
        def make(offset):
            @jax.jit
            def shifted(x): return x + offset
            return shifted
        offset_fn = make(1.5)
        scaled(jnp.ones(2)); offset_fn(jnp.ones(2))
        SCALE = 100.0
        print("after", float(scaled(jnp.ones(2))[0]))   # silently still 2.0
    """)
    assert "after 2.0" in result.stdout
    stale = {(s["function"], s["variable"]): s for s in report["stale_captures"]}
    assert set(stale) == {("scaled", "SCALE")}
    item = stale[("scaled", "SCALE")]
    assert (item["scope"], item["traced_value"], item["current_value"]) == (
        "global", "2.0", "100.0")
    assert not report["warnings"]  # held once, as data; the renderers write the advice
    assert "`SCALE`, traced as 2.0 but now 100.0" in result.stdout


@requires_private_hooks
def test_stale_closure_value(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        def run():
            factor = 3
            f = jax.jit(lambda x: x * factor)
            f(jnp.ones(2))
            factor = 4
            f(jnp.ones(2))
        run()
    """)
    [item] = report["stale_captures"]
    assert (item["variable"], item["scope"], item["traced_value"], item["current_value"]) == (
        "factor", "closure", "3", "4")


@requires_private_hooks
def test_new_function_patterns_name_the_line(record):
    _, report = record("""
        import functools, jax, jax.numpy as jnp
        def scale(x, k): return x * k
        def make():
            def inner(x): return x - 1
            return inner
        for i in range(2):
            jax.jit(functools.partial(scale, k=2.0))(jnp.ones(3))
            jax.jit(make())(jnp.ones(3))
    """)
    messages = {s["function"]: s["message"] for s in report["suggestions"]
                if s["code"] == "new_function"}
    assert "a new functools.partial of scale" in messages["scale"]
    assert "prog.py:8" in messages["scale"]
    assert "inner is defined inside another function (at" in messages["inner"]
    assert "prog.py:5" in messages["inner"]


@requires_private_hooks
def test_weak_type_and_static_predictions(record):
    _, report = record("""
        import functools, jax, jax.numpy as jnp
        @jax.jit
        def g(x, s): return x * s
        g(jnp.ones(2), 1.0); g(jnp.ones(2), jnp.float32(2.0)); g(jnp.ones(2), 3.0)
        @functools.partial(jax.jit, static_argnames=("steps",))
        def h(x, steps): return x * steps
        for steps in range(5):
            h(jnp.ones(2), steps=steps)
    """)
    weak = suggestion(report, "weak_type")
    assert weak["predicted_compiles"] == 1
    assert "It is a Python scalar in the weakly typed calls" in weak["message"]
    static = suggestion(report, "static_value")
    assert static["predicted_compiles"] == 1
    assert "took 5 values" in static["message"] and "5 compiles -> 1" in static["message"]


@requires_private_hooks
def test_nested_consequences_and_library_owners_are_not_separate_problems(
        record, tmp_path, monkeypatch):
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(
        "import jax\n@jax.jit\ndef helper(x):\n    return x * 2\n")
    on_python_path(monkeypatch, str(lib.parent))
    monkeypatch.delitem(sys.modules, "fakelib", raising=False)  # another test's fakelib
    result, report = record("""
        import jax, jax.numpy as jnp, fakelib
        @jax.jit
        def inner(x): return x + 1
        @jax.jit
        def outer(x): return fakelib.helper(inner(x))
        outer(jnp.ones(2)); outer(jnp.ones(3))
    """)
    owners = {f["name"]: (f["owner"], f["package"]) for f in report["functions"]}
    assert owners["helper"] == ("library", "fakelib")
    assert owners["outer"] == ("user", "user")
    # inner and helper re-traced only because outer did: one row, one suggestion.
    assert [(r["function"], r["code"]) for r in report["cause_table"]] == [("outer", "shape")]
    assert [s["function"] for s in report["suggestions"]] == ["outer"]
    assert "+ fakelib: 1 internal function (0 compiled)" in result.stdout
    assert "+ jax:" in result.stdout


def test_persistent_cache_misses_then_hits_on_the_second_process(tmp_path):
    cache = tmp_path / "cache"
    default = dict(os.environ, JAX_PLATFORMS="cpu")
    eager = dict(default, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    reports = []
    for run, env in enumerate([default, eager, eager]):
        out = tmp_path / f"run{run}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "recompile_cli", "profile", "--compilation-cache", str(cache),
             "--output", str(out), f"{SAMPLES / 'shapes.py'}:slow_function", "--args",
             str(SAMPLES / "shapes.yaml")],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        reports.append(json.loads(out.read_text()))
    statuses = [[e["persistent_cache"] for e in user_events(r, "slow_function")]
                for r in reports]
    # Below JAX's default 1 s minimum nothing is written; with no minimum it is, then it hits.
    assert statuses == [["miss_not_written"] * 2, ["miss_written"] * 2, ["hit"] * 2]
    assert reports[2]["totals"]["persistent_cache_hits"] >= 2
    assert reports[2]["environment"]["compilation_cache_dir"] == str(cache)
    assert "persistent cache" in proc.stdout and "hit" in proc.stdout


@requires_private_hooks
def test_named_sharding_changes_on_several_devices(tmp_path):
    script = tmp_path / "shard.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "from jax.sharding import NamedSharding, PartitionSpec as P\n"
        "mesh = jax.make_mesh((4,), ('d',))\n"
        "@jax.jit\n"
        "def q(a): return a * 2\n"
        "x = jnp.arange(8.0)\n"
        "q(x)\n"
        "q(jax.device_put(x, NamedSharding(mesh, P())))\n"
        "q(jax.device_put(x, NamedSharding(mesh, P('d'))))\n")
    out = tmp_path / "report.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=4")
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--output", str(out),
                           str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    causes = [e["cause"] for e in user_events(json.loads(out.read_text()), "q")][1:]
    assert [(c["code"], c["argument"], c["before"], c["after"]) for c in causes] == [
        ("sharding", "a", "f32[8]", "f32[8](P(None,))"),
        ("sharding", "a", "f32[8](P(None,))", "f32[8](P('d',))")]


@requires_private_hooks
def test_library_jit_wrapper_is_attributed_to_the_users_function(record, tmp_path,
                                                                   monkeypatch):
    # Like equinox.filter_jit: the library jits a function of its own, named after the user's,
    # and passes the user's function along as a static argument.
    lib = tmp_path / "site-packages" / "wrapperlib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(
        "import functools, jax\n"
        "def filter_jit(f):\n"
        "    def call(static, x):\n"
        "        return static[0][0](x)\n"
        "    call.__name__ = call.__qualname__ = f.__name__\n"
        "    jitted = jax.jit(call, static_argnums=0)\n"
        "    @functools.wraps(f)\n"
        "    def wrapper(x):\n"
        "        return jitted(((f,), None), x)\n"
        "    return wrapper\n")
    on_python_path(monkeypatch, str(lib.parent))
    _, report = record("""
        import jax.numpy as jnp, wrapperlib

        @wrapperlib.filter_jit
        def step(x):
            return x * 2

        step(jnp.ones(3)); step(jnp.ones(4))
    """)
    [row] = [f for f in report["functions"] if f["name"] == "step"]
    assert (row["owner"], row["compiles"]) == ("user", 2)
    assert row["defined_at"].endswith("prog.py:4")
    assert [(r["function"], r["code"]) for r in report["cause_table"]] == [("step", "shape")]
