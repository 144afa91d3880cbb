"""A library module's Python-bool mode flag (equinox ``Dropout(inference=...)``, flax
``nnx.Dropout(deterministic=...)``, ``nnx.BatchNorm(use_running_average=...)``) is recognised
by its use: the library's code branches on it in Python. Each mode compiling once is
expected, never "pass it as a traced array"; a flag of the user's own class, or a library's
value that is not a bool, keeps the advice it had. Real JAX, equinox and flax."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax_support import requires_private_hooks

import recompile_cli

pytestmark = requires_private_hooks
MODE = "is the mode switch of"
TRACED = "pass it as a traced array"


def said(rec: Any, name: str) -> tuple[int, list[tuple[str, str | None]], list[str]]:
    """(compiles, (code, argument) of each re-compile, the advice) for ``name``."""
    report = rec.report.report
    events = [e for e in rec.session.events if e.function == name and e.depth == 0]
    causes = [(str(report.primary(e).code), report.primary(e).argument) for e in events[1:]]
    advice = [s.message for s in report.suggestions if s.function == name]
    return rec.report.compiles(name), causes, advice


def test_equinox_dropout_inference_is_a_mode_switch():
    eqx = pytest.importorskip("equinox")

    class Net(eqx.Module):
        drop: Any

        def __call__(self, x, key):
            return self.drop(x, key=key)

    @eqx.filter_jit
    def step(model, x, key):
        return model(x, key)

    model, key = Net(eqx.nn.Dropout(0.5)), jax.random.key(0)
    with recompile_cli.record() as rec:
        step(model, jnp.ones(3), key)
        step(eqx.nn.inference_mode(model), jnp.ones(3), key)
        step(eqx.nn.inference_mode(model, value=False), jnp.ones(3), key)
    compiles, causes, advice = said(rec, "step")
    assert (compiles, causes[0]) == (2, ("static_value", "model.drop.inference"))
    (text,) = advice
    assert f"`model.drop.inference` {MODE} `Dropout`" in text and TRACED not in text


def test_flax_nnx_train_and_eval_are_mode_switches():
    nnx = pytest.importorskip("flax.nnx")

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(3, 3, rngs=rngs)
            self.bn = nnx.BatchNorm(3, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.bn(self.lin(x)))

    @nnx.jit
    def step(model, x):
        return model(x)

    model = Model(nnx.Rngs(0))
    with recompile_cli.record() as rec:
        model.train()
        step(model, jnp.ones((2, 3)))
        model.eval()
        step(model, jnp.ones((2, 3)))
        model.dropout.deterministic = False  # one flag alone: dropout on in eval
        step(model, jnp.ones((2, 3)))
    compiles, causes, advice = said(rec, "step")
    assert compiles == 3
    assert causes == [("tree_structure", "model.bn.use_running_average"),
                      ("tree_structure", "model.dropout.deterministic")]
    assert len(advice) == 2 and not any(TRACED in a for a in advice)
    assert any(f"`model.bn.use_running_average` {MODE} `BatchNorm`" in a for a in advice)
    assert any(f"`model.dropout.deterministic` {MODE} `Dropout`" in a for a in advice)


def test_a_flag_of_the_users_own_class_or_a_librarys_number_is_no_mode_switch():
    """The user's own module branching on its flag is the user's to change, and a library's
    dropout rate is a number, not a mode: neither is called a mode switch."""
    eqx = pytest.importorskip("equinox")

    class Mine(eqx.Module):
        training: bool

        def __call__(self, x):
            return x * 2 if self.training else x

    @eqx.filter_jit
    def step(model, x):
        return model(x)

    @eqx.filter_jit
    def drop(layer, x, key):
        return layer(x, key=key)

    with recompile_cli.record() as rec:
        step(Mine(True), jnp.ones(3))
        step(Mine(False), jnp.ones(3))
        drop(eqx.nn.Dropout(0.5), jnp.ones(3), jax.random.key(0))
        drop(eqx.nn.Dropout(0.3), jnp.ones(3), jax.random.key(0))
    for name, argument in (("step", "model.training"), ("drop", "layer.p")):
        compiles, causes, advice = said(rec, name)
        assert (compiles, causes) == (2, [("static_value", argument)])
        assert not any(MODE in a for a in advice)
