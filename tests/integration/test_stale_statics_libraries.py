"""Stale statics with real libraries' modules (issue 47, item 5): what JAX really does with a
Flax Linen module, an NNX module and an Equinox module passed as static arguments, and that
``--count-calls`` warns exactly where JAX ran an executable compiled for other values.

* A Linen module is a dataclass compared and hashed by its fields; changed in place after a
  compile, JAX 0.10.2's cache still holds that same object and finds it equal to itself: the
  old executable runs (the program's result shows it), and the warning names the field. JAX
  0.12.1 looks it up by its new hash and traces again: no warning.
* An NNX module compares by identity: the same, through a plain ``jax.jit`` static. Through
  ``nnx.jit`` the attribute is part of the graph definition, which JAX compares by value: a
  new trace, nothing stale.
* An Equinox module compares all its fields (``tree_equal``), static fields included: an equal
  module is equal in state, so nothing is ever stale.
* Linen modules made anew with other fields are new keys (a new trace), never a warning.

Each script prints what the program computed, so that the test checks JAX's real behaviour
alongside the report.
"""

from __future__ import annotations

import textwrap

import pytest
from jax_support import requires_private_hooks

pytest.importorskip("flax")
pytest.importorskip("equinox")

pytestmark = requires_private_hooks  # stale statics are seen at the traces the hooks record

LINEN_IN_PLACE = """
from functools import partial
import jax, jax.numpy as jnp
import flax.linen as nn

class Net(nn.Module):
    rate: float
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(x) * self.rate

@partial(jax.jit, static_argnames="model")
def step(params, x, model):
    return model.apply(params, x)

x = jnp.ones((2, 3))
model = Net(0.5)
params = model.init(jax.random.key(0), x)
before = float(step(params, x, model).sum())
model.init(jax.random.key(1), x)            # used again, not changed: no warning for this
again = float(step(params, x, model).sum())
object.__setattr__(model, "rate", 2.0)     # changed in place (Linen modules are frozen)
after = float(step(params, x, model).sum())
print(f"RESULT same={before == again} stale={after == before}")
"""

LINEN_NEW_MODULES = """
from functools import partial
import jax, jax.numpy as jnp
import flax.linen as nn

class Net(nn.Module):
    rate: float
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(x) * self.rate

@partial(jax.jit, static_argnames="model")
def step(params, x, model):
    return model.apply(params, x)

x = jnp.ones((2, 3))
params = Net(0.5).init(jax.random.key(0), x)
a = float(step(params, x, Net(0.5)).sum())
b = float(step(params, x, Net(0.5)).sum())  # an equal module: the executable is right
c = float(step(params, x, Net(2.0)).sum())  # another rate: a new key, a new trace
print(f"RESULT same={a == b} stale={c == a}")
"""

NNX = """
from functools import partial
import jax, jax.numpy as jnp
from flax import nnx

class Net(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(3, 3, rngs=rngs)
        self.scale = 0.5
    def __call__(self, x):
        return self.lin(x) * self.scale

@partial(jax.jit, static_argnums=0)
def plain(model, x):
    return model(x)

@nnx.jit
def split(model, x):
    return model(x)

x = jnp.ones((2, 3))
static = Net(nnx.Rngs(0))
before = float(plain(static, x).sum())
static.scale = 2.0                          # an identity-compared static, changed in place
after = float(plain(static, x).sum())
graph = Net(nnx.Rngs(0))
g1 = float(split(graph, x).sum())
graph.scale = 2.0                           # part of nnx.jit's graph definition: a new trace
g2 = float(split(graph, x).sum())
print(f"RESULT stale={after == before} nnx_jit_stale={g2 == g1}")
"""

EQUINOX = """
from functools import partial
import jax, jax.numpy as jnp
import equinox as eqx

class Scale(eqx.Module):
    factor: float
    name: str = eqx.field(static=True)

@partial(jax.jit, static_argnames="mod")
def step(x, mod):
    return x * mod.factor

@eqx.filter_jit
def filtered(mod, x):
    return x * mod.factor

x = jnp.ones(3)
results = [float(step(x, Scale(f, n)).sum()) for f, n in ((2.0, "a"), (2.0, "a"), (3.0, "a"),
                                                        (2.0, "b"))]
results += [float(filtered(Scale(f, "a"), x).sum()) for f in (2.0, 2.0, 3.0)]
print(f"RESULT {results}")
"""


@pytest.fixture
def run(cli, program, tmp_path):
    """Run a script with --count-calls; (its printed RESULT line, {(function, argument): stale
    static})."""

    def go(name: str, source: str) -> tuple[str, dict[tuple[str, str], dict]]:
        result, report = cli.json("run", "--count-calls", program(name, textwrap.dedent(source)),
                                  tmp_path=tmp_path)
        assert result.exit_code == 0, result.output
        (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT")]
        return line, {(s["function"], s["argument"]): s for s in report.get("stale_statics", [])}

    return go


def test_a_linen_module_changed_in_place_is_warned_where_the_old_executable_ran(run):
    line, found = run("linen_in_place", LINEN_IN_PLACE)
    # JAX 0.10.2 runs the program compiled for rate=0.5 (its key holds the same object, which
    # it finds equal to itself); JAX 0.12.1 looks the module up by its new hash and traces again
    assert line in ("RESULT same=True stale=True", "RESULT same=True stale=False")
    if line.endswith("stale=False"):
        assert found == {}  # traced anew: nothing ran stale, nothing is warned
        return
    one = found[("step", "model")]
    assert one["seen"] == "call" and one["type"] == "Net"
    # the re-used module (model.init in between) changed nothing the warning names
    assert [(d["path"], d["compiled"], d["called"]) for d in one["differences"]] == [
        ("model.rate", "0.5", "2.0")]
    assert "changed in place after the compile" in one["compares"]
    assert one["seen_times"] == 1


def test_linen_modules_made_anew_are_compared_by_their_fields(run):
    line, found = run("linen_new", LINEN_NEW_MODULES)
    assert line == "RESULT same=True stale=False"  # rate=2.0 was traced anew
    assert found == {}


def test_an_nnx_module_as_a_jit_static_is_warned_and_nnx_jit_is_not(run):
    line, found = run("nnx_modules", NNX)
    assert line == "RESULT stale=True nnx_jit_stale=False"
    one = found.pop(("plain", "model"))
    assert [(d["path"], d["compiled"], d["called"]) for d in one["differences"]] == [
        ("model.scale", "0.5", "2.0")]
    assert "compares by identity" in one["compares"]
    assert found == {}  # nnx.jit traced the new scale: nothing ran stale


def test_an_equinox_module_equal_in_fields_is_equal_in_state(run):
    line, found = run("equinox_modules", EQUINOX)
    assert line == "RESULT [6.0, 6.0, 9.0, 6.0, 6.0, 6.0, 9.0]"
    assert found == {}
