"""Advice that only promises what it removes (issue 43), on real JAX and real libraries: padding
names every dimension that varies and stops at the largest size seen, a compile that changed a
static function and a structure names both, and a train step run in eval mode states the fact
and both readings. Each predicted count is checked by running the fix."""

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


def only(run: Callable[[], object], function: str) -> Suggestion:
    (found,) = [s for s in recorded(run).report.suggestions if s.function == function]
    return found


@jax.jit
def step(x, y):
    return jnp.tanh(x).sum() + y.sum()


def test_padding_names_both_arguments_and_its_prediction_holds():
    def run(pad: bool) -> None:
        for b, t in [(8, 10), (16, 20), (8, 10), (16, 20)]:
            step(jnp.ones((16 if pad else b, 4)), jnp.ones((20 if pad else t,)))

    s = only(lambda: run(False), "step")
    assert s.message.startswith(
        "`x` dim 0 took the values 8, 16 and `y` dim 0 took the values 10, 20, in the same "
        "calls: 2 compiles -> 1 with each padded to its largest size (`x` dim 0 to 16, `y` dim "
        "0 to 20;")
    jax.clear_caches()
    assert s.predicted_compiles == 1 == recorded(lambda: run(True)).compiles("step")


@jax.jit
def encode(tokens):
    return jnp.tanh(tokens).sum()


def test_buckets_stop_at_the_largest_length_seen():
    def run(bucket: Callable[[int], int]) -> None:
        for n in (36, 40, 48, 40, 36):
            encode(jnp.ones((4, bucket(n))))

    s = only(lambda: run(lambda n: n), "encode")
    assert "64" not in s.message
    assert s.message.startswith("`tokens` dim 1 took 3 values (36..48): 3 compiles -> 1 with one "
                                "shape, padded to 48")
    jax.clear_caches()
    assert s.predicted_compiles == 1 == recorded(lambda: run(lambda n: 48)).compiles("encode")


@functools.partial(jax.jit, static_argnums=(0,))
def mesh_eval(func, params):
    return jax.vmap(func, in_axes=(0, None))(jnp.ones((4, 2)), params)


def test_a_new_static_function_and_a_new_structure_are_both_named():
    """JAX's examples/advi.py: a target density with ``1``, then an approximation with a tuple
    of parameters; keeping the containers the same alone removes nothing."""
    target = lambda x, _: jnp.exp(x.sum())  # noqa: E731
    approx = lambda x, params: jnp.exp((x * params[0] + params[1]).sum())  # noqa: E731

    def run() -> None:
        for _ in range(2):
            mesh_eval(target, 1)
            mesh_eval(approx, (jnp.zeros(2), jnp.zeros(2)))

    s = only(run, "mesh_eval")
    assert s.predicted_compiles is None
    assert "Keep containers the same" in s.message
    assert "That alone would not remove these compiles: static_value of `func` (<lambda> " in (
        s.message)


def test_a_train_step_run_in_eval_mode_states_the_fact_and_both_readings():
    nnx = pytest.importorskip("flax.nnx")

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(3, 3, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.lin(x))

    @nnx.jit
    def train_step(model, x):
        return model(x).sum()

    @nnx.jit
    def eval_step(model, x):
        return model(x).sum()

    def run() -> None:
        model, x = Model(nnx.Rngs(0)), jnp.ones((2, 3))
        for _ in range(2):
            train_step(model, x)
            model.eval()
            eval_step(model, x)  # and no model.train() after it

    s = only(run, "train_step")
    assert "as expected. It cannot" not in s.message
    assert ("train_step ran in training (`deterministic=False`) and evaluation mode "
            "(`True`), each compiled once. To train, call `model.train()` before it; to "
            "evaluate, call `model.eval()`; if both modes are intended, this is expected"
            ) in s.message
