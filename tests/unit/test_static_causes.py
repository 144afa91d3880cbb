"""Static values compared the way JAX compares them, static fields of pytree nodes named by
field, a wrapper's static tuple by the user's paths, and a compile that reuses an earlier trace
explained against what was compiled: from hand-built sessions, without JAX."""

from __future__ import annotations

from builders import brief, event, explain, last, leaf, sig

from recompile_cli.analysis.causes.explain import (
    NEW_OBJECT_SAME_TEXT,
    PRINTS_SAME_UNEQUAL,
    STATIC_FIELD,
    diff_signatures,
)
from recompile_cli.session.model import CauseCode, Signature, StaticClass
from recompile_cli.session.structures import (
    FIELD,
    LEAF,
    WHOLE_AUX,
    Note,
    node_map_text,
    split_note,
    with_note,
)

X3 = leaf("f32", 3)
MODEL = "Model(k=2)"


def model(number: int, *, identity: bool = True, kind: str = "Model") -> StaticClass:
    return StaticClass(number, kind, identity)


# -- static arguments: equality classes ----------------------------------------------------------
def test_a_new_object_that_prints_the_same_is_a_static_value_not_unknown():
    (cause,) = last(sig(x=X3, static={"self": MODEL}, classes={"self": model(0)}),
                    sig(x=X3, static={"self": MODEL}, classes={"self": model(1)}))
    assert brief(cause) == ("static_value", "self", MODEL, MODEL)
    assert cause.detail == ("static argument self: " + NEW_OBJECT_SAME_TEXT
                            + " (Model.__eq__ is identity)")


def test_equal_text_unequal_value_of_a_type_with_its_own_eq():
    (cause,) = last(sig(static={"cfg": "Cfg(a=1)"}, classes={"cfg": model(3, identity=False,
                                                                             kind="Cfg")}),
                    sig(static={"cfg": "Cfg(a=1)"}, classes={"cfg": model(4, identity=False,
                                                                             kind="Cfg")}))
    assert cause.code == "static_value"
    assert PRINTS_SAME_UNEQUAL in cause.detail and "Cfg.__eq__ or __hash__" in cause.detail


def test_same_text_of_another_type_says_so():
    (cause,) = last(sig(static={"m": "M()"}, classes={"m": model(0, kind="a.M")}),
                    sig(static={"m": "M()"}, classes={"m": model(1, kind="b.M")}))
    assert cause.code == "static_value" and "another type" in cause.detail
    assert "(a.M -> b.M" in cause.detail


def test_a_new_object_of_an_identity_type_with_a_new_text():
    (cause,) = last(sig(static={"f": "<function g at 0x1>"},
                        classes={"f": model(0, kind="function")}),
                    sig(static={"f": "<function g at 0x2>"},
                        classes={"f": model(1, kind="function")}))
    assert brief(cause) == ("static_value", "f", "<function g at 0x1>", "<function g at 0x2>")
    assert "a new function object, compared by identity" in cause.detail


def test_values_jax_finds_equal_are_no_cause_even_when_their_texts_differ():
    """Same class (JAX's ``==``): the static is not what changed; the shape is."""
    (cause,) = last(sig(x=X3, static={"c": "C(id=1)"}, classes={"c": model(7, identity=False)}),
                    sig(x=leaf("f32", 4), static={"c": "C(id=2)"},
                        classes={"c": model(7, identity=False)}))
    assert brief(cause) == ("shape", "x", "f32[3]", "f32[4]")


def test_without_classes_statics_are_compared_by_text_as_before():
    causes = last(sig(x=X3, static={"self": MODEL}), sig(x=leaf("f32", 4), static={"self": MODEL}),
                  sig(x=X3, static={"self": MODEL}))
    assert [c.code for c in causes] == ["unknown"]  # an old session: nothing else to go by


def test_a_value_seen_before_is_compared_with_its_own_class():
    """A, B (prints like A, unequal), then A's object again with a new shape: the closest is A."""
    causes = explain(sig(x=X3, static={"self": MODEL}, classes={"self": model(0)}),
                     sig(x=X3, static={"self": MODEL}, classes={"self": model(1)}),
                     sig(x=leaf("f32", 4), static={"self": MODEL}, classes={"self": model(0)}))
    assert [brief(c) for c in causes[-1]] == [("shape", "x", "f32[3]", "f32[4]")]


# -- static data of custom pytree nodes ----------------------------------------------------------
def state(tx: str, note: Note | None = None) -> str:
    return node_map_text([("", "TrainState"), (".apply_fn", with_note("None", Note(FIELD))),
                          (".tx", with_note(tx, note or Note(FIELD))), (".params", "dict"),
                          (".params['w']", "*")],
                         "CustomNode(TrainState[...], [*, {'w': *}])")


def with_state(text: str) -> Signature:
    return sig(structure={"state": text}, paths={"state.params['w']": X3, "state.step": X3})


def test_a_static_field_is_named_with_that_fields_values_only():
    (cause,) = last(with_state(state("Adam(lr=0.1)")), with_state(state("Adam(lr=0.2)")))
    assert brief(cause) == ("tree_structure", "state.tx", "Adam(lr=0.1)", "Adam(lr=0.2)")
    assert cause.detail.startswith(f"{STATIC_FIELD} `tx` of TrainState has a new value")
    assert "train/eval" not in cause.detail


def test_a_static_field_that_prints_the_same_but_compares_unequal():
    same = "Cfg()"
    (cause,) = last(with_state(state(same)),
                    with_state(state(same, Note(FIELD, 1, "Cfg", identity=True))))
    # printed alike, told apart by which object each is
    assert brief(cause) == ("tree_structure", "state.tx", f"{same} [object #1]",
                            f"{same} [object #2]")
    assert NEW_OBJECT_SAME_TEXT + " (Cfg.__eq__ is identity)" in cause.detail


def test_a_custom_nodes_aux_data_as_a_whole():
    def batch(aux: str) -> Signature:
        text = node_map_text([("", "Batch"), (".<aux>", with_note(aux, Note(WHOLE_AUX)))],
                             "CustomNode(Batch[...], [*])")
        return sig(structure={"batch": text}, paths={"batch[<flat index 0>]": X3})

    (cause,) = last(batch("{'max_len': 4}"), batch("{'max_len': 8}"))
    assert brief(cause) == ("tree_structure", "batch.<aux>", "{'max_len': 4}",
                            "{'max_len': 8}")
    assert "aux data of the custom pytree node Batch" in cause.detail


def test_note_round_trip():
    for note in (Note(FIELD), Note(WHOLE_AUX, 2, "pkg.Cfg"), Note(LEAF, 1, "Obj", True)):
        assert split_note(with_note("v", note)) == ("v", note)
    assert split_note("dict['a']") == ("dict['a']", None)


# -- a wrapper's static tuple (equinox.filter_jit), by the user's paths ----------------------------
def eqx(n: str, act: str, x: str | None = None) -> Signature:
    lines = [("<function>", with_note("<function h at 0x1>", Note(LEAF))), ("m", "M"),
             ("m.act", with_note(act, Note(FIELD))), ("m.w", "*"),
             ("n", with_note(n, Note(LEAF))),
             ("x", "*" if x is None else with_note(x, Note(LEAF)))]  # "*": an array
    leaves = {"m.w": X3} if x is not None else {"m.w": X3, "x": X3}
    return sig(static={"static": node_map_text(lines, "(((<function h>,), ...))")},
               classes={"static": StaticClass(hash((n, act, x)), "tuple")}, structure={},
               positional=3, paths=leaves)


def test_a_python_value_made_static_by_the_wrapper_is_named_by_its_path():
    (cause,) = last(eqx("2", "'relu'"), eqx("3", "'relu'"))
    assert brief(cause) == ("static_value", "n", "2", "3")
    assert "not an array" in cause.detail


def test_an_array_that_became_a_python_value():
    (cause,) = last(eqx("2", "'relu'"), eqx("2", "'relu'", x="2.0"))
    assert brief(cause) == ("static_value", "x", "f32[3]", "2.0")


def test_a_static_field_inside_the_wrappers_tuple():
    (cause,) = last(eqx("2", "'relu'"), eqx("2", "'gelu'"))
    assert brief(cause) == ("tree_structure", "m.act", "'relu'", "'gelu'")
    assert cause.detail.startswith(f"{STATIC_FIELD} `act` of M")


def test_several_parts_of_the_wrappers_tuple_are_one_cause():
    """One cause per static argument, as the closest-signature search counts it."""
    causes = list(diff_signatures(eqx("3", "'gelu'"), eqx("2", "'relu'"), {}))
    assert len(causes) == 1
    assert causes[0].argument == "m.act" and "also n: 2 -> 3" in causes[0].detail


# -- a compile that reuses a trace made inside another jit -----------------------------------------
def test_a_reused_trace_is_compared_with_what_was_compiled():
    """f(x3) compiles; g traces f with x4 and x5 (nested); f(x5) compiles the x5 trace: the
    cause is x3 -> x5 (compiled before), not x4 -> x5 (a shape that never compiled)."""
    x5 = sig(x=leaf("f32", 5))
    causes = explain(event(sig(x=X3), seq=0),
                     event(sig(x=leaf("f32", 4)), seq=1, depth=1, compiled=False),
                     event(x5, seq=2, depth=1, compiled=False),
                     event(x5, seq=3, traced=False, compiled=True, lowering_changes=None))
    assert [brief(c) for c in causes[1]] == [("shape", "x", "f32[3]", "f32[4]")]
    assert [brief(c) for c in causes[2]] == [("shape", "x", "f32[4]", "f32[5]")]
    assert [brief(c) for c in causes[3]] == [("shape", "x", "f32[3]", "f32[5]")]


def test_a_reused_trace_of_a_signature_compiled_before_is_unknown():
    x3 = sig(x=X3)
    causes = explain(event(x3, seq=0), event(sig(x=leaf("f32", 4)), seq=1),
                     event(x3, seq=2, depth=1, compiled=False),
                     event(x3, seq=3, traced=False, compiled=True, lowering_changes=None))
    assert causes[3][0].code == CauseCode.UNKNOWN
    assert "same signature as an earlier compile" in causes[3][0].detail


def test_the_first_compile_of_a_function_traced_only_inside_other_jits():
    x4 = sig(x=leaf("f32", 4))
    causes = explain(event(sig(x=X3), seq=0, depth=1, compiled=False),
                     event(x4, seq=1, depth=1, compiled=False),
                     event(x4, seq=2, traced=False, compiled=True, lowering_changes=None))
    assert causes[2][0].code == CauseCode.FIRST_COMPILE


# -- structures by path: the part added, removed or of another kind --------------------------------
def batch(*lines: tuple[str, str], leaves: dict[str, object]) -> Signature:
    text = node_map_text([("", "dict"), *lines], "{...}")
    return sig(structure={"batch": text}, paths=leaves)  # type: ignore[arg-type]


def test_an_entry_added_is_named_with_its_abstract_value():
    (cause,) = last(batch(("['x']", "*"), leaves={"batch['x']": X3}),
                    batch(("['x']", "*"), ("['y']", "*"),
                          leaves={"batch['x']": X3, "batch['y']": leaf("i32", 2)}))
    assert brief(cause) == ("tree_structure", "batch['y']", "(absent)", "i32[2]")
    assert cause.detail == "pytree structure changed: batch['y'] added"


def test_none_then_an_array():
    (cause,) = last(batch(("['x']", "None"), leaves={}),
                    batch(("['x']", "*"), leaves={"batch['x']": X3}))
    assert brief(cause) == ("tree_structure", "batch['x']", "None", "f32[3]")
    assert cause.detail == "pytree structure changed: batch['x'] is f32[3] (was None)"


def test_an_attribute_without_a_note_is_node_data_as_before():
    """Flax NNX attributes in sessions saved before notes: values, not shapes."""
    def model(flag: str) -> Signature:
        return sig(structure={"model": node_map_text(
            [("", "Model"), (".bn.use_running_average", flag)], "Model")},
            paths={"model.w": X3})

    (cause,) = last(model("False"), model("True"))
    assert brief(cause) == ("tree_structure", "model.bn.use_running_average", "False", "True")
    assert cause.detail.startswith("pytree node data changed")


def test_a_static_container_is_named_by_the_part_that_changed_unless_all_of_it_is_new():
    def cfg(lr: str, fn: str) -> Signature:
        text = node_map_text([("cfg", "Cfg"), ("cfg.lr", with_note(lr, Note(LEAF))),
                              ("cfg.fn", with_note(fn, Note(LEAF)))], f"Cfg(lr={lr}, fn={fn})")
        return sig(x=X3, static={"cfg": text},
                   classes={"cfg": StaticClass(hash((lr, fn)), "Cfg")})

    (cause,) = last(cfg("0.1", "<f at 0x1>"), cfg("0.2", "<f at 0x1>"))
    assert brief(cause) == ("static_value", "cfg.lr", "0.1", "0.2")
    (cause,) = last(cfg("0.1", "<f at 0x1>"), cfg("0.2", "<f at 0x2>"))
    assert brief(cause) == ("static_value", "cfg", "Cfg(lr=0.1, fn=<f at 0x1>)",
                            "Cfg(lr=0.2, fn=<f at 0x2>)")
