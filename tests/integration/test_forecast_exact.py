"""`forecast` counts exactly what `profile` compiles: every sample program with a spec and every
spec scenario of the other integration tests, forecast and then really run, per function."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from helpers import SAMPLES, TARGETS_MODULE
from jax_support import JAX_VERSION

# The sample programs with a spec: (program, function, spec, extra flags).
SAMPLE_CASES = [
    ("shapes", "slow_function", "shapes", ()),
    ("static_args", "example_function_static", "static_args", ()),
    ("lax_cond", "example_function_lax", "lax_cond", ()),
    ("python_if", "example_function", "python_if", ()),
    ("python_if", "example_function", "python_if", ("--keep-going",)),
    ("seq_lengths", "encode", "seq_lengths", ()),
    ("seq_lengths", "encode", "seq_lengths_bucketed", ()),
    ("train_loop", "train_step", "train_loop", ()),
    ("train_loop", "train_step", "train_loop_warmup", ()),
]
# Samples forecast with --lower: the Flax step of docs/forecast.md draws dropout from its PRNG
# key, and lowering that traces JAX's PRNG helpers (jitted functions of their lowering rules,
# compiling nothing), which a forecast sees only when it lowers too.
LOWERED_SAMPLES = [("flax_train", "train_step", "flax_train")]

# The spec scenarios of test_cli.py, test_check.py / conftest.py, test_advice.py and test_fuzz.py
# (its hand-written spec), plus the cache-key rules a forecast must follow (weak types, numpy and
# Python scalars, dtypes, pytree structure, keywords, nested jits, committed shardings, static
# values by hash/eq).
MODULE = TARGETS_MODULE + """
    import numpy as np

    @jax.jit
    def step(x):
        return jnp.tanh(x) * 2

    @jax.jit
    def inner(x):
        return jnp.sin(x)

    @jax.jit
    def outer(x, y=None):
        out = inner(x) + inner(x[::-1])
        return out if y is None else out + y.sum()

    def weak(v):
        return jnp.asarray(v)              # a weakly typed array for a Python scalar

    def numpy_array(n, dtype):
        return np.ones((n,), dtype)

    def committed(n):
        return jax.device_put(jnp.ones((n,)), jax.devices()[0])

    @jax.jit
    def leaves_sum(tree):
        return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(tree))

    def mixed(*args, mode="slow"):
        total = sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(args))
        return total if mode == "fast" else -total

    def pair(n):
        return (jnp.ones((n,)), jnp.ones((n,)))

    class Key:                              # equal by value, hashed by value
        def __init__(self, v): self.v = v
        def __eq__(self, other): return isinstance(other, Key) and other.v == self.v
        def __hash__(self): return hash(self.v)
        def __repr__(self): return f"Key({self.v})"

    def key(v):
        return Key(v)

    @functools.partial(jax.jit, static_argnums=(1,))
    def by_key(x, k):
        return x * k.v
"""

SCENARIOS = {
    "plain_scalars": ("plain", """
        calls:
          - args: [{array: [3]}, 2]
          - args: [{array: [4]}, 2]
          - args: [{array: [4]}, 5]
    """, ()),
    "plain_static": ("plain", """
        jit: {static_argnames: n}
        calls:
          - args: [{array: [3]}, 2]
          - args: [{array: [4]}, 2]
          - args: [{array: [4]}, 5]
    """, ()),
    "partial_jitted": ("partial_jitted", """
        calls:
          - args: [{array: [3]}, 2]
          - args: [{array: [4]}, 2]
          - args: [{array: [4]}, 5]
    """, ()),
    "method": ("model.forward", "calls: [{args: [{array: [2]}]}, {args: [{array: [3]}]}]", ()),
    "static_self": ("Model.forward", 'calls: [{args: [{call: "target:Model"}, {array: [2]}]}]',
                    ("--static-argnums", "0")),
    "factory_static": ("scaled", """
        calls:
          - args: [{call: "target:make_params", args: [3]}, 2]
          - args: [{call: "target:make_params", args: [3]}, 2]
          - args: [{call: "target:make_params", args: [4]}, 2]
    """, ("--static-argnums", "1")),
    "two_shapes": ("step", """
        calls:
          - args: [{array: [3]}]
          - args: [{array: [4]}]
          - args: [{array: [3]}]
    """, ()),
    "batches": ("step", """
        calls:
          - args: [{array: [128, 4]}]
            repeat: 63
          - args: [{array: [64, 4]}]
    """, ()),
    "weak_and_dtypes": ("step", """
        calls:
          - args: [{scalar: 1.0}]
          - args: [{call: "target:weak", args: [2.0]}]
          - args: [{call: "target:weak", args: [3.0]}]
          - args: [1.5]
          - args: [{array: [3], dtype: int32}]
          - args: [{numpy: [3], dtype: float32}]
          - args: [{call: "target:numpy_array", args: [3, float32]}]
          - args: [{array: [3], dtype: bfloat16}]
    """, ()),
    "nested_and_keywords": ("outer", """
        calls:
          - args: [{array: [3]}]
          - args: [{array: [3]}]
            kwargs: {y: {array: [2]}}
          - args: [{array: [3]}]
            kwargs: {y: {array: [5]}}
          - args: [{array: [4]}, {array: [5]}]
    """, ()),
    "structure": ("leaves_sum", """
        calls:
          - args: [{call: "target:pair", args: [3]}]
          - args: [[{array: [3]}, {array: [3]}]]
          - args: [{dict: {a: {array: [3]}}}]
          - args: [{call: "target:pair", args: [3]}]
    """, ()),
    "committed": ("step", """
        calls:
          - args: [{array: [3]}]
          - args: [{call: "target:committed", args: [3]}]
          - args: [{array: [3]}]
          - args: [{call: "target:committed", args: [3]}]
          - args: [{call: "target:committed", args: [4]}]
    """, ()),
    "fuzz_spec": ("mixed", """
        jit: {static_argnames: [mode]}
        defaults: {dtype: float32, fill: normal, seed: 0}
        calls:
          - args: [{array: [4, 4]}, 3]
            kwargs: {mode: fast}
            repeat: 2
          - sweep: {n: {range: [1, 5]}}
            args: [{numpy: ['${n}', 2], dtype: int8}, {tuple: [1, {scalar: 2.0, dtype: float16}]},
                   {dict: {a: {array: 1}}}]
    """, ()),
    "static_by_hash_eq": ("by_key", """
        calls:
          - args: [{array: [3]}, {call: "target:key", args: [2]}]
          - args: [{array: [3]}, {call: "target:key", args: [2]}]
          - args: [{array: [3]}, {call: "target:key", args: [3]}]
    """, ()),
}


def _compare(cli, tmp_path, target, spec, extra, lower=()):
    profiled, real = cli.json("profile", target, "--args", spec, *extra, tmp_path=tmp_path)
    forecast, predicted = cli.json("forecast", target, "--args", spec, *extra, *lower,
                                   tmp_path=tmp_path)
    assert real is not None and predicted is not None, (profiled.output, forecast.output)
    assert forecast.exit_code == profiled.exit_code, forecast.output
    counts = {f["name"]: f["compiles"] for f in real["functions"]}
    assert {f["name"]: f["compiles"] for f in predicted["functions"]} == counts
    assert predicted["totals"]["compiles"] == real["totals"]["compiles"]
    assert predicted["totals"]["errors"] == real["totals"]["errors"]
    assert _causes(predicted) == _causes(real)
    return real, predicted


def _causes(report: dict) -> list[tuple]:
    """Each compile's cause: its function, the call that needed it, code, argument, change."""
    return [(e["function"], e["call_index"], e["cause"]["code"], e["cause"]["argument"],
             e["cause"]["before"], e["cause"]["after"])
            for e in report["events"] if e["compiled"] or e["error"]]


@pytest.mark.parametrize(("program", "function", "spec", "extra"), SAMPLE_CASES,
                         ids=[f"{c[2]}{''.join(c[3])}" for c in SAMPLE_CASES])
def test_forecast_equals_profile_on_the_samples(cli, tmp_path, program, function, spec, extra):
    if program == "static_args" and JAX_VERSION < (0, 8):
        pytest.skip("static_args.py uses the jax.jit(**options) decorator factory (JAX >= 0.8)")
    real, _ = _compare(cli, tmp_path, f"{SAMPLES / program}.py:{function}",
                       SAMPLES / f"{spec}.yaml", extra)
    assert real["totals"]["compiles"] or real["target_exception"]


@pytest.mark.parametrize(("program", "function", "spec"), LOWERED_SAMPLES,
                         ids=[case[2] for case in LOWERED_SAMPLES])
def test_forecast_with_lower_equals_profile_on_a_real_train_step(cli, tmp_path, program,
                                                                  function, spec):
    """Flax params, an optax state, a PRNG key and a static config, built by factories."""
    real, _ = _compare(cli, tmp_path, f"{SAMPLES / program}.py:{function}",
                       SAMPLES / f"{spec}.yaml", (), lower=("--lower",))
    assert real["totals"]["compiles"] and not real["target_exception"]


def test_every_sample_spec_is_forecast():
    specs = {p.stem for p in SAMPLES.glob("*.yaml")
             if "calls" in (yaml.safe_load(p.read_text()) or {})}  # not the budget files
    assert specs == {case[2] for case in [*SAMPLE_CASES, *LOWERED_SAMPLES]}


LOWERED = ["weak_and_dtypes", "nested_and_keywords", "committed", "static_by_hash_eq"]


@pytest.mark.parametrize(("name", "lower"), [(n, ()) for n in SCENARIOS]
                         + [(n, ("--lower",)) for n in LOWERED],
                         ids=[*SCENARIOS, *(f"{n}-lower" for n in LOWERED)])
def test_forecast_equals_profile_on_the_spec_scenarios(cli, program, tmp_path, monkeypatch,
                                                       name, lower):
    function, spec_text, extra = SCENARIOS[name]
    program("target", MODULE)
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(spec_text))
    monkeypatch.chdir(tmp_path)
    real, predicted = _compare(cli, tmp_path, f"target:{function}", "spec.yaml", extra,
                               lower)
    assert real["totals"]["compiles"] > 0
    assert any(w.startswith("forecast: nothing was executed") for w in predicted["warnings"])
