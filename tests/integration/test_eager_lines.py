"""Compiles at the user's lines of code that is not the user's (``analysis.eager_lines``), on real
JAX: the eager storm of a boolean mask inside a host callback (the PPO-with-DEBUG case) is in the
verdict with its line and fix and fails ``--max-eager-compiles``; its NumPy fix removes it; a mask
outside any callback storms with the fixed-size advice; an eager initialiser's compile seconds
are at its line; JAX's own functions called or differentiated eagerly at a user's line (``-x``,
``x * y``, ``jnp.mean`` under ``jax.grad``) are never named as the user's, while the user's
``jax.jit`` of one of them stays the user's; the budget key ``max_eager_compiles`` gates lines
inside the functions its pattern names."""

from __future__ import annotations

import textwrap

import pytest
from helpers import SAMPLES, budget, user_functions
from jax_support import requires_private_hooks

STORM = SAMPLES / "callback_storm.py"


def line_of(path, marker: str) -> int:
    """The first line of the file at ``path`` that contains ``marker``."""
    lines = path.read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def lines_by_site(report: dict) -> dict[str, dict]:
    return {line["line"]: line for line in report["eager_lines"]["lines"]}


def at(report: dict, path, number: int) -> dict:
    (found,) = [line for site, line in lines_by_site(report).items()
                if site.startswith(f"{path}:{number} ")]
    return found


@requires_private_hooks
def test_a_mask_in_a_debug_callback_storms_at_its_line_and_fails_the_eager_gate(cli, tmp_path):
    result, report = cli.json("run", "--max-eager-compiles", "50", STORM, tmp_path=tmp_path)
    assert result.exit_code == 1, result.output
    mask_line = line_of(STORM, "finished = returns[done]")
    storm = at(report, STORM, mask_line)
    assert storm["storm"] is True and storm["host_callback"] == "jax.debug.callback"
    assert storm["compiles"] > 50 and storm["again"] >= storm["compiles"] - 10
    assert storm["line"].endswith("(log_episodes)")
    names = {op["name"] for op in storm["ops"]}
    assert "gather" in names and all(op["owner"] == "jax" for op in storm["ops"])
    assert any(op["code"] == "shape" for op in storm["ops"])
    # the jitted step is the user's only function: one compile; JAX's ops are not the user's
    assert {name: f["compiles"] for name, f in user_functions(report).items()} == {
        "rollout_step": 1}
    # the verdict says it, with its line, and the gate's message names the line and the fix
    out = result.stdout
    assert f"eager storm at {STORM.relative_to(SAMPLES.parent)}:{mask_line} (log_episodes)" in (
        out.replace("\n  ", " "))
    (suggestion,) = [s for s in report["suggestions"]
                     if s["code"] == "eager_compiles" and s["function"] == storm["line"]]
    assert "jax.debug.callback" in suggestion["message"]
    assert "np.asarray" in suggestion["message"]
    assert f"callback_storm.py:{mask_line} (log_episodes): {storm['compiles']} compiles" in (
        result.output.replace("\n  ", " "))
    assert "max_eager_compiles 50" in result.output


@requires_private_hooks
def test_the_numpy_fix_takes_the_storm_away_and_a_high_limit_passes(cli, tmp_path):
    storm_result, storm = cli.json("run", "--max-eager-compiles", "1000", STORM,
                                   tmp_path=tmp_path)
    assert storm_result.exit_code == 0, storm_result.output
    fixed_result, fixed = cli.json("run", "--max-eager-compiles", "5", STORM, "--numpy",
                                   tmp_path=tmp_path)
    assert fixed_result.exit_code == 0, fixed_result.output
    assert fixed["eager_lines"]["lines"] and not any(
        line["storm"] for line in fixed["eager_lines"]["lines"])
    assert fixed["totals"]["compiles"] <= 6 < 100 < storm["totals"]["compiles"]
    assert "eager storm" not in fixed_result.stdout


MASK_LOOP = """
import jax, jax.numpy as jnp

x = jnp.arange(40.0)
for threshold in range(5, 30, 2):
    picked = x[x < threshold]  # mask-line
    print(picked.sum())
"""


@requires_private_hooks
def test_a_mask_outside_any_callback_storms_with_the_fixed_size_advice(cli, program, tmp_path):
    prog = program("masks", MASK_LOOP)
    result, report = cli.json("run", "--max-compiles", "0", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output  # no function of the user's was compiled
    storm = at(report, prog, line_of(prog, "# mask-line"))
    assert storm["storm"] is True and storm["host_callback"] is None
    assert storm["line"].endswith("(<module>)")
    (suggestion,) = [s for s in report["suggestions"] if s["function"] == storm["line"]]
    assert "jnp.where(mask, x, 0)" in suggestion["message"]
    assert "size=N" in suggestion["message"]
    assert "no function of yours was traced or compiled" in result.stdout


EAGER_JAX = """
import jax, jax.numpy as jnp

def loss(x):
    return -jnp.mean(x)  # loss-line

x = jnp.arange(4.0)
y = jnp.ones(4)
print(loss(x))
print(jax.grad(loss)(x))
print(x * y, jnp.add(x, y), jax.vmap(lambda v: -v)(x))  # ops-line
"""


@requires_private_hooks
def test_jax_functions_run_eagerly_or_under_grad_are_never_the_users(cli, program, tmp_path):
    prog = program("eager", EAGER_JAX)
    result, report = cli.json("run", "--max-compiles", "1", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert user_functions(report) == {}
    assert "no function of yours was traced or compiled" in result.stdout
    assert "negative" not in result.stdout.split("\n\n")[0]  # not in the headline
    loss_line = at(report, prog, line_of(prog, "# loss-line"))
    ops = {op["name"]: op for op in loss_line["ops"]}
    assert ops["negative"]["compiles"] == 2 and ops["negative"]["again"] == 0  # grad's jaxpr
    assert loss_line["storm"] is False
    number = line_of(prog, "# ops-line")  # the line, and the vmapped lambda on it
    sites = [line for site, line in lines_by_site(report).items()
             if site.startswith(f"{prog}:{number} ")]
    assert {line["line"].rsplit(" ", 1)[1] for line in sites} == {"(<module>)", "(<lambda>)"}
    assert {op["owner"] for line in sites for op in line["ops"]} == {"jax"}


USER_JITS_JAX = """
import jax, jax.numpy as jnp

negate = jax.jit(jnp.negative)
relu = jax.jit(jax.nn.relu)
for n in (3, 4):
    negate(jnp.ones(n))
    relu(jnp.ones(n))
"""


@requires_private_hooks
def test_the_users_jit_of_a_jax_function_stays_the_users(cli, program, tmp_path):
    prog = program("jits", USER_JITS_JAX)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    mine = user_functions(report)
    assert mine["negative"]["compiles"] == 2 and mine["relu"]["compiles"] == 2


NNX_MODEL = """
from flax import nnx

class Model(nnx.Module):
    def __init__(self, rngs):
        self.first = nnx.Linear(16, 32, rngs=rngs)  # first-layer
        self.second = nnx.Linear(32, 4, rngs=rngs)

model = Model(nnx.Rngs(0))  # model-line
"""


@requires_private_hooks
def test_an_eager_initialisers_compile_seconds_are_at_its_line(cli, program, tmp_path):
    pytest.importorskip("flax.nnx")
    prog = program("model", NNX_MODEL)
    result, report = cli.json("run", "--all", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    first = at(report, prog, line_of(prog, "# first-layer"))
    assert first["compiles"] >= 1 and first["seconds"] > 0
    assert first["line"].endswith("(__init__)") and first["storm"] is False
    owners = {op["owner"] for op in first["ops"]}
    assert owners <= {"jax", "library"}
    table = result.stdout.split("Compiles at your lines")[1]
    assert f"model.py:{line_of(prog, '# first-layer')} (__init__)" in table


@requires_private_hooks
def test_the_budget_key_gates_the_lines_inside_the_functions_it_names(cli, project, tmp_path):
    (project / "storm.py").write_text(STORM.read_text())
    path = budget(project, """
        targets:
          - script: storm.py
            budgets:
              "log_*": {max_eager_compiles: 50}
              rollout_step: {max_compiles: 1}
    """)
    result = cli("check", path)
    assert result.exit_code == 1, result.output
    assert "max_eager_compiles" in result.output
    assert "storm.py:" in result.output and "(log_episodes)" in result.output
    held = budget(project, """
        targets:
          - script: storm.py
            budgets:
              "main": {max_eager_compiles: 50}
    """)
    assert cli("check", held).exit_code == 0  # main's own lines compile a few ops once


@pytest.mark.parametrize("value, problem", [(-1, "max_eager_compiles"), ("many",
                                                                         "max_eager_compiles")])
def test_a_bad_max_eager_compiles_names_the_field(cli, project, value, problem):
    path = budget(project, textwrap.dedent(f"""
        targets:
          - script: prog.py
            budgets:
              step: {{max_eager_compiles: {value}}}
    """))
    result = cli("check", path)
    assert result.exit_code == 2, result.output
    assert problem in result.output and "Traceback" not in result.output


OPTAX_JIT = """
import jax, jax.numpy as jnp, optax

opt = optax.adam(1e-3)
params = {"w": jnp.ones((8, 8))}
state = opt.init(params)
update = jax.jit(opt.update)  # jit-line
grads = {"w": jnp.ones((8, 8))}
for _ in range(2):
    updates, state = update(grads, state, params)
"""


@requires_private_hooks
def test_a_users_jit_of_a_library_function_costs_at_the_users_jit_line(cli, program, tmp_path):
    pytest.importorskip("optax")
    prog = program("opt", OPTAX_JIT)
    result, report = cli.json("run", prog, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (function,) = [f for f in report["compile_cost"]["functions"]
                   if f["function"] == "update_fn"]
    assert [line["location"] for line in function["lines"]] == [
        f"{prog}:{line_of(prog, '# jit-line')}"]
    assert "<no user frame>" not in result.stdout
