"""Compiles without a re-trace and values past any display cut, on real JAX: only compiles
that happened are events, lowering causes are read against the closest earlier key, a compile
is paired with the trace that made its jaxpr, and static values are compared in full."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import user_events, user_functions
from jax_support import requires_private_hooks


@pytest.fixture
def record(cli, program, tmp_path):
    def run(source: str, *options: str):
        script = program("prog", source)
        result, report = cli.json("run", *options, script, tmp_path=tmp_path)
        return result, report

    return run


@requires_private_hooks
def test_static_dataclass_changed_past_the_display_cut_is_a_static_value(record):
    _, report = record("""
        import dataclasses, functools
        import jax, jax.numpy as jnp

        @dataclasses.dataclass(frozen=True)
        class Config:
            description: str = "a long description of this experiment " * 5
            lr: float = 0.1

        @functools.partial(jax.jit, static_argnums=1)
        def f(x, cfg):
            return x * cfg.lr

        f(jnp.ones(3), Config())
        f(jnp.ones(3), Config(lr=0.2))
    """)
    cause = user_events(report, "f")[1]["cause"]
    assert (cause["code"], cause["argument"]) == ("static_value", "cfg")
    assert "field `lr` changed" in cause["detail"]
    assert cause["before"].endswith("lr=0.1)") and cause["after"].endswith("lr=0.2)")
    assert len(cause["before"]) <= 200


@requires_private_hooks
def test_equivalent_sharding_that_compiles_nothing_is_no_event(tmp_path):
    script = tmp_path / "shard.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "from jax.sharding import NamedSharding, PartitionSpec as P\n"
        "mesh = jax.make_mesh((4,), ('d',))\n"
        "@jax.jit\n"
        "def q(a): return a * 2\n"
        "x = jnp.ones((8, 8))\n"
        "q(jax.device_put(x, NamedSharding(mesh, P())))\n"
        "q(jax.device_put(x, NamedSharding(mesh, P(None, None))))\n")
    out = tmp_path / "report.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=4")
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--fail-on",
                           "sharding", "--output", str(out), str(script)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert [e["cause"]["code"] for e in user_events(report, "q")] == ["first_compile"]
    assert user_functions(report)["q"]["compiles"] == 1


@requires_private_hooks
def test_placement_change_is_read_against_the_closest_earlier_lowering(record):
    for _ in range(3):  # the answer must not depend on hash order
        _, report = record("""
            import jax, jax.numpy as jnp
            def f(x):
                return x * 2
            plain, donating = jax.jit(f), jax.jit(f, donate_argnums=0)
            plain(jnp.ones(8))
            donating(jnp.ones(8))
            plain(jax.device_put(jnp.ones(8), jax.devices()[0]))
        """)
        causes = [e["cause"] for e in user_events(report, "f")]
        assert [c["code"] for c in causes] == ["first_compile", "sharding", "sharding"]
        assert "donate" in causes[1]["detail"]
        assert "placement" in causes[2]["detail"] and "donate" not in causes[2]["detail"]


@pytest.mark.parametrize("first", ["jax.eval_shape(f, x)", "f.trace(x)"])
@requires_private_hooks
def test_first_compile_after_an_earlier_trace_is_first_compile(record, first):
    _, report = record(f"""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x):
            return x + 1
        x = jnp.ones(3)
        {first}
        jnp.sin(x)
        f(x)
    """)
    assert [e["cause"]["code"] for e in user_events(report, "f")] == [
        "first_compile", "first_compile"]
    assert user_functions(report)["f"]["compiles"] == 1
    assert not [row for row in report["cause_table"] if row["function"] == "f"]


@requires_private_hooks
def test_first_top_level_compile_after_a_nested_trace_is_not_a_recompile(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def inner(x):
            return x * 2
        @jax.jit
        def outer(x):
            return inner(x[:2]) + 1
        outer(jnp.ones(3))
        inner(jnp.ones(3))
    """)
    top = [e for e in user_events(report, "inner") if e["depth"] == 0]
    assert len(top) == 1 and top[0]["compiled"]
    assert user_functions(report)["inner"]["compiles"] == 1
    assert not [s for s in report["suggestions"] if s["function"] == "inner"]


AUTO_MESH = """
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
auto = jax.make_mesh((2,), ("data",), axis_types=(AxisType.Auto,))
explicit = jax.make_mesh((2,), ("data",), axis_types=(AxisType.Explicit,))
@jax.jit
def step(x, batch):
    return x * 2, batch["y"] + 1
x = jnp.ones((4, 4))
def put(mesh, spec):
    return jax.device_put(x, NamedSharding(mesh, spec))
step(x, {"y": x})
step(put(auto, P("data")), {"y": put(auto, P(None, "data"))})
step(put(explicit, P("data")), {"y": put(explicit, P("data"))})
"""


@requires_private_hooks
def test_placements_are_the_arrays_own_on_an_auto_mesh(tmp_path):
    """On a mesh of Auto axes an array's abstract value has the type-level spec P(None,
    None) whatever its placement: the report shows the array's own (``P('data',)``), in
    every container, marked ``auto``; on an Explicit mesh the type-level spec is the
    placement."""
    script = tmp_path / "auto_mesh.py"
    script.write_text(AUTO_MESH)
    out = tmp_path / "report.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--output", str(out),
                           str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = user_events(json.loads(out.read_text()), "step")
    leaves = [{path: leaf.get("sharding") for path, leaf in e["signature"]["leaves"].items()}
              for e in events]
    assert leaves == [{"x": None, "batch['y']": None},
                      {"x": "P('data',), auto", "batch['y']": "P(None, 'data'), auto"},
                      {"x": "P('data', None)", "batch['y']": "P('data', None)"}]
    causes = [(e["cause"]["code"], e["cause"]["argument"], e["cause"]["before"],
               e["cause"]["after"]) for e in events[1:]]
    assert causes == [("sharding", "x", "f32[4,4]", "f32[4,4](P('data',), auto)"),
                      ("sharding", "x", "f32[4,4](P('data',), auto)", "f32[4,4](P('data', None))")]
    assert "P(None, None)" not in proc.stdout
