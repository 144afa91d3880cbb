"""Issue 45, item 5: static values that print alike are told apart in a cause's before -> after
and detail: by the first of their parts that differs (the functions an optax optimizer closes
over, a closure's values, an object's hidden attributes, an array's contents), else as two
objects (``[object #1] -> [object #2]``), never ``X -> X``. Recorded in-process on real JAX
and optax."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax_support import requires_private_hooks

import recompile_cli
from recompile_cli.api.report import gated

pytestmark = requires_private_hooks


@functools.partial(jax.jit, static_argnums=1)
def step(x, tx):
    return x + 1


def changes(rec: Any) -> list[tuple[str | None, str | None, str]]:
    """(before, after, detail) of the static cause of each re-compile of ``step``."""
    report = rec.report.report
    return [(c.before, c.after, c.detail) for e in rec.session.events
            if e.function == "step" for c in report.causes[e.seq]
            if c.code.value == "static_value"]


def record_two(first: Any, second: Any) -> list[tuple[str | None, str | None, str]]:
    with recompile_cli.record() as rec:
        step(jnp.ones(3), first)
        step(jnp.ones(3), second)
    assert rec.report.compiles("step") == 2
    return changes(rec)


def test_two_optax_optimizers_made_alike_are_two_objects():
    optax = pytest.importorskip("optax")
    ((before, after, detail),) = record_two(optax.adam(1e-3), optax.adam(1e-3))
    assert before != after
    assert before.endswith("[object #1]") and after.endswith("[object #2]")
    assert before.startswith("GradientTransformationExtraArgs(")
    assert detail.endswith("their parts are the same: another object (#1 -> #2), made again")


def test_adam_and_sgd_print_alike_and_are_told_apart_by_what_they_close_over():
    optax = pytest.importorskip("optax")
    ((before, after, detail),) = record_two(optax.adam(1e-3), optax.sgd(0.1))
    assert before != after
    # the first part that differs: the function the chain's init closes over first
    assert "[.init.<init_fns>[0]: function scale_by_adam.<locals>.init_fn (optax/" in before
    assert "scale_by_adam" not in after and "[.init.<init_fns>[0]: function " in after
    assert "they differ at .init.<init_fns>[0]: function scale_by_adam" in detail


def test_two_lambdas_with_the_same_text_differ_by_what_they_close_over():
    def make(k):
        return lambda v: v * k

    ((before, after, detail),) = record_two(make(2), make(3))
    line = make.__code__.co_firstlineno + 1
    assert before == f"<lambda> (test_told_apart.py:{line}) [.<k>: int 2]"
    assert after == f"<lambda> (test_told_apart.py:{line}) [.<k>: int 3]"
    assert detail.endswith("they differ at .<k>: int 2 -> int 3")


def scale(x, k):
    return x * k


def test_two_equal_partials_are_two_objects_and_unequal_ones_name_the_argument():
    ((before, after, _),) = record_two(functools.partial(scale, k=2),
                                       functools.partial(scale, k=2))
    assert (before, after) == ("functools.partial(test_told_apart.scale, k=2) [object #1]",
                               "functools.partial(test_told_apart.scale, k=2) [object #2]")
    first = np.zeros(5000, np.float32)
    second = first.copy()
    second[2500] = 1.0  # NumPy prints both as array([0., 0., 0., ..., 0., 0., 0.])
    ((before, after, detail),) = record_two(functools.partial(scale, k=first),
                                            functools.partial(scale, k=second))
    # arrays that print alike: their contents tell them apart
    assert "[.k: ndarray float32[5000] contents sha256 " in before
    assert before != after and "they differ at .k: ndarray float32[5000] contents" in detail


class Opt:
    """Prints the same whatever its attributes (a trimmed repr); compares by identity."""

    def __init__(self, lr: float) -> None:
        self.lr = lr

    def __repr__(self) -> str:
        return "Opt()"


@dataclasses.dataclass(eq=False)
class Config:
    name: str
    rate: float = dataclasses.field(repr=False)


def test_objects_whose_repr_hides_what_differs_are_told_apart_by_it():
    ((before, after, detail),) = record_two(Opt(0.1), Opt(0.2))
    assert (before, after) == ("Opt() [.lr: float 0.1]", "Opt() [.lr: float 0.2]")
    assert detail.endswith("they differ at .lr: float 0.1 -> float 0.2")
    ((before, after, _),) = record_two(Config("a", 0.1), Config("a", 0.2))
    assert (before, after) == ("Config(name='a') [.rate: float 0.1]",
                               "Config(name='a') [.rate: float 0.2]")


def test_the_gate_message_tells_them_apart_too():
    with recompile_cli.record() as rec:
        step(jnp.ones(3), Opt(0.1))
        step(jnp.ones(3), Opt(0.2))
    checked, _ = gated(rec.report, per_function={"step": 1})
    (violation,) = checked.violations
    assert "Opt() [.lr: float 0.1] -> Opt() [.lr: float 0.2]" in violation.message


class Shaped:
    """A user's object with array-like properties: telling it apart must not run them."""

    reads = 0

    def __init__(self, k: int) -> None:
        self.k = k

    @property
    def shape(self) -> tuple[int, ...]:
        Shaped.reads += 1
        return (self.k,)

    @property
    def dtype(self) -> str:
        Shaped.reads += 1
        return "float32"

    def __repr__(self) -> str:
        return "Shaped()"


def test_a_users_shape_property_is_never_run_and_the_attribute_tells_them_apart():
    ((before, after, _),) = record_two(Shaped(1), Shaped(2))
    assert (before, after) == ("Shaped() [.k: int 1]", "Shaped() [.k: int 2]")
    assert Shaped.reads == 0
