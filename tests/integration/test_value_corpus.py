"""Whatever JAX carries, the recording carries: each kind of leaf and static value goes through
the real writer (``EventLog``, which decodes each record with the reader's typed decoder before
writing it), the supervisor's stream reader and the report, and the run is recorded whole: exit
0, the user's compiles counted, no record refused or left out. The kinds: symbolic dimensions
(``jax.export``), typed PRNG keys, ``float0``, int4 and float8 (where JAX has them), tokens,
``ShapeDtypeStruct`` with a sharding, ``NamedSharding`` over several CPU devices, NumPy scalars,
Python ints beyond 64 bits, NaN, bytes, enums, frozensets, objects whose repr raises, hangs or
is megabytes long, recursive containers, and a custom pytree node whose flatten raises."""

from __future__ import annotations

import jax.numpy as jnp
import pytest
from helpers import user_events
from jax_support import requires_private_hooks

pytestmark = requires_private_hooks


def _recorded(cli, program, tmp_path, name: str, source: str) -> dict:
    """Run ``source``; the run must be whole: exit 0, nothing refused, left out or damaged."""
    result, report = cli.json("run", program(name, source), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report is not None and report["target_exception"] is None, result.output
    for warning in report["warnings"]:
        assert "schema" not in warning and "internal recorder error" not in warning, warning
    assert "damaged" not in result.output
    table = cli("report", tmp_path / "report-0.json")  # the report reads it back and renders
    assert table.exit_code == 0, table.output
    return report


SYMBOLIC = """
import jax, jax.numpy as jnp
from jax import export

def f(x):
    return jnp.sin(x) * 2

jf = jax.jit(f)
b, = export.symbolic_shape("b")
exported = export.export(jf)(jax.ShapeDtypeStruct((b, 8), jnp.float32))
assert exported.call(jnp.ones((16, 8))).shape == (16, 8)
jf(jnp.ones((16, 8)))
"""


def test_symbolic_dimensions_are_recorded_by_their_expression(cli, program, tmp_path):
    report = _recorded(cli, program, tmp_path, "symbolic", SYMBOLIC)
    exported, concrete = user_events(report, "f")
    assert exported["signature"]["leaves"]["x"]["symbolic"] == [[0, "b"]]
    assert concrete["compiled"] and "symbolic" not in concrete["signature"]["leaves"]["x"]
    cause = concrete["cause"]
    assert (cause["code"], cause["before"], cause["after"]) == ("shape", "f32[b,8]", "f32[16,8]")
    assert cause["detail"].endswith("dim 0 b -> 16"), cause["detail"]
    problem = exported["replay"]["arguments"][0]["problem"]
    assert "symbolic dimension" in problem  # a plan has no size to compile it for
    text = " ".join(s["message"] for s in report["suggestions"]) + " ".join(
        v["message"] for v in report.get("violations", []))
    assert "-1" not in text  # a symbolic dimension is never a size to pad to
    gated = cli("run", "--fail-on", "shape", program("symbolic", SYMBOLIC))
    assert gated.exit_code == 1 and "f32[b,8] -> f32[16,8]" in gated.output


LEAVES = """
import jax, jax.numpy as jnp, numpy as np

@jax.jit
def f(x):
    return x

f(jax.random.key(0))
f(jax.random.split(jax.random.key(1), 4))
f(np.zeros((3,), dtype=jax.dtypes.float0))
for name in NARROW:
    f(jnp.ones((4,), dtype=getattr(jnp, name)))

@jax.jit
def g(token, x):
    return token, x + 1

g(jax.lax.create_token(), jnp.ones(2))
placed = jax.sharding.SingleDeviceSharding(jax.devices()[0])
jax.jit(lambda y: y * 2).lower(jax.ShapeDtypeStruct((8,), jnp.float32, sharding=placed)).compile()
"""
NARROW = [name for name in ("int4", "uint4", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")
          if hasattr(jnp, name)]


def test_unusual_leaves(cli, program, tmp_path):
    report = _recorded(cli, program, tmp_path, "leaves", f"NARROW = {NARROW!r}\n{LEAVES}")
    dtypes = [(e["signature"]["leaves"]["x"]["dtype"], e["signature"]["leaves"]["x"]["shape"])
              for e in user_events(report, "f")]
    assert dtypes == [("key<fry>", []), ("key<fry>", [4]), ("float0", [3]),
                      *((name, [4]) for name in NARROW)]
    token, = user_events(report, "g")
    assert token["signature"]["leaves"]["token"]["dtype"] == "AbstractToken"
    lowered, = user_events(report, "<lambda>")
    assert lowered["compiled"] and lowered["signature"]["leaves"]["y"]["shape"] == [8]


MESH = """
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((4,), ("data",))
spread = NamedSharding(mesh, P("data"))

@jax.jit
def f(x):
    return x * 2

f(jax.device_put(jnp.ones((8, 2)), spread))
jax.jit(lambda y: y + 1).lower(jax.ShapeDtypeStruct((8, 2), jnp.float32, sharding=spread)).compile()
"""


@pytest.mark.measured_process
def test_named_sharding_over_several_cpu_devices(cli, program, tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    report = _recorded(cli, program, tmp_path, "mesh", MESH)
    assert [e["compiled"] for e in user_events(report, "f")] == [True]
    lowered, = user_events(report, "<lambda>")
    assert lowered["compiled"] and lowered["signature"]["leaves"]["y"]["shape"] == [8, 2]


STATICS = """
import enum, functools, time
import jax, jax.numpy as jnp, numpy as np

class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2

class Same:  # equal and of one hash: only its repr is unusual
    def __hash__(self):
        return hash(type(self).__name__)

    def __eq__(self, other):
        return type(other) is type(self)

class RaisingRepr(Same):
    def __repr__(self):
        raise RuntimeError("no repr")

class LongRepr(Same):
    def __repr__(self):
        return "x" * 3_000_000

class HangingRepr(Same):
    def __repr__(self):
        time.sleep(600)
        return "never"

class Recursive(Same):
    def __init__(self):
        self.items = [1]
        self.items.append(self.items)

    def __repr__(self):
        return f"Recursive({self.items!r})"

HANGING = HangingRepr()  # held by the module: replays refer to it by name

@functools.partial(jax.jit, static_argnums=1)
def f(x, s):
    return x * 2

VALUES = [np.int64(3), np.float32(2.5), np.bool_(True), 2**100, -(2**70), float("nan"),
          b"abc\\xff", Mode.TRAIN, Mode.EVAL, frozenset({1, 2}), RaisingRepr(), LongRepr(),
          HANGING, Recursive(), (1, (2, (3,)))]
for value in VALUES:
    f(jnp.ones(3), value)
"""


def test_unusual_statics(cli, program, tmp_path):
    report = _recorded(cli, program, tmp_path, "statics", STATICS)
    statics = [e["signature"]["static"]["s"] for e in user_events(report, "f")]
    assert len(statics) == 15 and all(e["compiled"] for e in user_events(report, "f"))
    assert statics[:10] == ["np.int64(3)", "np.float32(2.5)", "np.True_", str(2**100),
                            str(-(2**70)), "nan", "b'abc\\xff'", "<Mode.TRAIN: 1>",
                            "<Mode.EVAL: 2>", "frozenset({1, 2})"]
    assert statics[10] == "<RaisingRepr>"
    assert len(statics[11]) < 5000 and "3000000 chars, sha256" in statics[11]
    assert statics[12] == "<HangingRepr: its repr did not return in 1 s>"
    assert statics[13] == "Recursive([1, [...]])"


FLATTEN = """
import jax, jax.numpy as jnp

class Node:
    def __init__(self, value):
        self.value = value

def flatten(node):
    raise ValueError("this node cannot be flattened")

jax.tree_util.register_pytree_node(Node, flatten, lambda aux, children: Node(*children))

@jax.jit
def f(x):
    return x

f(jnp.ones(2))
try:
    f(Node(jnp.ones(2)))
except ValueError:
    pass
f(jnp.ones(3))
"""


def test_a_custom_node_whose_flatten_raises(cli, program, tmp_path):
    report = _recorded(cli, program, tmp_path, "flatten", FLATTEN)
    assert [e["signature"]["leaves"]["x"]["shape"] for e in user_events(report, "f")] == [
        [2], [3]]
