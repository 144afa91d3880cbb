"""Warm-up plans of real training steps (issue 46, item 1): a Flax ``TrainState``, an Optax
``inject_hyperparams`` chain, an Equinox ``filter_jit`` step, a ``flax.nnx.jit`` step and a
``jax.example_libraries.optimizers`` step. Each script has a main guard and compiles two
signatures (a smaller last batch); record -> ``warmup`` -> ``run --after-warmup``: nothing of
the user's compiles after the plan. Each script is in a folder with a ``pyproject.toml``, so
that folder is the recorded project root."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from jax_support import requires_private_hooks

pytestmark = requires_private_hooks

MAIN = """

if __name__ == "__main__":
    main()
"""

FLAX_TRAIN_STATE = """
import jax
import jax.numpy as jnp
import optax
import flax.linen as nn
from flax.training import train_state


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(16)(x)))


model = MLP()
tx = optax.adam(1e-3)


@jax.jit
def train_step(state, batch):
    def loss_fn(params):
        pred = state.apply_fn({"params": params}, batch["x"])
        return jnp.mean((pred - batch["y"]) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def main():
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 8)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)
    for n in (32, 32, 4):
        state, loss = train_step(state, {"x": jnp.ones((n, 8)), "y": jnp.ones((n, 1))})
    jax.block_until_ready(loss)
"""

OPTAX_INJECT = """
import jax
import jax.numpy as jnp
import optax

opt = optax.MultiSteps(
    optax.chain(optax.clip_by_global_norm(1.0),
                optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)),
    every_k_schedule=2)


def loss_fn(params, batch, key):
    x = batch["x"] + 0.01 * jax.random.normal(key, batch["x"].shape)
    return jnp.mean((x @ params["w"] + params["b"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, opt_state, batch, key):
    grads = jax.grad(loss_fn)(params, batch, key)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def main():
    params = {"w": jnp.zeros((8, 1)), "b": jnp.zeros((1,))}
    opt_state = opt.init(params)
    key = jax.random.key(0)  # a typed PRNG key
    for n in (32, 32, 4):
        key, sub = jax.random.split(key)
        batch = {"x": jnp.ones((n, 8)), "y": jnp.ones((n, 1))}
        params, opt_state = train_step(params, opt_state, batch, sub)
    jax.block_until_ready(params)
"""

EQUINOX = """
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class Model(eqx.Module):
    layers: list
    activation: str = eqx.field(static=True)

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(8, 16, key=k1), eqx.nn.Linear(16, 1, key=k2)]
        self.activation = "relu"

    def __call__(self, x):
        return self.layers[1](jax.nn.relu(self.layers[0](x)))


opt = optax.sgd(1e-2)


@eqx.filter_jit
def train_step(model, opt_state, x, y):
    def loss_fn(m):
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)

    loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
    updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


def main():
    model = Model(jax.random.PRNGKey(0))
    opt_state = opt.init(eqx.filter(model, eqx.is_array))
    for n in (32, 32, 4):
        model, opt_state, loss = train_step(model, opt_state, jnp.ones((n, 8)),
                                            jnp.ones((n, 1)))
    jax.block_until_ready(loss)
"""

NNX = """
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(8, 16, rngs=rngs)
        self.l2 = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))


tx = optax.adam(1e-3)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(m):
        return jnp.mean((m(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def main():
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    for n in (32, 32, 4):
        loss = train_step(model, optimizer, jnp.ones((n, 8)), jnp.ones((n, 1)))
    jax.block_until_ready(loss)
"""

EXAMPLE_LIBRARIES = """
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers

opt_init, opt_update, get_params = optimizers.adam(1e-3)


def loss_fn(params, x, y):
    w, b = params
    return jnp.mean((x @ w + b - y) ** 2)


@jax.jit
def train_step(i, opt_state, x, y):
    grads = jax.grad(loss_fn)(get_params(opt_state), x, y)
    return opt_update(i, grads, opt_state)


def main():
    opt_state = opt_init((jnp.zeros((8, 1)), jnp.zeros((1,))))
    for i, n in enumerate((32, 32, 4)):
        opt_state = train_step(i, opt_state, jnp.ones((n, 8)), jnp.ones((n, 1)))
    jax.block_until_ready(get_params(opt_state))
"""

SCRIPTS = {
    "flax_train_state": (FLAX_TRAIN_STATE, "flax", "_ref('__main__', 'model.apply')"),
    "optax_inject_hyperparams": (OPTAX_INJECT, "optax", "'InjectStatefulHyperparamsState'"),
    "equinox_filter_jit": (EQUINOX, "equinox", "_jitted('__main__', 'train_step._cached')"),
    "nnx_jit": (NNX, "flax.nnx", "_jitted('__main__', 'train_step.jitted_fn')"),
    "example_libraries": (EXAMPLE_LIBRARIES, "jax.example_libraries",
                          "_ref('jax.example_libraries.optimizers', 'OptimizerState')"),
}


NO_GUARD = """

main()
"""


def project(tmp_path: Path, name: str, source: str, guard: bool = True) -> Path:
    """``train.py`` in a project folder of its own (its ``pyproject.toml`` makes it the root),
    its ``main()`` called under a main guard or, without one, at its top level."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    script = folder / "train.py"
    script.write_text(textwrap.dedent(source) + (MAIN if guard else NO_GUARD))
    return script


def record_and_plan(cli, script: Path):
    session, plan = script.with_name("s.json"), script.with_name("plan.py")
    result = cli("run", "--save", session, script)
    assert result.exit_code == 0, result.output
    summary = cli("warmup", session, "-o", plan)
    assert summary.exit_code == 0, summary.output
    return plan, summary.output


@pytest.mark.parametrize("guard", [True, False], ids=["main_guard", "no_main_guard"])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_real_training_step_compiles_nothing_after_its_warmup(cli, tmp_path, name, guard):
    """With a main guard the plan runs before the guarded block; without one, the script runs
    whole and ``train_step`` is warmed at its first call (issue 46, items 2 and 5)."""
    source, library, written = SCRIPTS[name]
    pytest.importorskip(library)
    script = project(tmp_path, name, source, guard)
    plan, summary = record_and_plan(cli, script)
    assert "train_step: 2 signatures" in summary, summary
    assert "train_step (" not in summary.partition("Not replayable")[2], summary
    assert written in plan.read_text()
    result, report = cli.json("run", "--after-warmup", plan, script, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    coverage = report["warmup_coverage"]
    assert coverage["error"] is None
    assert coverage["compiles_after"] == 0, coverage["misses"]
    assert report["warmup"].get("at_first_call", False) is not guard
    if guard:
        assert coverage["compiled"] == 2
    else:  # the first call's own signature may compile after its warm-up, as its call goes on
        (first,) = report["warmup"]["first_calls"]
        assert first["function"].startswith("train_step@") and not first.get("failed")
        assert first["compiled"] == 2 and coverage["compiled"] >= 1
        assert "warm-up at first call: train_step at " in result.output


def test_an_optimizer_made_inside_main_is_named_and_the_rest_warms_up(cli, tmp_path):
    """A ``TrainState``'s ``tx`` made in ``main()`` holds optax's closures, compared by
    identity: no plan can make an equal one. The plan names it, with what to do, and still
    warms up the other function."""
    pytest.importorskip("flax")
    source = FLAX_TRAIN_STATE.replace("tx = optax.adam(1e-3)\n", "").replace(
        "tx=tx)", "tx=optax.adam(1e-3))").replace("""    jax.block_until_ready(loss)
""", """    jax.block_until_ready(loss)
    jax.block_until_ready(evaluate(state.params, jnp.ones((4, 8))))


@jax.jit
def evaluate(params, x):
    return model.apply({"params": params}, x)
""")
    script = project(tmp_path, "flax_tx_in_main", source)
    plan, summary = record_and_plan(cli, script)
    reason = ("argument state: the static data of its TrainState node: <function "
              "chain.<locals>.init_fn")
    assert reason in summary and "is a function made inside chain()" in summary
    assert "inside a GradientTransformationExtraArgs that no module-level name holds (keep " \
        "that object at module level): train_step (2)" in summary
    assert "evaluate: 1 signature" in summary
    text = plan.read_text()
    assert "inside a GradientTransformationExtraArgs" in text  # the plan names it too
    result, report = cli.json("run", "--after-warmup", plan, script, tmp_path=tmp_path)
    coverage = report["warmup_coverage"]
    assert result.exit_code == 1  # train_step compiles after it: the gate says so
    assert coverage["compiled"] == 1
    assert {miss["function"] for miss in coverage["misses"]} == {"train_step"}
