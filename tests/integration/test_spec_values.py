"""The argument spec's values built for real (``materialize`` imports JAX): JAX arrays and
scalars next to NumPy arrays and Python values, every dtype and fill, seeds, memory. (Reading and
checking spec files: ``tests/unit/test_spec.py`` and ``tests/unit/test_inputs.py``.)"""

from __future__ import annotations

import tracemalloc

import jax
import numpy as np
import pytest
from builders import write
from jax_support import requires_private_hooks

from recompile_cli.capture.running.loader import resolver
from recompile_cli.inputs.materialize import materialize
from recompile_cli.inputs.spec import (
    DTYPES,
    ArrayKind,
    ArraySpec,
    CallSpec,
    Fill,
    ScalarSpec,
    TupleSpec,
    load_spec,
)


def test_value_forms(tmp_path):
    spec = load_spec(write(tmp_path, """
        calls:
          - args:
              - 2.5
              - {numpy: [3], dtype: int32, fill: arange}
              - {scalar: 2.0, dtype: float32}
              - [1, 2]
              - {tuple: [1, {array: 2}]}
              - {w: {array: [2, 2], fill: ones}}
              - {dict: {array: 1, call: 2}}
              - {call: "numpy:zeros", args: [[2]]}
              - "n=${k}"
            sweep: {k: [7]}
    """))
    args = spec.cases[0].args
    assert args[0] == 2.5
    assert args[2] == ScalarSpec(2.0, "float32")
    assert isinstance(args[4], TupleSpec)
    assert args[6] == {"array": 1, "call": 2}
    assert isinstance(args[7], CallSpec) and args[8] == "n=7"
    values = [materialize(v, resolver()) for v in args]
    assert isinstance(values[1], np.ndarray) and values[1].tolist() == [0, 1, 2]
    assert isinstance(values[2], jax.Array) and not values[2].weak_type
    assert values[2].dtype == np.float32
    assert values[3] == [1, 2] and isinstance(values[4], tuple)
    assert isinstance(values[4][1], jax.Array) and values[4][1].shape == (2,)
    assert values[5]["w"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert values[7].tolist() == [0.0, 0.0]


def test_seeded_fills_are_reproducible(tmp_path):
    spec = load_spec(write(tmp_path, "calls: [{args: [{array: [4], seed: 5}]}]"))
    a = materialize(spec.cases[0].args[0], resolver())
    b = materialize(spec.cases[0].args[0], resolver())
    assert a.tolist() == b.tolist()


# -- materialization ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fill", list(Fill))
def test_every_dtype_and_fill(dtype, fill):
    value = materialize(ArraySpec(ArrayKind.NUMPY, (3, 4), dtype, fill, 7), resolver())
    assert isinstance(value, np.ndarray) and value.shape == (3, 4) and value.dtype.name == dtype
    again = materialize(ArraySpec(ArrayKind.NUMPY, (3, 4), dtype, fill, 7), resolver())
    wide = value.astype(np.complex128)
    assert np.array_equal(wide, again.astype(np.complex128), equal_nan=True)
    if fill == Fill.ONES:
        assert (wide == 1).all()
    if fill == Fill.ZEROS:
        assert not wide.any()


def test_float32_arrays_are_built_without_a_float64_copy():
    spec = ArraySpec(ArrayKind.NUMPY, (1024, 1024), "float32", Fill.NORMAL, 0)  # 4 MiB
    tracemalloc.start()
    try:
        materialize(spec, resolver())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 6 * 1024 ** 2  # a float64 intermediate would take 8 MiB more


def test_zero_sized_arrays():
    value = materialize(ArraySpec(ArrayKind.NUMPY, (0, 5), "bfloat16", Fill.ARANGE, 0), resolver())
    assert value.shape == (0, 5)


FACTORY = """
import itertools
import jax

made = itertools.count()

class Model:
    '''Compares by identity (no __eq__): JAX compiles anew for every new object.'''

    def __init__(self, k):
        self.k, self.number = k, next(made)

def make_model(k=2):
    return Model(k)

def step(model, x):
    return x * model.k
"""


@requires_private_hooks  # the objects are told apart by their equality classes
@pytest.mark.parametrize(("fresh", "models"), [("", 1), (", fresh: true", 6)],
                         ids=["once per entry", "fresh"])
def test_a_factory_is_called_once_per_spec_entry_unless_fresh(cli, program, tmp_path, fresh,
                                                                models):
    """A ``call:`` value is made once per spec entry: its repeats and sweep values get the
    same object (a model compared by identity compiles once), unless ``fresh: true`` asks
    for a new one at every call. Two entries make two."""
    target = program("factory", FACTORY)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"""
jit: {{static_argnums: [0]}}
calls:
  - args: [{{call: "{target}:make_model"{fresh}}}, {{array: ["${{n}}"]}}]
    sweep: {{n: [4, 4, 8]}}
    repeat: 2
  - args: [{{call: "{target}:make_model", kwargs: {{k: 3}}}}, {{array: [4]}}]
""")
    result, report = cli.json("profile", f"{target}:step", "--args", spec, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    # 2 shapes in the first entry, and its model once (or one per call: 6), then entry 2's
    compiles = next(f for f in report["functions"] if f["name"] == "step")["compiles"]
    assert compiles == (3 if models == 1 else 7)
    selves = {e["signature"]["static_classes"]["model"]["number"] for e in report["events"]
              if e["function"] == "step" and e.get("signature")}
    assert len(selves) == models + 1
