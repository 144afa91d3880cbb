"""What an eager storm is (issue 43), on real JAX and real libraries: a storm is one operation
compiling again and again at a line, and its advice follows what repeats. A boolean mask's new
sizes storm with the fixed-size advice; a closure made anew each call storms with the advice to
jit the step or make the closure once; an eager ``value_and_grad`` through a model (many
operations, each once) and a library's set-up reached from one call (NumPyro's ``mcmc.run``) are
a one-time cost, never a storm. The gate ``--max-eager-compiles`` still counts every compile at
a line."""

from __future__ import annotations

import pytest
from jax_support import requires_private_hooks
from test_eager_lines import at, line_of


def storms(report: dict) -> list[dict]:
    return [line for line in report["eager_lines"]["lines"] if line["storm"]]


def suggestion_for(report: dict, line: dict) -> str | None:
    found = [s["message"] for s in report["suggestions"] if s["function"] == line["line"]]
    return found[0] if found else None


MASKS = """
import jax.numpy as jnp

x = jnp.arange(40.0)
for threshold in range(5, 30, 2):
    picked = x[x < threshold]  # mask-line
    print(picked.sum())
"""


@requires_private_hooks
def test_a_mask_storms_for_new_sizes_with_the_fixed_size_advice(cli, program, tmp_path):
    prog = program("masks", MASKS)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    storm = at(report, prog, line_of(prog, "# mask-line"))
    assert storm["storm"] is True
    gather = next(op for op in storm["ops"] if op["name"] == "gather")
    assert gather["code"] == "shape" and gather["repeats"] >= 10
    assert gather["change"].startswith("shape at args[1]: i32[")
    message = suggestion_for(report, storm)
    assert "new sizes of the same inputs" in message and "jnp.where(mask, x, 0)" in message
    assert "new function" not in message
    out = result.stdout.replace("\n  ", " ")
    assert f"eager storm at {prog}:{line_of(prog, '# mask-line')}" in out or (
        f"masks.py:{line_of(prog, '# mask-line')} (<module>)" in out)
    assert ": new sizes)" in out


CLOSURES = """
import jax, jax.numpy as jnp

def update(g, scale):
    def body(carry, x):  # a new closure each call, as an eager optimizer update makes
        return carry + x * scale, None
    out, _ = jax.lax.scan(body, jnp.zeros(()), g)  # scan-line
    return out

g = jnp.arange(8.0)
for step in range(12):
    u = update(g, 0.5)
"""


@requires_private_hooks
def test_a_closure_made_each_call_storms_with_the_jit_advice_not_the_mask_fix(
        cli, program, tmp_path):
    prog = program("closures", CLOSURES)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (storm,) = storms(report)
    assert storm["line"] == f"{prog}:{line_of(prog, '# scan-line')} (update)"
    (scan,) = [op for op in storm["ops"] if op["name"] == "scan"]
    assert scan["code"] == "new_function" and scan["new_functions"] == 11
    assert scan["repeats"] == 12 and scan["new_sizes"] == 0
    message = suggestion_for(report, storm)
    assert "jit the step" in message and "create the function once" in message
    assert "jnp.where" not in message and "mask" not in message
    assert "saves about 11 compiles" in message
    assert "a new function each call" in result.stdout.replace("\n  ", " ")


SWEEP = """
import jax, jax.numpy as jnp

def run_opt(x0, scale):
    def step(x):  # a new closure for each problem, as optax's L-BFGS example makes
        return x * scale
    return jax.lax.while_loop(lambda x: jnp.sum(x) < 100.0, step, x0)  # solve-line

for size in (4, 8, 16, 32, 64, 128):  # a sweep: each setting is another problem
    print(run_opt(jnp.ones(size), 1.5).sum())
"""


@requires_private_hooks
def test_one_solver_run_per_setting_is_a_sweep_without_the_jit_advice(
        cli, program, tmp_path, monkeypatch):
    # optax's L-BFGS example: an eager `lax.while_loop` per memory size, each compile for other
    # inputs. Jitting `run_opt` would compile one program per setting all the same, so the
    # line gets no fix, and it is never "each operation once".
    from recompile_cli.analysis.advice import eager

    monkeypatch.setattr(eager, "ONE_TIME_SECONDS", 0.0)
    monkeypatch.setattr(eager, "ONE_TIME_SHARE", 0.0)
    prog = program("sweep", SWEEP)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    line = at(report, prog, line_of(prog, "# solve-line"))
    assert line["compiles"] == 6 and line["storm"] is False
    assert [op["name"] for op in line["ops"]] == ["while"]
    assert suggestion_for(report, line) is None
    assert "eager storm" not in result.stdout
    assert not [s for s in report["suggestions"] if line["line"] in s["message"]]


MODEL_GRAD = """
import equinox as eqx
import jax
import jax.numpy as jnp

widths = [8, 16, 24, 32, 40, 48, 56, 3]
keys = jax.random.split(jax.random.PRNGKey(0), len(widths) - 1)
layers = [eqx.nn.Linear(a, b, key=k) for a, b, k in zip(widths, widths[1:], keys)]


def loss(layers, x):
    for layer in layers:
        x = jax.nn.relu(jax.vmap(layer)(x))
    return jnp.mean(x)


x = jnp.ones((4, 8))
value, grads = eqx.filter_value_and_grad(loss)(layers, x)  # grad-line
print(value)
"""


@requires_private_hooks
def test_an_eager_grad_through_a_model_is_a_one_time_cost_never_a_storm(cli, program, tmp_path):
    pytest.importorskip("equinox")
    prog = program("model_grad", MODEL_GRAD)
    result, report = cli.json("run", "--max-eager-compiles", "20", prog, tmp_path=tmp_path)
    line = at(report, prog, line_of(prog, "# grad-line"))
    assert line["compiles"] > 20 and line["storm"] is False
    # many different operations: the same primitive for each layer's shapes is not a repeat
    assert not storms(report)
    assert "eager storm" not in result.stdout
    assert all("jnp.where" not in s["message"] for s in report["suggestions"])
    message = suggestion_for(report, line)
    if message is not None:  # advised when the line is a large share of the compile time
        assert "each operation once" in message and "jax.jit" in message
    # the gate still counts every compile at the line
    assert result.exit_code == 1, result.output
    assert "max_eager_compiles 20" in result.output


FUNNEL = """
from jax import random
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS


def model(dim=10):
    y = numpyro.sample("y", dist.Normal(0, 3))
    numpyro.sample("x", dist.Normal(jnp.zeros(dim - 1), jnp.exp(y / 2)))


def run_inference(model, rng_key):
    mcmc = MCMC(NUTS(model), num_warmup=20, num_samples=20, progress_bar=False)
    mcmc.run(rng_key)  # run-line
    return mcmc.get_samples()


samples = run_inference(model, random.PRNGKey(0))
"""


@requires_private_hooks
def test_a_librarys_set_up_from_one_call_is_its_one_time_cost_not_a_storm(
        cli, program, tmp_path):
    pytest.importorskip("numpyro")
    prog = program("funnel", FUNNEL)
    result, report = cli.json("run", "--all", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    line = at(report, prog, line_of(prog, "# run-line"))
    assert line["compiles"] > 30 and line["storm"] is False
    assert not storms(report)
    assert "eager storm" not in result.stdout
    assert suggestion_for(report, line) is None  # nothing of the user's to fix


MODEL_OVER_LINES = """
import jax, jax.numpy as jnp

def build(key):
    k = jax.random.split(key, 6)
    w1 = jax.random.normal(k[0], (16, 32))  # first-layer
    b1 = jax.random.uniform(k[1], (32,))
    w2 = jax.random.normal(k[2], (32, 24))
    b2 = jax.random.uniform(k[3], (24,))
    w3 = jax.random.normal(k[4], (24, 8))
    b3 = jax.random.uniform(k[5], (8,))  # last-layer
    return [w1, b1, w2, b2, w3, b3]

params = build(jax.random.key(0))
"""

LAYER_PER_SHAPE = """
import jax

shapes = [(8 * (i + 1), 8 * (i + 2)) for i in range(8)]
keys = jax.random.split(jax.random.key(0), len(shapes))
params = [jax.random.normal(k, s) for k, s in zip(keys, shapes)]  # comprehension
"""


@requires_private_hooks
def test_a_model_built_over_several_lines_gets_the_build_under_jit_advice(
        cli, program, tmp_path, monkeypatch):
    """Issue 43: the one-time init advice fired for a model built on one line only."""
    from recompile_cli.analysis.advice import eager

    monkeypatch.setattr(eager, "ONE_TIME_SECONDS", 0.0)  # the rule's logic, not this machine
    prog = program("model", MODEL_OVER_LINES)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    first, last = line_of(prog, "# first-layer"), line_of(prog, "# last-layer")
    (advice,) = [s["message"] for s in report["suggestions"]
                 if s["code"] == "eager_compiles"]
    assert f"at lines {first - 1}-{last} of build" in advice or (
        f"at lines {first}-{last} of build" in advice)
    assert "build the model under `jax.jit`" in advice and "storm" not in advice


@requires_private_hooks
def test_one_operation_per_layer_shape_is_a_model_build_not_a_storm(
        cli, program, tmp_path, monkeypatch):
    from recompile_cli.analysis.advice import eager

    monkeypatch.setattr(eager, "ONE_TIME_SECONDS", 0.0)
    prog = program("layers", LAYER_PER_SHAPE)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    line = at(report, prog, line_of(prog, "# comprehension"))
    assert line["storm"] is False and line["compiles"] >= 8
    (advice,) = [s["message"] for s in report["suggestions"] if s["function"] == line["line"]]
    assert "build the model under `jax.jit`" in advice


PPO_CALLBACK = """
import jax, jax.numpy as jnp


def log(info):  # purejaxrl's PPO logs finished episodes so, inside jax.debug.callback
    returns = info["returns"][info["done"]]  # returns-line
    steps = info["steps"][info["done"]] * 4  # steps-line
    for t in range(len(steps)):
        pass


@jax.jit
def update(i):
    done = jnp.arange(32) < i + 3  # a new count of finished episodes each update
    info = {"returns": jnp.arange(32.0) * i, "steps": jnp.arange(32) + i, "done": done}
    jax.debug.callback(log, info)
    return i + 1


i = jnp.int32(0)
for _ in range(14):
    i = update(i)
jax.effects_barrier()
"""


@requires_private_hooks
def test_the_mask_lines_of_one_callback_are_advised_once_with_the_whole_saving(
        cli, program, tmp_path):
    prog = program("ppo_callback", PPO_CALLBACK)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    lines = [at(report, prog, line_of(prog, marker)) for marker in ("# returns-line",
                                                                     "# steps-line")]
    assert all(line["storm"] and line["host_callback"] == "jax.debug.callback"
               for line in lines)
    advice = [s for s in report["suggestions"] if s["code"] == "eager_compiles"]
    (one,) = advice  # one fix at the callback's top, not one per line
    first, last = line_of(prog, "# returns-line"), line_of(prog, "# steps-line")
    assert one["function"] == lines[0]["line"]
    assert f"lines {first}-{last} of log" in one["message"]
    again = sum(sum(op["new_sizes"] for op in line["ops"] if op["code"] == "shape" and
                    op["repeats"] >= 10) for line in lines)
    assert f"saves about {again} compiles" in one["message"] and again >= 20
    assert one["predicted_compiles"] == sum(line["compiles"] for line in lines) - again


OPTAX_LBFGS = """
import sys
import jax, jax.numpy as jnp
import optax

w_opt = jnp.ones(8)
mat = jnp.eye(8) * 2.0


def fun(w):
    return 0.5 * (w - w_opt).dot(mat.dot(w - w_opt))


opt = optax.scale_by_lbfgs()
w = jnp.zeros(8)
state = opt.init(w)
update = jax.jit(opt.update) if "--jit" in sys.argv else opt.update
for i in range(12):  # optax's L-BFGS example, its first cell
    v, g = jax.value_and_grad(fun)(w)
    u, state = update(g, state, w)  # update-line
    w = w - 0.1 * u
"""


@requires_private_hooks
def test_optax_eager_lbfgs_update_storms_and_its_fix_saves_what_it_promised(
        cli, program, tmp_path):
    pytest.importorskip("optax")
    prog = program("lbfgs", OPTAX_LBFGS)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    line = at(report, prog, line_of(prog, "# update-line"))
    assert line["storm"] is True
    message = suggestion_for(report, line)
    assert "jit the step" in message and "jnp.where" not in message
    promised = int(message.split("saves about ")[1].split(" compiles")[0])
    assert promised >= 10
    # the A/B: the fix as advised (jit the optimizer's update) removes at least that many
    fixed_result, fixed = cli.json("run", prog, "--jit", tmp_path=tmp_path)
    assert fixed_result.exit_code == 0, fixed_result.output
    assert report["totals"]["compiles"] - fixed["totals"]["compiles"] >= promised
    assert not storms(fixed)
