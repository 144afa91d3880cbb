"""Static values compared the way JAX compares them, static fields of registered dataclasses
(JAX, flax, equinox, custom nodes) named by field, and a compile that reuses a trace made inside
another jit, on real JAX and the real libraries."""

from __future__ import annotations

import dataclasses
import enum
import functools
import gc
import sys
import weakref
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax_support import requires_private_hooks

import recompile_cli

pytestmark = requires_private_hooks


def causes(rec: Any, name: str) -> list[list[tuple[str, str | None, str | None, str | None]]]:
    """(code, argument, before, after) of every cause of each event of ``name``."""
    report = rec.report.report
    return [[(c.code.value, c.argument, c.before, c.after) for c in report.causes[e.seq]]
            for e in rec.session.events if e.function == name]


def details(rec: Any, name: str) -> list[str]:
    report = rec.report.report
    return [c.detail for e in rec.session.events if e.function == name
            for c in report.causes[e.seq]]


class Model:
    """Prints the same each time; compares by identity (no __eq__ of its own)."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __repr__(self) -> str:
        return f"Model(k={self.k})"

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, x):
        return x * self.k


@dataclasses.dataclass(frozen=True)
class FrozenModel:
    k: int

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, x):
        return x * self.k


# -- 1. static values: type, __hash__, __eq__ -----------------------------------------------------
def test_a_static_self_rebuilt_each_epoch_is_named_with_why():
    with recompile_cli.record() as rec:
        for _ in range(3):
            model = Model(2)
            model.step(jnp.ones(3))
            model.step(jnp.ones(3))
    assert rec.report.compiles("step") == 3
    # printed alike, told apart: the same parts (k=2), so which object each is
    assert causes(rec, "step")[1:] == [
        [("static_value", "self", "Model(k=2) [object #1]", "Model(k=2) [object #2]")],
        [("static_value", "self", "Model(k=2) [object #2]", "Model(k=2) [object #3]")]]
    assert ("static argument self: a new object that prints the same but compares unequal "
            "(Model.__eq__ is identity); their parts are the same: another object (#1 -> #2), "
            "made again") in details(rec, "step")


def test_one_instance_and_value_equality_compile_once():
    with recompile_cli.record() as rec:
        kept = Model(2)
        for _ in range(3):
            kept.step(jnp.ones(3))
            FrozenModel(2).step(jnp.ones(3))  # a new object each time, equal by value
    assert [c[0][0] for c in causes(rec, "step")] == ["first_compile", "first_compile"]


class Tagged:
    """Equal by value, but its text shows the object's address."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tagged) and other.k == self.k

    def __hash__(self) -> int:
        return hash(self.k)

    def __repr__(self) -> str:
        return f"<Tagged {self.k} at {id(self):#x}>"


def test_a_static_that_prints_differently_but_compares_equal_is_not_a_cause():
    f = jax.jit(lambda x, tag: x * tag.k, static_argnames="tag")
    first = Tagged(2)
    with recompile_cli.record() as rec:
        f(jnp.ones(3), tag=first)
        f(jnp.ones(4), tag=Tagged(2))  # equal for JAX: only the shape is new
    assert causes(rec, "<lambda>")[1] == [("shape", "x", "f32[3]", "f32[4]")]


def test_a_static_function_rebuilt_each_call_is_a_new_object():
    f = jax.jit(lambda x, fn: fn(x), static_argnames="fn")
    with recompile_cli.record() as rec:
        for _ in range(2):
            f(jnp.ones(3), fn=lambda v: v + 1)
    (cause,) = causes(rec, "<lambda>")[1]
    # named as the user wrote it, where it is defined: no memory address tells them apart
    line = test_a_static_function_rebuilt_each_call_is_a_new_object.__code__.co_firstlineno + 4
    assert cause == ("static_value", "fn", f"<lambda> (test_static_equality.py:{line}) [object #1]",
                     f"<lambda> (test_static_equality.py:{line}) [object #2]")
    assert ("static argument fn: a new object that prints the same but compares unequal "
            "(function.__eq__ is identity); their parts are the same: another object (#1 -> #2), "
            "made again") in details(rec, "<lambda>")


class Config(NamedTuple):
    lr: float
    steps: int
    obj: Any = None


@pytest.mark.parametrize(("first", "second", "argument", "before", "after"), [
    (Config(0.1, 2), Config(0.1, 3), "cfg.steps", "2", "3"),
    ((0.1, 2), (0.1, 3), "cfg[1]", "2", "3"),
    (Config(0.1, 2, Model(1)), Config(0.1, 2, Model(1)), "cfg.obj", "Model(k=1) [object #1]",
     "Model(k=1) [object #2]"),
])
def test_a_static_container_is_named_by_the_part_that_changed(first, second, argument, before,
                                                              after):
    f = jax.jit(lambda x, cfg: x * cfg[0], static_argnames="cfg")
    with recompile_cli.record() as rec:
        f(jnp.ones(3), cfg=first)
        f(jnp.ones(3), cfg=second)
    assert causes(rec, "<lambda>")[1] == [("static_value", argument, before, after)]


class Mode(enum.StrEnum):
    TRAIN = "train"
    EVAL = "eval"


class Level(enum.IntEnum):
    LOW = 1


class Plain(enum.Enum):
    TRAIN = "train"


def advice(rec: Any, name: str) -> list[str]:
    return [s.message for s in rec.report.report.suggestions if s.function == name]


@pytest.mark.parametrize(("first", "second", "convert"), [
    (Mode.TRAIN, "train", "Mode"), ("train", Mode.TRAIN, "Mode"), (Level.LOW, 1, "Level"),
    (2, np.int64(2), "int"), (np.int64(2), 2, "int"), (np.int32(2), np.int64(2), "np.int32"),
    (1, True, "int"), (True, 1, "bool"), (np.bool_(True), True, "bool"),
    (1.0, 1, "float"), (np.float32(0.5), 0.5, "float"), (Config(0.1, 2), (0.1, 2, None), "tuple"),
], ids=lambda v: type(v).__name__ if not isinstance(v, str) else v)
@pytest.mark.parametrize("by_keyword", [True, False], ids=["keyword", "positional"])
def test_equal_statics_of_different_types_are_a_type_difference(first, second, convert,
                                                                 by_keyword):
    """JAX keys a static argument on its type as well as its value: an Enum member and its
    value, a numpy scalar and a Python number, ``1`` and ``True`` compile apart; the report
    says why, and advises the conversion that gives them one type."""
    def step(x, mode):
        return x * 2

    f = (jax.jit(step, static_argnames="mode") if by_keyword
         else jax.jit(step, static_argnums=1))
    with recompile_cli.record() as rec:
        for value in (first, second, first):
            f(jnp.ones(3), mode=value) if by_keyword else f(jnp.ones(3), value)
    assert rec.report.compiles("step") == 2
    (cause,) = causes(rec, "step")[1]
    assert cause[:2] == ("static_value", "mode")
    assert any(d.startswith("static argument mode: an equal value of another type "
                            f"({type_name(type(first))} -> {type_name(type(second))})")
               for d in details(rec, "step"))
    (said,) = advice(rec, "step")
    assert "equal values of different types" in said and "traced array" not in said
    assert f"e.g. `{convert}(mode)`: 2 compiles -> 1." in said


def type_name(kind: type) -> str:
    return kind.__qualname__


@pytest.mark.parametrize(("first", "second"), [
    (Plain.TRAIN, "train"), (2, 2.5), (np.int64(2), np.int64(3)), ("train", "eval"),
])
def test_unequal_statics_are_new_values_not_types(first, second):
    """A plain Enum member is not equal to its value, and 2 is not 2.5: new values, whatever
    their types."""
    f = jax.jit(lambda x, mode: x * 2, static_argnames="mode")
    with recompile_cli.record() as rec:
        f(jnp.ones(3), mode=first)
        f(jnp.ones(3), mode=second)
    assert rec.report.compiles("<lambda>") == 2
    assert not any("another type" in d for d in details(rec, "<lambda>"))
    assert not any("different types" in a for a in advice(rec, "<lambda>"))


def test_equal_parts_of_different_types_in_a_static_container_compile_once():
    """JAX compares a static tuple with ``==``, element by element: types inside it do not
    matter, and nothing is reported."""
    f = jax.jit(lambda x, cfg: x * 2, static_argnames="cfg")
    with recompile_cli.record() as rec:
        f(jnp.ones(3), cfg=(1, 2))
        f(jnp.ones(3), cfg=(True, np.int64(2)))
    assert rec.report.compiles("<lambda>") == 1


class Weird:
    """A hash that always collides and an __eq__ that raises or answers with an array, when
    recompile-cli compares two of them. JAX's own cache may compare them too (its hash table
    probes an entry of another key now and then, as addresses fall), and then raises to the
    program with or without recompile-cli: to JAX they compare as different objects, so that the
    test checks what is ours, every run."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> Any:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if isinstance(other, Weird) and other is not self and caller.startswith("recompile_cli"):
            if self.mode == "raise":
                raise RuntimeError("no comparing")
            return np.array([True, False])  # bool() of it raises
        return other is self


@pytest.mark.parametrize("mode", ["raise", "array"])
def test_a_raising_or_odd_eq_never_reaches_the_program(mode):
    f = jax.jit(lambda x, w: x + 1, static_argnames="w")
    with recompile_cli.record() as rec:
        f(jnp.ones(3), w=Weird(mode))
        f(jnp.ones(4), w=Weird(mode))  # we compare them (JAX need not: the shapes differ)
    assert rec.session.target_exception is None
    assert rec.report.compiles("<lambda>") == 2
    assert ("shape", "x", "f32[3]", "f32[4]") in causes(rec, "<lambda>")[1]


def test_static_values_are_not_kept_alive_by_the_recording():
    model = Model(3)
    alive = weakref.ref(model)
    with recompile_cli.record() as rec:
        model.step(jnp.ones(2))
    assert rec.report.compiles("step") == 1
    del model
    jax.clear_caches()
    gc.collect()
    assert alive() is None


# -- 2. static fields of pytree nodes -------------------------------------------------------------
@functools.partial(jax.tree_util.register_dataclass, data_fields=["x"],
                   meta_fields=["max_len", "name"])
@dataclasses.dataclass
class Batch:
    x: jax.Array
    max_len: int
    name: str


@dataclasses.dataclass
class Marked:
    x: jax.Array
    n: int = dataclasses.field(default=3, metadata={"static": True})


try:  # fields marked static in their metadata: JAX >= 0.5 (the tests using it need >= 0.9)
    jax.tree_util.register_dataclass(Marked)
except TypeError:
    pass


class Custom:
    def __init__(self, x: jax.Array, aux: dict[str, int]) -> None:
        self.x, self.aux = x, aux


jax.tree_util.register_pytree_node(Custom, lambda c: ((c.x,), c.aux),
                                   lambda aux, children: Custom(children[0], aux))


@jax.jit
def take(batch):
    return jax.tree_util.tree_leaves(batch)[0] * 2


@pytest.mark.parametrize(("first", "second", "argument", "before", "after"), [
    (Batch(jnp.ones(3), 4, "a"), Batch(jnp.ones(3), 8, "a"), "batch.max_len", "4", "8"),
    (Batch(jnp.ones(3), 4, "a"), Batch(jnp.ones(3), 4, "b"), "batch.name", "'a'", "'b'"),
    (Marked(jnp.ones(3), 3), Marked(jnp.ones(3), 5), "batch.n", "3", "5"),
    ({"inner": Batch(jnp.ones(3), 4, "a")}, {"inner": Batch(jnp.ones(3), 6, "a")},
     "batch['inner'].max_len", "4", "6"),
    ([Marked(jnp.ones(3), 1)], [Marked(jnp.ones(3), 2)], "batch[0].n", "1", "2"),
])
def test_a_registered_dataclass_meta_field_is_named(first, second, argument, before, after):
    with recompile_cli.record() as rec:
        take(first)
        take(second)
    assert causes(rec, "take")[1] == [("tree_structure", argument, before, after)]
    assert any(d.startswith(f"static field `{argument.rpartition('.')[2]}` of")
               for d in details(rec, "take"))


class Computed:
    """A custom node whose aux data is made by its flatten function, held by no attribute."""

    def __init__(self, x: jax.Array, aux: dict[str, int]) -> None:
        self.x, self.cfg = x, aux


jax.tree_util.register_pytree_node(Computed, lambda c: ((c.x,), tuple(c.cfg.items())),
                                   lambda aux, children: Computed(children[0], dict(aux)))


def test_the_aux_data_of_a_custom_node_is_named_by_the_attribute_holding_it():
    """Aux data that is an attribute of the node (the same object) is named by it, as the
    user wrote it (``batch.aux``); aux data the flatten function makes is the node's
    ``<aux>`` as a whole."""
    with recompile_cli.record() as rec:
        take(Custom(jnp.ones(3), {"k": 1}))
        take(Custom(jnp.ones(3), {"k": 2}))
        take(Computed(jnp.ones(3), {"k": 1}))
        take(Computed(jnp.ones(3), {"k": 2}))
    named, whole = causes(rec, "take")[1], causes(rec, "take")[3]
    assert named == [("tree_structure", "batch.aux", "{'k': 1}", "{'k': 2}")]
    assert whole == [("tree_structure", "batch.<aux>", "(('k', 1),)", "(('k', 2),)")]
    assert any(d.startswith("static field `aux` of Custom") for d in details(rec, "take"))
    assert any("aux data of the custom pytree node Computed" in d for d in details(rec, "take"))


def test_a_static_field_that_prints_the_same_but_compares_unequal():
    with recompile_cli.record() as rec:
        take(Batch(jnp.ones(3), 4, Model(1)))  # type: ignore[arg-type]
        take(Batch(jnp.ones(3), 4, Model(1)))  # type: ignore[arg-type]
    assert causes(rec, "take")[1] == [("tree_structure", "batch.name", "Model(k=1) [object #1]",
                                       "Model(k=1) [object #2]")]
    assert any("prints the same but compares unequal (Model.__eq__ is identity)" in d
               for d in details(rec, "take"))


def test_flax_train_state_with_a_rebuilt_optimizer_names_tx():
    optax = pytest.importorskip("optax")
    train_state = pytest.importorskip("flax.training.train_state")

    @jax.jit
    def train_step(state):
        return state.params["w"] * 2

    params = {"w": jnp.ones(3)}
    with recompile_cli.record() as rec:
        for _ in range(2):
            state = train_state.TrainState.create(apply_fn=None, params=params,
                                                  tx=optax.adam(1e-3))
            train_step(state)
    ((code, argument, before, after),) = causes(rec, "train_step")[1]
    assert (code, argument) == ("tree_structure", "state.tx")
    assert before.startswith("GradientTransformation") and after.startswith("Gradient")
    assert "params" not in before and "opt_state" not in before  # that field's values only
    assert any(d.startswith("static field `tx` of TrainState") for d in details(rec, "train_step"))


def test_flax_struct_field_with_pytree_node_false():
    struct = pytest.importorskip("flax.struct")

    @struct.dataclass
    class Config:
        w: jax.Array
        act: str = struct.field(pytree_node=False)

    @jax.jit
    def apply(cfg):
        return cfg.w + 1

    with recompile_cli.record() as rec:
        apply(Config(jnp.ones(2), "relu"))
        apply(Config(jnp.ones(2), "gelu"))
    assert causes(rec, "apply")[1] == [("tree_structure", "cfg.act", "'relu'", "'gelu'")]


class _Eqx:
    """equinox Module classes, made when equinox is there."""

    @staticmethod
    def module() -> Any:
        eqx = pytest.importorskip("equinox")

        class Block(eqx.Module):
            w: jax.Array
            act: str = eqx.field(static=True)

        return Block


def test_equinox_static_field_under_jax_jit():
    block = _Eqx.module()

    @jax.jit
    def run(m, x):
        return m.w * x

    with recompile_cli.record() as rec:
        run(block(jnp.ones(3), "relu"), jnp.ones(3))
        run(block(jnp.ones(3), "gelu"), jnp.ones(3))
    assert causes(rec, "run")[1] == [("tree_structure", "m.act", "'relu'", "'gelu'")]


def test_equinox_filter_jit_names_static_fields_and_python_values_by_the_users_paths():
    eqx = pytest.importorskip("equinox")
    block = _Eqx.module()

    @eqx.filter_jit
    def run(m, x, n):
        return m.w * x * n

    m = block(jnp.ones(3), "relu")
    with recompile_cli.record() as rec:
        run(m, jnp.ones(3), 2)
        run(m, jnp.ones(3), 3)  # a Python int: static under filter_jit
        run(block(jnp.ones(3), "gelu"), jnp.ones(3), 3)
        run(block(jnp.ones(3), "gelu"), 2.0, 3)  # an array became a Python float
    assert causes(rec, "run")[1:] == [
        [("static_value", "n", "2", "3")],
        [("tree_structure", "m.act", "'relu'", "'gelu'")],
        [("static_value", "x", "f32[3]", "2.0")],
    ]


# -- 13. a compile that reuses a trace made inside another jit ------------------------------------
def test_a_compile_reusing_a_trace_from_inside_another_jit_compares_with_what_compiled():
    @jax.jit
    def inner(x):
        return x * 2

    @jax.jit
    def outer(x):
        return inner(x) + 1

    with recompile_cli.record() as rec:
        inner(jnp.ones(3))
        outer(jnp.ones(4))
        outer(jnp.ones(5))
        inner(jnp.ones(5))  # JAX reuses the trace made inside outer, and compiles it
    events = [e for e in rec.session.events if e.function == "inner"]
    assert [(e.depth, e.traced, e.compiled) for e in events] == [
        (0, True, True), (1, True, False), (1, True, False), (0, False, True)]
    assert causes(rec, "inner")[3] == [("shape", "x", "f32[3]", "f32[5]")]  # not f32[4]


# -- function values: by their qualified names, at the user's paths --------------------------------
def relu6(x):
    return jnp.minimum(jax.nn.relu(x), 6.0)


class Holder:
    """A custom node whose aux data is its activation function."""

    def __init__(self, act: Any) -> None:
        self.act = act


jax.tree_util.register_pytree_node(Holder, lambda h: ((), h.act), lambda act, _: Holder(act))


class Activations(NamedTuple):
    act: Any


FUNCTIONS = [  # (first, second, their names), of every kind of function value
    (jax.nn.gelu, jax.nn.leaky_relu, "jax.nn.gelu", "jax.nn.leaky_relu"),  # function, jitted
    (jax.nn.relu, jnp.tanh, "jax.nn.relu", "jax.numpy.tanh"),  # custom_jvp, jitted jnp
    (relu6, functools.partial(jax.nn.leaky_relu, negative_slope=0.2),
     "test_static_equality.relu6", "functools.partial(jax.nn.leaky_relu, negative_slope=0.2)"),
]


def _static_act(x, act):
    return act(x)


def _in_config(x, cfg):
    return cfg.act(x)


def _in_aux(x, h):
    return h.act(x)


def _in_partial(x, act):
    return act(x)


@pytest.mark.parametrize(("first", "second", "before", "after"), FUNCTIONS,
                         ids=["function", "custom_jvp", "partial"])
@pytest.mark.parametrize(("where", "argument"), [
    ("static", "act"), ("config", "cfg.act"), ("aux", "h.act"), ("tree_partial", "act.func"),
])
def test_a_function_value_is_shown_by_its_qualified_name(first, second, before, after, where,
                                                         argument):
    """A function prints as its public qualified name, never with a memory address, at the
    path the user wrote: a static argument, a field of a static config, the attribute of a
    custom node that holds it, a ``jax.tree_util.Partial``'s function."""
    if where == "static":
        f = jax.jit(_static_act, static_argnames="act")
        calls = [lambda fn: f(jnp.ones(3), act=fn)]
    elif where == "config":
        f = jax.jit(_in_config, static_argnames="cfg")
        calls = [lambda fn: f(jnp.ones(3), cfg=Activations(fn))]
    elif where == "aux":
        f = jax.jit(_in_aux)
        calls = [lambda fn: f(jnp.ones(3), Holder(fn))]
    else:
        f = jax.jit(_in_partial)
        calls = [lambda fn: f(jnp.ones(3), jax.tree_util.Partial(fn))]
    with recompile_cli.record() as rec:
        for fn in (first, second):
            calls[0](fn)
    name = f.__wrapped__.__name__
    (cause,) = causes(rec, name)[1]
    if where == "tree_partial" and "partial" in after:  # Partial wraps a partial in a shim
        after = "_HashableCallableShim(functools.partial(leaky_relu, negative_slope=0.2))"
    assert cause[1:] == (argument, before, after)
    shown = " ".join([*map(str, cause), *details(rec, name), *advice(rec, name)])
    assert "0x" not in shown and "<aux>" not in shown
    # different functions are different programs: nothing to fix, nothing "traced"
    assert not any("traced array" in a or "new object" in a for a in advice(rec, name))


def test_two_runs_report_function_values_the_same(cli, program, tmp_path):
    """Two runs of one program report the same texts: no memory address in any of them."""
    script = program("acts", """
        import functools
        import jax, jax.numpy as jnp

        @functools.partial(jax.jit, static_argnames="act")
        def layer(x, act):
            return act(x)

        for act in (jax.nn.gelu, jax.nn.leaky_relu, lambda v: v * 2):
            layer(jnp.ones(3), act=act)
    """)
    texts = []
    for run in ("one", "two"):
        result, report = cli.json("run", script, tmp_path=tmp_path / run)
        assert result.exit_code == 0, result.output
        texts.append([(row["argument"], row["values"]) for row in report["cause_table"]])
    assert texts[0] == texts[1]
    assert texts[0] == [("act", "jax.nn.gelu -> jax.nn.leaky_relu -> <lambda> (acts.py:9)")]


def test_types_functions_and_mode_switches_reach_report_through_the_events_log(
        cli, program, tmp_path):
    """What the recording keeps of statics (classes equal but of another type, the conversion,
    function values, a library's mode switch) is in the events log: ``report`` of the log
    explains and advises exactly as the run did."""
    script = program("log", """
        import functools
        import equinox as eqx, jax, jax.numpy as jnp, numpy as np

        @functools.partial(jax.jit, static_argnames=("n", "act"))
        def step(x, n, act):
            return act(x) * n

        @eqx.filter_jit
        def drop(layer, x, key):
            return layer(x, key=key)

        step(jnp.ones(3), n=2, act=jax.nn.gelu)
        step(jnp.ones(3), n=np.int64(2), act=jax.nn.gelu)
        step(jnp.ones(3), n=2, act=jax.nn.leaky_relu)
        layer, key = eqx.nn.Dropout(0.5), jax.random.key(0)
        drop(layer, jnp.ones(3), key)
        drop(eqx.nn.inference_mode(layer), jnp.ones(3), key)
    """)
    log = tmp_path / "events.jsonl"
    result, ran = cli.json("run", "--events-log", str(log), script, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    again, replayed = cli.json("report", log, tmp_path=tmp_path)
    assert again.exit_code == 0, again.output
    for key in ("cause_table", "suggestions"):
        assert replayed[key] == ran[key], key
    said = " ".join(s["message"] for s in ran["suggestions"])
    assert "e.g. `int(n)`" in said and "is the mode switch of `Dropout`" in said
    assert any(row["values"] == "jax.nn.gelu -> jax.nn.leaky_relu" for row in ran["cause_table"])
