"""The suggestion rules of ``analysis/advice/rules.py``: for every rule a case where it fires (the
message a user reads and the predicted compiles) and a case where it must stay silent, on
hand-built sessions. No advice is better than wrong advice."""

from __future__ import annotations

import re

import pytest
from builders import event, leaf, numbered, sig
from msgspec.structs import replace

from recompile_cli.analysis.advice import rules
from recompile_cli.analysis.advice.suggest import Suggestion, gather, suggest
from recompile_cli.analysis.causes.explain import explain_events
from recompile_cli.session.model import Change, Event, Signature, StaticClass, TraceError
from recompile_cli.session.structures import Note, node_map_text, with_note

X3 = leaf("f32", 3)
KEY = "f@prog.py:3"  # the function key of ``f`` in the builders' events


def suggestions(*items, base=None, calls=None) -> list[Suggestion]:
    events = numbered(*items)
    return list(suggest(events, explain_events(events, base or {}), calls))


def only(*items, base=None, calls=None) -> Suggestion:
    (found,) = suggestions(*items, base=base, calls=calls)
    return found


def rule_names(*items, base=None, calls=None) -> list[str | None]:
    """The rule chosen for each group of advice (None: no rule applies)."""
    events = numbered(*items)
    _, groups = gather(events, explain_events(events, base or {}), calls)
    return [None if (r := rules.rule_for(g)) is None else r.name for g in groups]


def counted(*sigs: Signature, at: list[int]) -> list[Event]:
    """Traces of ``f`` during the calls ``at`` (0-based) of a counted run."""
    return [replace(event(s), call_index=i, call_of=KEY) for s, i in zip(sigs, at, strict=True)]


def static(text: str, number: int, identity: bool = False, **leaves) -> Signature:
    return replace(sig(x=X3, static={"m": text}, **leaves),
                   static_classes={"m": StaticClass(number, "Model", identity)})


def typed(text: str, number: int, kind: str, equal_to: tuple[int, ...] = (),
          convert: str = "") -> Signature:
    """A static ``mode`` of type ``kind``, equal to the classes ``equal_to`` but for type."""
    return replace(sig(x=X3, static={"mode": text}), static_classes={
        "mode": StaticClass(number, kind, False, equal_to, convert)})


FIELD = Note("field")


def field_map(value: str, note: Note = FIELD) -> dict[str, str]:
    """The stored structure of argument ``b``, a ``Batch`` with a static field ``max_len``."""
    return {"b": node_map_text([("", "Batch"), (".max_len", with_note(value, note))],
                               f"CustomNode(Batch[({value},)], [*])")}


def with_field(value: str, note: Note = FIELD) -> Signature:
    return sig(structure=field_map(value, note), paths={"b.tokens": X3})


def nnx_flag(value: str) -> Signature:
    structure = node_map_text([("", "Model"), (".bn.use_running_average", value)], "Model")
    return sig(structure={"model": structure}, paths={"model.bn.scale": X3})


LAMBDA = "<function <lambda> at 0x7f00000000{}>"

# Every rule: events where it fires, and events where it must not. -----------------------------
FIRES: dict[str, list] = {
    "prng_key_type": [sig(key=leaf("key<fry>")), sig(key=leaf("uint32", 2))],
    "pad_dimension": [sig(x=leaf("f32", n)) for n in (4, 8)],
    "change_rank": [sig(x=leaf("f32", 4)), sig(x=leaf("f32", 4, 2))],
    "cast_dtype": [sig(x=leaf("f32", 4)), sig(x=leaf("i32", 4))],
    "weak_type": [sig(s=leaf("f32", weak=True)), sig(s=leaf("f32"))],
    "library_mode": [nnx_flag(f"{v}\tattr mode") for v in ("False", "True")],
    "static_type": [typed("2", 1, "int"), typed("np.int64(2)", 2, "int64", (1,), "int")],
    "static_function": [sig(x=X3, static={"fn": LAMBDA.format(n)}) for n in (10, 20, 30)],
    "static_identity": [static("Model(n=2)", n, identity=True) for n in (1, 2, 3)],
    "static_object": [sig(x=X3, static={"c": f"<Cfg object at 0x7f000000{n}0>"})
                      for n in (1, 2)],
    "static_number": [sig(x=X3, static={"n": str(i)}) for i in range(4)],
    "field_object": [with_field(f"Tx(init=<function f at 0x7f000000{n}0>)") for n in (1, 2)],
    "mode_flag": [nnx_flag("False"), nnx_flag("True")],
    "field_value": [with_field("8"), with_field("16")],
    "none_or_array": [sig(structure={"d": "{'m': None, 'x': *}"}, paths={"d['x']": X3}),
                      sig(structure={"d": "{'m': *, 'x': *}"},
                          paths={"d['m']": X3, "d['x']": X3})],
    "containers": [sig(structure={"p": "[*]"}, paths={"p[0]": X3}),
                   sig(structure={"p": "[*, *]"}, paths={"p[0]": X3, "p[1]": X3})],
    "same_passing": [sig(x=X3, y=X3), sig(x=X3, y=X3, keywords=("y",))],
    "new_function": [sig(x=X3, fid=1), sig(x=X3, fid=2)],
    "tracing_context": [sig(x=X3), sig(x=X3, context={"jax_enable_x64": "True"})],
    "placement": [sig(x=X3), event(traced=False, lowering_changes=(
        Change("in_shardings", "UnspecifiedValue", "SingleDeviceSharding", argument="x"),))],
    # jax.grad of a jitted function outside jit: its derived program compiled on its own
    "derived": [sig(x=X3), event(traced=False, compiled=True, lowering_changes=None)],
}

SILENT: dict[str, list] = {
    # raw keys split into a batch: a numeric array, but no typed key
    "prng_key_type": [sig(key=leaf("uint32", 2)), sig(key=leaf("uint32", 4, 2))],
    # a batch of typed keys: not a numeric array, nothing to pad
    "pad_dimension": [sig(keys=leaf("key<fry>", 4)), sig(keys=leaf("key<fry>", 8))],
    "change_rank": [sig(keys=leaf("key<fry>")), sig(keys=leaf("key<fry>", 2))],
    # two key implementations: the key rule, not a cast
    "cast_dtype": [sig(key=leaf("key<fry>")), sig(key=leaf("key<rbg>"))],
    # a weak-type change inside another jit is the parent's consequence
    "weak_type": [sig(y=X3), event(sig(s=leaf("f32", weak=True)), function="g", depth=1),
                  event(sig(s=leaf("f32")), function="g", depth=1)],
    # a bool attribute that the library does not branch on (no mode note): a plain flag
    "library_mode": [nnx_flag(f"{v}\tattr") for v in ("False", "True")],
    # 2 and 3: unequal values, whatever their types
    "static_type": [typed("2", 1, "int"), typed("np.int64(3)", 2, "int64")],
    # two different functions (compared by identity), each compiled once: expected
    "static_function": [static("<function relu at 0x7f0000000010>", 1, identity=True),
                        static("<function gelu at 0x7f0000000020>", 2, identity=True)],
    # printing the same but unequal through a value __eq__/__hash__: no sure fix
    "static_identity": [static("Model(n=2)", n) for n in (1, 2)],
    # different strings: expected, no fix to offer
    "static_object": [sig(x=X3, static={"mode": "'train'"}), sig(x=X3, static={"mode": "'eval'"})],
    "static_number": [sig(x=X3, static={"shape": "(2, 3)"}), sig(x=X3, static={"shape": "(4,)"})],
    "field_object": [with_field("8"), with_field("16")],
    "mode_flag": [with_field("8"), with_field("16")],
    # a list that grows inside a node map is a container, not a static value
    "field_value": [sig(structure={"s": node_map_text([("", "State"), (".xs", "list[2]")], "S")},
                        paths={"s.xs[0]": X3, "s.xs[1]": X3}),
                    sig(structure={"s": node_map_text([("", "State"), (".xs", "list[3]")], "S")},
                        paths={"s.xs[0]": X3, "s.xs[1]": X3, "s.xs[2]": X3})],
    "none_or_array": [sig(structure={"d": "{'x': *}"}, paths={"d['x']": X3}),
                      sig(structure={"d": "{'x': *, 'y': *}"},
                          paths={"d['x']": X3, "d['y']": X3})],
    # a static field is no container
    "containers": [with_field("8"), with_field("16")],
    # an argument passed in one call and left to its default in the other: no mistake to fix
    "same_passing": [sig(x=X3), sig(x=X3, y=X3)],
    # a library's or JAX's new function objects are not the user's to fix
    "new_function": [event(sig(x=X3, fid=1), owner="library"),
                     event(sig(x=X3, fid=2), owner="library")],
    "tracing_context": [event(sig(x=X3), owner="jax"),
                        event(sig(x=X3, context={"jax_enable_x64": "True"}), owner="jax")],
    "placement": [sig(x=X3), event(sig(x=X3), depth=1), event(traced=False, depth=1,
                                                              lowering_changes=())],
    # JAX's own functions get no advice; nor does a nested one (its caller's compile)
    "derived": [event(sig(x=X3), owner="jax"),
                event(traced=False, compiled=True, lowering_changes=None, owner="jax")],
}


def test_every_rule_has_a_case_where_it_fires_and_one_where_it_stays_silent():
    names = [r.name for r in rules.RULES]
    assert len(set(names)) == len(names)
    assert set(FIRES) == set(SILENT) == set(names)
    assert all(r.when and r.codes for r in rules.RULES)


@pytest.mark.parametrize("name", list(FIRES))
def test_rule_fires(name):
    assert rule_names(*FIRES[name]) == [name]


@pytest.mark.parametrize("name", list(SILENT))
def test_rule_stays_silent(name):
    assert name not in rule_names(*SILENT[name])


@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.name)
def test_a_rule_predicts_compiles_exactly_when_its_table_entry_says_so(rule):
    base = {"jax_enable_x64": "False"} if rule.name == "tracing_context" else None
    (s,) = suggestions(*FIRES[rule.name], base=base)
    assert (s.predicted_compiles is not None) == bool(rule.predicts)
    if s.predicted_compiles is not None:
        assert f"compiles -> {s.predicted_compiles}" in s.message


# -- padding ------------------------------------------------------------------------------------
def test_buckets_when_a_dimension_takes_three_or_more_sizes():
    s = only(*[sig(tokens=leaf("f32", n)) for n in range(1, 41)])
    assert (s.function, s.code, s.predicted_compiles) == ("f", "shape", 7)
    assert s.message == (
        "`tokens` dim 0 took 40 values (1..40): 40 compiles -> 7 with power-of-two buckets of "
        "`tokens` dim 0 (1, 2, 4, 8, 16, 32, 40: the last one the largest size seen; pads 22% "
        "more elements over one call of each size), or 5 with multiples of 8 (pads 17% more elements over one call of each size). "
        "Pad along that dimension to the bucket size and mask the padding.")


def test_buckets_name_every_dim_of_the_same_axis():
    s = only(*[sig(x=leaf("f32", n, n)) for n in (2, 3, 5)])
    # power-of-two buckets (2, 4, 8) would not reduce the 3 compiles: never suggested;
    # padding 2x2 and 3x3 to 5x5 adds 21 + 16 elements to 4 + 9 + 25
    assert s.message == ("`x` dims 0, 1 took 3 values (2..5): pad to 5 (and mask) so that one "
                         "shape is reused: 3 compiles -> 1 (pads 97% more elements over one "
                         "call of each size).")
    assert s.predicted_compiles == 1


def test_buckets_never_pad_far_past_the_sizes_seen():
    s = only(*[sig(x=leaf("f32", n)) for n in (100, 120, 128)])
    # power-of-two buckets (128) would give the one shape that padding to 128 gives: named so
    assert s.message == (
        "`x` dim 0 took 3 values (100..128): 3 compiles -> 1 with one shape, padded to 128 "
        "(pads 10% more elements over one call of each size), or 2 with multiples of 16 (pads "
        "5.7% more elements over one call of each size). Pad along that dimension to the "
        "bucket size and mask the padding.")


def test_one_shape_when_a_dimension_takes_two_sizes():
    s = only(*[sig(x=leaf("f32", n)) for n in (4, 8, 4, 8)])
    assert (s.code, s.predicted_compiles) == ("shape", 1)
    assert s.message == ("`x` dim 0 took the values 4, 8: pad to 8 (and mask) so that one "
                         "shape is reused: 2 compiles -> 1 (pads 33% more elements over one "
                         "call of each size).")


def test_padding_is_weighted_by_the_calls_of_each_size():
    # 63 counted calls of 128, then one of 64: padding it adds 64 elements to 63 * 128 + 64
    s = only(*counted(sig(x=leaf("f32", 128, 4)), sig(x=leaf("f32", 64, 4)), at=[0, 63]),
             calls={KEY: 64})
    assert s.message == (
        "the last batch is smaller: `x` dim 0 is 128, then 64 once at the end (call 64, after "
        "63 calls of 128). Pad the last batch to 128 (and mask it) or drop it (drop_last): 2 "
        "compiles -> 1 (padding computes 0.8% more elements over the 64 calls).")


def test_padding_cost_is_a_range_where_cached_calls_could_have_either_size():
    # calls 0, 1: 100 (only one size compiled yet); call 2: 150; call 3: 100 or 150
    s = only(*counted(sig(x=leaf("f32", 100, 100)), sig(x=leaf("f32", 150, 150)), at=[0, 2]),
             calls={KEY: 4})
    assert s.message.endswith("2 compiles -> 1 (pads 38%-71% more elements over the 4 calls).")


def test_padding_whose_overhead_is_absurd_is_not_advised():
    # 99 counted calls of size 1, then one of 1000: padding to 1000 multiplies the work ~500x
    assert suggestions(*counted(sig(x=leaf("f32", 1)), sig(x=leaf("f32", 1000)), at=[0, 99]),
                       calls={KEY: 100}) == []
    # the same sizes, 99 calls of 1000 and then one of 1: a last batch, cheap to pad
    s = only(*counted(sig(x=leaf("f32", 1000)), sig(x=leaf("f32", 1)), at=[0, 99]),
             calls={KEY: 100})
    assert "padding computes 1.0% more elements over the 100 calls" in s.message


def test_two_datasets_of_different_sizes_are_not_a_last_batch():
    s = only(event(sig(x=leaf("f32", 8000, 4)), call_site="eval.py:20 (<module>)"),
             event(sig(x=leaf("f32", 2000, 4)), call_site="eval.py:21 (<module>)"))
    assert s.message.startswith("two datasets of different sizes: `x` dim 0 is 8000, then 2000")
    assert "Pad the last batch" not in s.message and s.predicted_compiles == 1


def test_last_partial_batch():
    structure = {"batch": "{'x': *, 'y': *}"}
    s = only(*[sig(structure=structure,
                   paths={"batch['x']": leaf("f32", n, 3), "batch['y']": leaf("i32", n)})
               for n in (32, 32, 32, 32, 32, 4)])
    assert (s.code, s.predicted_compiles) == ("shape", 1)
    # calls not counted: each epoch's last batch and the run's look the same
    assert s.message == (
        "the last batch is smaller: `batch['x']` dim 0 is 32, then 4 in a later call (the last "
        "batch of each epoch or of the run: `--count-calls` tells which). Pad the last batch "
        "to 32 (and mask it) or drop it (drop_last): 2 compiles -> 1.")


def batches(*sizes: int, at: list[int], calls: int) -> Suggestion:
    """The advice for counted calls of ``f`` with batches ``x`` of ``sizes`` traced ``at``."""
    return only(*counted(*[sig(x=leaf("f32", n, 3)) for n in sizes], at=at),
                calls={KEY: calls})


def test_a_last_batch_of_each_epoch_says_how_often():
    # 3 epochs of 4 counted calls: 32, 32, 32, 4 each; the later ones hit the cache
    s = batches(32, 4, at=[0, 3], calls=12)
    assert s.message.startswith(
        "the last batch is smaller: `x` dim 0 is 32, then 4 every 4th call (the last batch of "
        "each of 3 epochs of 4 calls). Pad the last batch to 32")
    # 9 calls of 32 and 3 of 4: padding adds 3 * 28 rows to 9 * 32 + 3 * 4
    assert s.message.endswith("(padding computes 28% more elements over the 12 calls).")


@pytest.mark.parametrize(("at", "calls"), [([0, 3], 10), ([0, 1], 2)],
                         ids=["not at an epoch's end", "after one call"])
def test_a_smaller_batch_that_ends_nothing_is_no_last_batch(at, calls):
    s = batches(32, 4, at=at, calls=calls)
    assert s.message.startswith("`x` dim 0 took the values 32, 4: pad to 32 (and mask)")
    assert "last batch" not in s.message and "drop_last" not in s.message


def test_a_shorter_sequence_is_no_last_batch_but_a_length_to_bucket():
    # dim 1, a sequence length that shrinks at step 2 and stays: never "drop the last batch"
    s = only(*counted(*[sig(x=leaf("f32", 8, n)) for n in (104, 103)], at=[0, 1]),
             calls={KEY: 2})
    assert s.message == (
        "`x` dim 1 (not the leading, batch dimension) took the values 104, 103: a length that "
        "varies between calls. Pad it to 104, or to a few bucket sizes if more lengths come "
        "(e.g. multiples of 16), and mask the padding: 2 compiles -> 1 (pads 0.5% more "
        "elements over the 2 calls).")


def test_a_change_of_rank_is_never_advised_padding():
    s = only(sig(x=leaf("f32", 4)), sig(x=leaf("f32", 4, 2)))
    assert (s.code, s.predicted_compiles) == ("shape", None)
    assert s.message.startswith("`x` reached f with different ranks (f32[4], f32[4,2]); ")
    assert "pad" not in s.message.replace("padding cannot", "")


def test_typed_keys_of_new_batch_sizes_get_no_padding_advice():
    assert suggestions(*SILENT["pad_dimension"]) == []


NNX_MODEL = "CustomNode(NodeStates[(None,)], [CustomNode(GraphDef[...], [])])"
ADAM = ("(CustomNode(namedtuple[ScaleByAdamState], [*, {'w': *}, {'w': *}]), "
        "CustomNode(namedtuple[EmptyState], []))")
EQX_STATIC = {"static": node_map_text([("model", "M"), ("model.<aux 0>", "Missing\taux")],
                                      "(...)")}


@pytest.mark.parametrize("calls", [
    [sig(structure={"model": NNX_MODEL}, paths={"model.w": leaf("f32", n)}) for n in (3, 4)],
    [sig(structure={"opt_state": ADAM}, paths={"opt_state[0].mu['w']": leaf("f32", n)})
     for n in (3, 4)],
    [sig(structure={}, static=EQX_STATIC, paths={"model.w": leaf("f32", n)}) for n in (3, 4)],
], ids=["nnx", "optax", "equinox"])
def test_a_models_parameters_and_optimizer_state_are_never_padded(calls):
    assert suggestions(*calls) == []


def test_data_next_to_an_equinox_model_is_padded():
    s = only(*[sig(structure={}, static=EQX_STATIC,
                   paths={"model.w": X3, "x": leaf("f32", n, 2)}) for n in (32, 8)])
    assert s.message.startswith("the last batch is smaller: `x` dim 0 is 32, then 8")


# -- PRNG keys ----------------------------------------------------------------------------------
def test_typed_key_then_raw_key():
    s = only(*FIRES["prng_key_type"])
    assert (s.code, s.predicted_compiles) == ("dtype", 1)  # the key type changed (and so did the shape)
    assert s.message == (
        "`key` reached f both as a typed PRNG key (key<fry>[], made by `jax.random.key`) and "
        "as a raw uint32 key (u32[2], made by `jax.random.PRNGKey`); each key type compiles "
        "once, and padding cannot merge them. Use one key type everywhere: `jax.random.key`, "
        "or convert where the two meet with `jax.random.wrap_key_data(raw)` (raw -> typed) or "
        "`jax.random.key_data(key)` (typed -> raw): 2 compiles -> 1.")


def test_typed_keys_of_two_implementations():
    s = only(*SILENT["cast_dtype"])
    assert (s.code, s.predicted_compiles) == ("dtype", None)
    assert "typed PRNG keys of different implementations (key<fry>[], key<rbg>[])" in s.message


# -- dtypes and weak types ----------------------------------------------------------------------
def test_dtype():
    s = only(sig(x=leaf("f32", 4)), sig(x=leaf("i32", 4)), sig(x=leaf("f16", 4)))
    assert (s.code, s.predicted_compiles) == ("dtype", 1)
    assert s.message == (
        "`x` reached f with different dtypes (f32[4], i32[4], f16[4]). Cast it once before the "
        "call, e.g. `x.astype(jnp.float32)` (the dtype seen first): 3 compiles -> 1.")


def test_dtype_names_the_dtype_seen_first():
    s = only(sig(x=leaf("i32", 4)), sig(x=leaf("f32", 4)))
    assert "`x.astype(jnp.int32)` (the dtype seen first)" in s.message


def test_dtype_prediction_is_left_out_where_the_cast_alone_saves_nothing():
    s = only(sig(x=leaf("f32", 4), n=leaf("f32", 2)), sig(x=leaf("i32", 4), n=leaf("f32", 3)))
    assert (s.code, s.predicted_compiles) == ("dtype", None)
    assert "compiles ->" not in s.message


WEAK, STRONG = leaf("f32", weak=True), leaf("f32")


def test_weak_type_of_unknown_origin():
    s = only(*FIRES["weak_type"])
    assert (s.code, s.predicted_compiles) == ("weak_type", 1)
    assert s.message == (
        "`s` was weakly typed (~f32[]) in some calls of f and strongly typed (f32[]) in others; "
        "JAX compiles each once. A weakly typed value is a Python scalar, or an array made from "
        "one without a dtype (`jnp.array(1.0)`): give it a dtype where it is created, e.g. "
        "`jnp.array(1.0, dtype=jnp.float32)` or `jnp.float32(1.0)`: 2 compiles -> 1.")


def test_weak_type_from_a_python_scalar():
    s = only(replace(sig(s=WEAK), python_scalars=("s",)), replace(sig(s=STRONG), python_scalars=()))
    assert "It is a Python scalar in the weakly typed calls: pass it with a dtype at every call, " \
           "e.g. `jnp.float32(1.0)`" in s.message
    assert s.predicted_compiles == 1


def test_weak_type_from_a_weakly_typed_array_is_not_called_a_python_scalar():
    s = only(replace(sig(s=WEAK), python_scalars=()), replace(sig(s=STRONG), python_scalars=()))
    assert "Python scalar in" not in s.message
    assert ("It is a weakly typed array, made from a Python scalar without a dtype "
            "(`jnp.array(1.0)`) or computed from one: give it a dtype where it is created, e.g. "
            "`jnp.array(1.0, dtype=jnp.float32)`") in s.message


def test_weak_types_of_several_leaves_are_one_advice_with_a_true_prediction():
    # params and the optimizer state made from them turn strong one after the other (optax)
    paths = ["params['b']", "params['w']", "state.mu['b']", "state.mu['w']"]
    rows = [dict.fromkeys(paths, WEAK), {**dict.fromkeys(paths[:2], STRONG),
                                         **dict.fromkeys(paths[2:], WEAK)},
            dict.fromkeys(paths, STRONG)]
    structure = {"params": "{'b': *, 'w': *}", "state": "State(mu={'b': *, 'w': *})"}
    (s,) = suggestions(*[sig(structure=structure, paths=row) for row in rows])
    assert (s.code, s.predicted_compiles) == ("weak_type", 1)
    assert s.message.startswith("`params['b']`, `params['w']` and 2 more were weakly typed")
    assert s.message.endswith("(values computed from them, e.g. an optimizer's state, follow): "
                              "3 compiles -> 1.")


# -- static arguments ---------------------------------------------------------------------------
def test_static_function_recreated_is_not_advised_to_be_traced():
    s = only(*FIRES["static_function"])
    assert (s.code, s.predicted_compiles) == ("static_value", 1)
    assert s.message == (
        "static argument `fn` of f is (or holds) a new function object in each call (<function "
        "<lambda> at 0x7f0000000010>, ... (3 in all)): a lambda or `functools.partial` created "
        "in the loop. A function cannot be passed as a traced array; define it once, outside "
        "the loop, and pass that same object: 3 compiles -> 1.")
    assert "traced array instead" not in s.message


def test_static_value_that_prints_the_same_but_compares_unequal():
    s = only(*FIRES["static_identity"])
    assert (s.code, s.predicted_compiles) == ("static_value", 1)
    assert s.message == (
        "static argument `m` of f is a new object in each call that prints the same "
        "(Model(n=2)) but compares unequal (Model.__eq__ is identity), so each new object "
        "compiles again. Keep one instance (create it once, outside the loop), or give the "
        "class value equality (e.g. a frozen dataclass): 3 compiles -> 1.")


def test_a_partial_that_prints_the_same_is_a_new_function_object():
    text = "functools.partial(<function twice at 0x7f0000000010>)"
    s = only(*[static(text, n, identity=True) for n in (1, 2)])
    assert s.message.startswith("static argument `m` of f is (or holds) a new function object")
    assert "value equality" not in s.message and s.predicted_compiles == 1


def test_static_object_recreated():
    s = only(*FIRES["static_object"])
    assert (s.code, s.predicted_compiles) == ("static_value", 1)
    assert "Keep one instance (create it once, outside the loop)" in s.message


def test_static_numbers():
    s = only(*FIRES["static_number"])
    assert (s.code, s.predicted_compiles) == ("static_value", 1)
    assert s.message.startswith("static argument `n` of f took 4 values (0, 1, 2, 3); each new "
                                "value compiles again.")
    assert "`jax.lax.cond` / `jnp.where`: 4 compiles -> 1;" in s.message


def test_static_value_and_shape_changed_together_are_both_named():
    s = only(sig(x=X3, static={"n": "1"}), sig(x=leaf("f32", 4), static={"n": "2"}))
    assert s.code == "static_value"
    # the one compile changed both: dropping the static alone would not remove it
    assert s.predicted_compiles is None
    assert s.message.endswith("`jnp.where`. That alone would not remove these compiles: shape "
                              "of `x` (f32[3] -> f32[4]) changed in the same calls.")


def test_a_change_with_advice_of_its_own_is_not_appended_to_another():
    """The weak-type advice named "Together with: shape of `x`" where the shape has its own
    advice (issue 33): each cause is named once, in its own suggestion."""
    strong, weak = leaf("f32"), leaf("f32", weak=True)
    found = suggestions(sig(lr=strong, x=leaf("f32", 32, 8)), sig(lr=weak, x=leaf("f32", 4, 8)),
                        sig(lr=weak, x=leaf("f32", 32, 8)), sig(lr=weak, x=leaf("f32", 4, 8)))
    assert [s.code for s in found] == ["weak_type", "shape"]
    assert not any("Together with" in s.message for s in found)
    assert "`x`" not in found[0].message and "`lr`" in found[0].message


def test_static_strings_and_tuples_get_no_advice():
    assert suggestions(*SILENT["static_object"]) == []
    assert suggestions(*SILENT["static_number"]) == []


# -- structures ---------------------------------------------------------------------------------
def test_static_field_rebuilt_each_call():
    s = only(*FIRES["field_object"])
    assert (s.code, s.predicted_compiles) == ("tree_structure", 1)
    assert s.message.startswith("`b.max_len`, static data of `b`, is part of the cache key and "
                                "holds a new object in each call with the same contents")
    assert "Create it once, outside the loop, and reuse it: 2 compiles -> 1." in s.message


def test_static_field_that_prints_the_same_but_compares_unequal():
    s = only(with_field("Cfg()"), with_field("Cfg()", Note("field", 1, "Cfg", True)))
    assert s.predicted_compiles == 1
    assert "(or give its class value equality, e.g. a frozen dataclass): 2 compiles -> 1." in (
        s.message)


def test_a_structure_that_differs_only_by_an_address_holds_a_rebuilt_object():
    s = only(*[sig(structure={"state": f"CustomNode(State[(<function u at 0x7f000000{n}0>,)], "
                                       "[*])"}, paths={"state.x": X3}) for n in (1, 2, 3)])
    assert (s.code, s.predicted_compiles) == ("tree_structure", 1)
    assert s.message.startswith("the static data of `state` (a static field or aux data) is "
                                "part of the cache key and holds a new object in each call")


def test_static_field_numbers():
    s = only(*FIRES["field_value"])
    assert (s.code, s.predicted_compiles) == ("tree_structure", None)
    assert s.message == (
        "`b.max_len` is static (a static field, attribute or aux data: part of the pytree "
        "structure) and took the values 8, 16 between calls of f; each new value compiles once. "
        "Expected if it changes on purpose (e.g. a mode); otherwise keep it fixed between calls, "
        "or, if it is used only in arithmetic (not as a shape or in a Python `if`), make it a "
        "data field (a pytree leaf).")


def test_static_field_strings():
    s = only(with_field("'train'"), with_field("'eval'"))
    assert "keep it fixed between calls." in s.message and "data field" not in s.message


def test_a_list_growing_inside_a_node_map_is_a_container():
    s = only(*SILENT["field_value"])
    assert s.message.startswith("the pytree structure of `s.xs` changed")
    assert "list lengths" in s.message


def test_mode_flag():
    s = only(*FIRES["mode_flag"])
    assert s.message.startswith("`model.bn.use_running_average` took the values False, True "
                                "between calls of f: a static field or attribute")


def test_a_library_mode_switch_is_expected_never_traced():
    """A Python bool that the library module holding it branches on: each mode compiles
    once, expected; no fix is predicted and nothing says to trace it."""
    def model(value: str) -> Signature:
        structure = node_map_text([("", "Model"), (".bn", "BatchNorm"),
                                   (".bn.use_running_average", value)], "Model")
        return sig(structure={"model": structure}, paths={"model.bn.scale": X3})

    s = only(model("False\tattr mode"), model("True\tattr mode"))
    assert (s.code, s.predicted_compiles) == ("tree_structure", None)
    assert s.message == (
        "`model.bn.use_running_average` is the mode switch of `BatchNorm` (a bool it branches "
        "on): f ran in training (`use_running_average=False`) and evaluation mode (`True`), "
        "each compiled once. To train, call `model.train()` before it; to evaluate, call "
        "`model.eval()`; if both modes are intended, this is expected.")
    assert "pass it as a traced array" not in s.message


@pytest.mark.parametrize("note", [Note("attr", mode=True), Note("leaf", 2, "bool", False, True),
                                  Note("field", 1, "Tx", True), Note("aux")])
def test_a_note_reads_back_as_written(note):
    assert Note.parse(str(note)) == note


def test_tree_structure():
    s = only(*FIRES["containers"])
    assert (s.code, s.predicted_compiles) == ("tree_structure", None)
    assert s.message.startswith("the pytree structure of `p` changed between calls of f "
                                "([*], [*, *]). Keep containers the same")


def test_none_or_array():
    s = only(*FIRES["none_or_array"])
    assert s.message.startswith("`d` held None in some calls of f and an array in others")


# -- calls ----------------------------------------------------------------------------------------
def test_arguments_passed_differently():
    s = only(*FIRES["same_passing"])
    assert (s.code, s.predicted_compiles) == ("arg_passing", 1)
    assert s.message == (
        "called with its arguments passed in different ways (2 positional, 1 positional + y=); "
        "JAX keys its cache on how arguments are passed. Pass them the same way in every call "
        "(e.g. always `y=...` by keyword): 2 compiles -> 1.")


def test_argument_left_to_its_default_gets_no_advice():
    assert suggestions(*SILENT["same_passing"]) == []


def new_function(kind: str, name: str = "step") -> Suggestion:
    return only(*[event(sig(x=X3, fid=i, kind=kind), function=name) for i in (1, 2, 3)])


def test_new_function_lambda():
    s = new_function("lambda", "<lambda>")
    assert (s.function, s.code, s.predicted_compiles) == ("<lambda>", "new_function", 1)
    assert s.message == (
        "traced 2 times more as a new function object: the lambda defined at prog.py:3 is "
        "created anew for every call; define it once, outside the loop (or use a named "
        "module-level function): 3 compiles -> 1.")


def test_new_function_partial():
    s = new_function("partial")
    assert ("a new functools.partial of step is made before every call (called at prog.py:10 "
            "(<module>))") in s.message
    assert s.predicted_compiles == 1


def test_new_function_bound_method():
    s = new_function("bound_method")
    assert "jax.jit(obj.step) wraps a new bound method every time (called at prog.py:10" in (
        s.message)


def test_new_function_closure():
    s = new_function("closure")
    assert "step is defined inside another function (at prog.py:3)" in s.message


def test_new_function_plain_function():
    s = new_function("function")
    assert "hoist the `jax.jit(...)` out of the loop: 3 compiles -> 1." in s.message


def test_tracing_context():
    s = only(*FIRES["tracing_context"], base={"jax_enable_x64": "False"})
    assert (s.code, s.predicted_compiles) == ("tracing_context", None)
    assert s.message.startswith("the tracing context `jax_enable_x64` changed between calls of "
                                "f (False, True).")


def test_placement():
    s = only(*FIRES["placement"])
    assert (s.code, s.predicted_compiles) == ("sharding", None)
    assert s.message.startswith("compiled again without a re-trace because `x` arrived with a "
                                "different placement or donation")


# -- trace errors and scope -------------------------------------------------------------------
def test_first_top_level_compile_after_a_nested_trace_gets_no_suggestion():
    s = suggestions(event(sig(x=X3), depth=1, compiled=False), sig(x=leaf("f32", 4)))
    assert s == []


def test_trace_error_concretization_names_the_argument():
    error = TraceError("TracerBoolConversionError", "Attempted boolean conversion", argument="n")
    s = only(event(sig(x=X3), error=error, compiled=False))
    assert (s.code, s.predicted_compiles) == ("trace_error", None)
    assert "the value of `n` is used in Python control flow" in s.message
    assert "`static_argnames=('n',)`" in s.message


def test_trace_error_other_errors_are_quoted():
    s = only(event(sig(x=X3), error=TraceError("ValueError", "bad thing"), compiled=False))
    assert s.message == "raised ValueError while tracing: bad thing"


def test_only_the_users_top_level_functions():
    found = suggestions(
        sig(x=X3), sig(x=leaf("f32", 4)),
        event(sig(x=X3), function="op", owner="jax"),
        event(sig(x=leaf("f32", 4)), function="op", owner="jax"),
        event(sig(x=X3), function="inner", depth=1),
        event(sig(x=leaf("f32", 4)), function="inner", depth=1))
    assert [(s.function, s.code) for s in found] == [("f", "shape")]


def test_an_unhashable_static_argument_gets_advice_and_other_errors_none():
    """JAX refuses an unhashable static in C++ before any hook: the advice comes from its
    message, which names the value and its type (not the argument)."""
    from recompile_cli.analysis.advice.suggest import SuggestionCode, suggest

    raised = ("the recorded block raised ValueError at prog.py:9: Non-hashable static arguments "
              "are not supported. An error occurred while trying to hash an object of type "
              "<class 'list'>, [1, 2]. The error was")
    [advice] = suggest([], {}, None, raised)
    assert advice.code == SuggestionCode.UNHASHABLE_STATIC
    assert "a `list` (`[1, 2]`)" in advice.message and "a tuple for a list" in advice.message
    assert list(suggest([], {}, None, "the recorded block raised ValueError: bad shape")) == []
    assert list(suggest([], {}, None, None)) == []


# -- advice that only promises what it removes (issue 43) ----------------------------------------
def test_padding_names_every_dimension_that_varies():
    """Dim 0 and dim 1 varied: padding dim 0 alone would keep 6 compiles ("6 -> 6")."""
    s = only(*[sig(x=leaf("f32", b, t)) for b, t in
               [(8, 10), (16, 10), (8, 20), (16, 20), (8, 30), (16, 30)]])
    assert s.predicted_compiles == 1
    assert s.message.startswith(
        "`x` dim 1 took 3 values (10..30) and `x` dim 0 took the values 8, 16, in the same "
        "calls: 6 compiles -> 1 with each padded to its largest size (`x` dim 1 to 30, `x` dim "
        "0 to 16; pads 100% more elements over one call of each size), or 2 with power-of-two "
        "buckets of `x` dim 1 (16, 30: the last one the largest size seen), the others padded "
        "to their largest size")


def test_padding_names_the_other_argument_that_varies_with_it():
    s = only(*[sig(x=leaf("f32", b, 4), y=leaf("f32", t)) for b, t in [(8, 10), (16, 20)]])
    assert s.predicted_compiles == 1
    assert s.message == (
        "`x` dim 0 took the values 8, 16 and `y` dim 0 took the values 10, 20, in the same "
        "calls: 2 compiles -> 1 with each padded to its largest size (`x` dim 0 to 16, `y` dim "
        "0 to 20; pads 33% more elements over one call of each size). Pad along each of these "
        "dimensions and mask the padding; padding one alone leaves the others to compile.")


def test_buckets_stop_at_the_largest_size_seen():
    """36, 40, 48: power-of-two buckets (64) give the one compile that padding to 48 gives,
    with more padding (and past what a positional table of 48 holds)."""
    s = only(*[sig(tokens=leaf("f32", 4, n)) for n in (36, 40, 48)])
    assert s.predicted_compiles == 1
    assert "64" not in s.message
    assert s.message.startswith("`tokens` dim 1 took 3 values (36..48): 3 compiles -> 1 with one "
                                "shape, padded to 48 (pads 16% more elements")


def test_padding_that_another_change_keeps_compiling_predicts_nothing():
    """The shape and a static number changed in the same compiles: padding alone saves none,
    so no "2 compiles -> 2"; both changes are named."""
    found = suggestions(sig(x=leaf("f32", 8), static={"n": "1"}),
                        sig(x=leaf("f32", 16), static={"n": "2"}))
    assert all(s.predicted_compiles is None for s in found)
    assert not any("compiles -> 2" in s.message for s in found)


def test_no_suggestion_predicts_a_count_that_does_not_go_down():
    for items in [*FIRES.values(), *SILENT.values()]:
        for s in suggestions(*items):
            assert s.predicted_compiles is None or f"-> {s.predicted_compiles}" in s.message
            counts = re.findall(r"(\d+) compiles -> (\d+)", s.message)
            assert all(int(after) < int(before) for before, after in counts), s.message


def test_a_structure_change_that_came_with_a_new_static_function_says_so():
    """JAX's examples/advi.py: one compile changed a static function and a structure; "keep
    containers the same" alone would not remove it, and says so."""
    s = only(sig(static={"func": "<lambda> (advi.py:27)"}, structure={"params": "*"},
                 paths={"params": leaf("i32")}),
             sig(static={"func": "<lambda> (advi.py:28)"}, structure={"params": "(*, *)"},
                 paths={"params[0]": leaf("f32", 2), "params[1]": leaf("f32", 2)}))
    assert s.code == "tree_structure"
    assert s.message.endswith(
        "Keep containers the same (same dict keys, same list lengths); pad or mask instead of "
        "adding or removing entries. That alone would not remove these compiles: static_value "
        "of `func` (<lambda> (advi.py:27) -> <lambda> (advi.py:28)) changed in the same calls.")


def test_a_mode_flag_states_both_readings():
    s = only(*FIRES["mode_flag"])
    assert s.message.endswith(
        "part of the cache key. f ran with False, True, each compiled once. To run in one "
        "mode, set `use_running_average` the same before every call; if both modes are "
        "intended, this is expected.")
