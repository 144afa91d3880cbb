"""Advice only when it is true, on real JAX: a static function re-created in a loop is never
advised to be traced, a typed then a raw PRNG key is never advised padding, weak types name
where the weak value came from, padding costs are weighted by calls, and every predicted compile
count is checked by running the fix."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import pytest
from jax_support import requires_private_hooks

import recompile_cli
from recompile_cli.analysis.advice.suggest import Suggestion

pytestmark = requires_private_hooks


def recorded(run: Callable[[], object]) -> recompile_cli.RecompileReport:
    with recompile_cli.record() as rec:
        run()
    return rec.report


def advice(run: Callable[[], object], function: str) -> list[Suggestion]:
    return [s for s in recorded(run).report.suggestions if s.function == function]


def only(run: Callable[[], object], function: str) -> Suggestion:
    (found,) = advice(run, function)
    return found


def compiles(run: Callable[[], object], function: str) -> int:
    return recorded(run).compiles(function)


# -- a static callable: define it once, never "trace it" ----------------------------------------
@functools.partial(jax.jit, static_argnames=("fn",))
def apply(x, fn):
    return fn(x)


def twice(v):
    return v * 2


@pytest.mark.parametrize("make", [lambda: (lambda v: v * 2), lambda: functools.partial(twice)],
                         ids=["lambda", "partial"])
def test_a_static_function_made_in_the_loop_is_advised_to_be_made_once(make):
    def loop(hoisted: bool) -> None:
        fn = make()
        for _ in range(4):
            apply(jnp.ones(3), fn=fn if hoisted else make())

    s = only(lambda: loop(False), "apply")
    assert s.code == "static_value"
    assert "define it once, outside the loop" in s.message
    assert "traced array instead" not in s.message and "lax.cond" not in s.message
    assert s.predicted_compiles == 1 == compiles(lambda: loop(True), "apply")


def test_different_static_functions_get_no_advice():
    def run() -> None:
        for fn in (jnp.tanh, jnp.sin, jnp.cos):
            apply(jnp.ones(3), fn=fn)

    assert advice(run, "apply") == []


# -- PRNG keys: one key type, never padding -----------------------------------------------------
@jax.jit
def sample(key):
    return jax.random.normal(key, (2,))


def test_a_typed_key_then_a_raw_key_is_advised_one_key_type():
    s = only(lambda: (sample(jax.random.key(0)), sample(jax.random.PRNGKey(1))), "sample")
    assert "jax.random.key" in s.message and "jax.random.wrap_key_data" in s.message
    assert "key<fry>[]" in s.message and "u32[2]" in s.message
    assert "(and mask)" not in s.message and "Pad " not in s.message
    assert s.predicted_compiles == 1 == compiles(
        lambda: (sample(jax.random.key(0)), sample(jax.random.key(1))), "sample")


def test_a_batch_of_typed_keys_of_a_new_size_gets_no_padding_advice():
    @jax.jit
    def draw(keys):
        return jax.vmap(lambda k: jax.random.normal(k, (2,)))(keys)

    def run() -> None:
        for n in (4, 8, 16):
            draw(jax.random.split(jax.random.key(0), n))

    assert advice(run, "draw") == []


# -- weak types: where the weak value came from, and a fix that removes the compile ------------
@jax.jit
def scale(x, lr):
    return x * lr


def test_a_weakly_typed_array_is_not_called_a_python_scalar():
    def run(lr: jax.Array) -> None:
        scale(jnp.ones(2), lr)
        scale(jnp.ones(2), jnp.float32(0.5))
        scale(jnp.ones(2), lr)

    s = only(lambda: run(jnp.array(1.0)), "scale")
    assert s.code == "weak_type"
    assert "Python scalar in" not in s.message and "passed as a Python scalar" not in s.message
    assert "It is a weakly typed array" in s.message
    assert "`jnp.array(1.0, dtype=jnp.float32)`" in s.message
    assert s.predicted_compiles == 1 == compiles(
        lambda: run(jnp.array(1.0, dtype=jnp.float32)), "scale")


def test_a_python_scalar_is_named_as_such():
    def run(lr: object) -> None:
        scale(jnp.ones(2), lr)
        scale(jnp.ones(2), jnp.float32(0.5))

    s = only(lambda: run(1.0), "scale")
    assert "It is a Python scalar in the weakly typed calls" in s.message
    assert "`jnp.float32(1.0)`" in s.message
    assert s.predicted_compiles == 1 == compiles(lambda: run(jnp.float32(1.0)), "scale")


def test_a_python_scalar_inside_a_container_is_named_as_such():
    @jax.jit
    def step(x, cfg):
        return x * cfg["lr"]

    def run(lr: object) -> None:
        step(jnp.ones(2), {"lr": lr})
        step(jnp.ones(2), {"lr": jnp.float32(0.5)})

    s = only(lambda: run(0.1), "step")
    assert s.message.startswith("`cfg['lr']` was weakly typed (~f32[])")
    assert "It is a Python scalar in the weakly typed calls" in s.message
    assert s.predicted_compiles == 1 == compiles(lambda: run(jnp.float32(0.1)), "step")


def test_weak_parameters_and_their_optimizer_state_get_one_true_prediction():
    optax = pytest.importorskip("optax")
    opt = optax.adam(1e-2)

    @jax.jit
    def step(params, state, x):
        grads = jax.grad(lambda p: jnp.mean((p["w"] * x + p["b"]) ** 2))(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    def train(dtype: object) -> None:
        params = {"w": jnp.array(1.0, dtype=dtype), "b": jnp.array(0.0, dtype=dtype)}
        state = opt.init(params)
        for _ in range(4):
            params, state = step(params, state, jnp.ones(8))

    s = only(lambda: train(None), "step")
    assert s.code == "weak_type" and s.message.startswith("`params['b']`, `params['w']`")
    assert "weakly typed arrays" in s.message
    assert s.predicted_compiles == 1 == compiles(lambda: train(jnp.float32), "step")


# -- padding: its cost weighted by the calls of each size --------------------------------------
def test_padding_cost_is_weighted_by_the_calls_of_each_size(cli, program, tmp_path):
    source = program("encode", """
        import jax, jax.numpy as jnp

        @jax.jit
        def encode(x):
            return jnp.tanh(x) * 2
    """)
    spec = tmp_path / "batches.yaml"
    spec.write_text("calls:\n  - args: [{array: [128, 4]}]\n    repeat: 63\n"
                    "  - args: [{array: [64, 4]}]\n")
    _, report = cli.json("profile", f"{source}:encode", "--args", spec, tmp_path=tmp_path)
    [s] = [s for s in report["suggestions"] if s["function"] == "encode"]
    assert s["predicted_compiles"] == 1
    assert "(padding computes 0.8% more elements over the 64 calls)" in s["message"]
