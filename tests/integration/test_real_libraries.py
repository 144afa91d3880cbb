"""Real library programs (flax.nnx, flax.linen, equinox) as a user reads their reports: the
smallest structure differences, the user's argument names behind library wrappers, calls
counted for the user's function, and a library's own lambdas left to the library."""

from __future__ import annotations

import pytest
from helpers import user_events, user_functions
from jax_support import requires_private_hooks

pytest.importorskip("flax")
pytest.importorskip("equinox")

NNX_TRAIN_EVAL = """
    import jax, jax.numpy as jnp
    from flax import nnx

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(4, 8, rngs=rngs)
            self.bn1 = nnx.BatchNorm(8, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)
            self.lin2 = nnx.Linear(8, 2, rngs=rngs)

        def __call__(self, x):
            return self.lin2(self.dropout(self.bn1(self.lin(x))))

    @nnx.jit
    def step(model, x):
        return model(x).sum()

    model = Model(nnx.Rngs(0))
    x = jnp.ones((3, 4))
    model.train()
    step(model, x)
    step(model, x)
    model.eval()  # switches BatchNorm and Dropout: one more compile
    step(model, x)
"""


@pytest.fixture
def run_script(cli, program, tmp_path):
    """Run a script under the recorder: (terminal result, JSON report)."""

    def run(source: str, *options: str, name: str = "prog"):
        script = program(name, source)
        result, report = cli.json("run", *options, script, tmp_path=tmp_path)
        assert result.exit_code == 0, result.stdout
        return result, report

    return run


@requires_private_hooks
def test_nnx_train_eval_names_the_changed_attributes_and_stays_small(run_script, cli, program):
    _, report = run_script(NNX_TRAIN_EVAL)
    step = user_functions(report)["step"]
    assert (step["traces"], step["compiles"]) == (2, 2)
    cause = user_events(report, "step")[1]["cause"]
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "tree_structure", "model.bn1.use_running_average", "False", "True")
    assert "model.dropout.deterministic: False -> True" in cause["detail"]
    # the model's parameters are named as the user knows them
    leaves = user_events(report, "step")[0]["signature"]["leaves"]
    assert leaves["model.lin.kernel"]["shape"] == [4, 8]
    assert leaves["model.bn1.mean"]["shape"] == [8]
    # what a user reads stays small: no dump of the whole model anywhere
    terminal = cli("run", program("prog2", NNX_TRAIN_EVAL)).stdout
    assert len(terminal.splitlines()) < 60
    # the tables' rows (sentences, "- " advice and "+ " summaries, are wrapped on a terminal
    # and may name a long path)
    table_lines = [line for line in terminal.splitlines() if not line.startswith(("- ", "+ "))]
    assert max(len(line) for line in table_lines) < 200
    assert all(len(line) < 400 for line in terminal.splitlines() if line.startswith("+ "))
    assert "model.bn1.use_running_average" in terminal and "GraphDef" not in terminal
    shown = [c["values"] for c in report["cause_table"]] + [s["message"] for s in
                                                            report["suggestions"]]
    assert all(len(text) < 400 for text in shown)
    assert any("model.dropout.deterministic" in s["message"] for s in report["suggestions"])


@requires_private_hooks
def test_equinox_filter_jit_reports_the_users_parameters_and_counts_calls(run_script):
    result, report = run_script("""
        import jax, jax.numpy as jnp
        import equinox as eqx

        class MLP(eqx.Module):
            layers: list
            def __init__(self, key):
                k1, k2 = jax.random.split(key)
                self.layers = [eqx.nn.Linear(4, 8, key=k1), eqx.nn.Linear(8, 2, key=k2)]
            def __call__(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x

        @eqx.filter_jit
        def step(model, x):
            return jax.vmap(model)(x).sum()

        model = MLP(jax.random.PRNGKey(0))
        step(model, jnp.ones((3, 4)))
        step(model, jnp.ones((5, 4)))
        step(model, jnp.ones((5, 4)))
    """, "--count-calls")
    step = user_functions(report)["step"]
    assert (step["calls"], step["compiles"]) == (3, 2)
    cause = user_events(report, "step")[1]["cause"]
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "shape", "x", "f32[3,4]", "f32[5,4]")
    leaves = user_events(report, "step")[0]["signature"]["leaves"]
    assert leaves["model.layers[0].weight"]["shape"] == [8, 4]
    assert "dynamic_nodonate" not in result.stdout
    assert any("`x` dim 0" in s["message"] for s in report["suggestions"])


@requires_private_hooks
def test_nnx_jit_counts_calls_and_names_arguments(run_script):
    _, report = run_script(NNX_TRAIN_EVAL, "--count-calls")
    assert user_functions(report)["step"]["calls"] == 3


@requires_private_hooks
def test_flax_linen_internal_lambdas_belong_to_flax(run_script):
    result, report = run_script("""
        import jax, jax.numpy as jnp
        import flax.linen as nn

        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))

        m = MLP()
        for n in (3, 4, 5):
            params = m.init(jax.random.PRNGKey(0), jnp.ones((n, 4)))
            m.apply(params, jnp.ones((n, 4)))
    """)
    lambdas = [e for e in report["events"] if e["function"] == "<lambda>"]
    assert lambdas and all(e["owner"] == "library" for e in lambdas)
    assert all("/flax/" in e["defined_at"] for e in lambdas)
    assert "<lambda>" not in user_functions(report)
    assert not any("<lambda>" in s["function"] for s in report["suggestions"])
    lines = [line for line in result.stdout.splitlines() if "<lambda>" in line]
    assert all("<lambda> (flax)" in line for line in lines)
    # they re-traced without compiling anything: no re-compilation, no count of compiles
    assert not any(row["function"] == "<lambda>" for row in report["cause_table"])
    assert "+ flax: 2 internal functions (0 compiled)" in result.stdout
    assert "flax" not in next(line for line in result.stdout.splitlines()
                              if line.startswith("not yours: "))
