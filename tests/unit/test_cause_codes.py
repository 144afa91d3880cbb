"""Every ``CauseCode``, from hand-built events: the code, the argument path and
the before/after text that a user reads."""

from __future__ import annotations

from builders import brief, event, explain, last, leaf, sig

from recompile_cli.analysis.causes.explain import explain_events
from recompile_cli.session.model import CauseCode, Change, TraceError

X3 = leaf("f32", 3)


def test_first_compile_for_each_function_separately():
    causes = explain(sig(x=X3), event(sig(x=X3), function="g"), sig(x=leaf("f32", 4)))
    assert [c[0].code for c in causes] == ["first_compile", "first_compile", "shape"]
    assert causes[0][0].detail == "first trace of this function"


def test_first_compile_without_a_trace_of_its_own():
    (cause,) = last(event(traced=False, compiled=True, lowering_changes=None))
    assert cause.code == "first_compile"
    assert cause.detail == "compiled without a trace of its own"


def test_a_failed_first_trace_leaves_the_next_one_a_first_compile():
    error = TraceError("TracerBoolConversionError", "bool(x)", argument="x")
    causes = explain(event(sig(x=X3), error=error, compiled=False), sig(x=X3))
    assert [c[0].code for c in causes] == ["first_compile", "first_compile"]


def test_shape():
    (cause,) = last(sig(x=leaf("f32", 100, 100)), sig(x=leaf("f32", 150, 150)))
    assert brief(cause) == ("shape", "x", "f32[100,100]", "f32[150,150]")
    assert cause.detail == "new shape (150, 150) (was (100, 100))"


def test_shape_and_dtype_of_one_leaf_is_one_cause_named_by_the_first_field():
    (cause,) = last(sig(x=leaf("f32", 3)), sig(x=leaf("i32", 4)))
    assert brief(cause) == ("shape", "x", "f32[3]", "i32[4]")
    assert cause.detail.endswith("; also changed: dtype")


def test_dtype():
    (cause,) = last(sig(x=leaf("f32", 3)), sig(x=leaf("i32", 3)))
    assert brief(cause) == ("dtype", "x", "f32[3]", "i32[3]")
    assert cause.detail == "new dtype int32 (was float32)"


def test_weak_type_python_scalar_then_array():
    (cause,) = last(sig(s=leaf("f32", weak=True)), sig(s=leaf("f32")))
    assert brief(cause) == ("weak_type", "s", "~f32[]", "f32[]")
    assert "Python scalar" in cause.detail


def test_leaf_inside_a_pytree_is_named_by_its_path():
    structure = {"batch": "{'x': *, 'y': *}"}
    old = sig(structure=structure, paths={"batch['x']": leaf("f32", 32, 4),
                                          "batch['y']": leaf("i32", 32)})
    new = sig(structure=structure, paths={"batch['x']": leaf("f32", 4, 4),
                                          "batch['y']": leaf("i32", 4)})
    assert [brief(c) for c in last(old, new)] == [
        ("shape", "batch['x']", "f32[32,4]", "f32[4,4]"),
        ("shape", "batch['y']", "i32[32]", "i32[4]")]


def test_static_value():
    (cause,) = last(sig(x=X3, static={"n": "3"}), sig(x=X3, static={"n": "4"}))
    assert brief(cause) == ("static_value", "n", "3", "4")
    assert cause.detail == "static argument n has a new value"


def test_tree_structure_names_added_leaves_and_skips_them():
    old = sig(structure={"p": "[*]"}, paths={"p[0]": leaf("f32", 2)})
    new = sig(structure={"p": "[*, *]"}, paths={"p[0]": leaf("i32", 2), "p[1]": leaf("f32", 2)})
    (cause,) = last(old, new)  # p[0]'s dtype change is part of the restructuring, not a cause
    assert brief(cause) == ("tree_structure", "p", "[*]", "[*, *]")
    assert cause.detail == "pytree structure changed: added p[1]"


def test_tree_structure_removed_leaves():
    old = sig(structure={"d": "{'a': *, 'b': *}"}, paths={"d['a']": X3, "d['b']": X3})
    new = sig(structure={"d": "{'a': *}"}, paths={"d['a']": X3})
    (cause,) = last(old, new)
    assert brief(cause) == ("tree_structure", "d", "{'a': *, 'b': *}", "{'a': *}")
    assert cause.detail == "pytree structure changed: removed d['b']"


def test_arg_passing_a_different_set_of_arguments():
    old = sig(x=X3)
    new = sig(x=X3, y=leaf("f32", 2), keywords=("y",))
    (cause,) = last(old, new)
    assert brief(cause) == ("arg_passing", "y", "1 positional", "1 positional + y=")
    assert "y passed in one call and left to its default in the other" in cause.detail


def test_arg_passing_positional_then_keyword():
    old = sig(x=X3, y=X3)
    new = sig(x=X3, y=X3, keywords=("y",))
    (cause,) = last(old, new)
    assert brief(cause) == ("arg_passing", "y", "2 positional", "1 positional + y=")
    assert "passed positionally in one call and by keyword in the other" in cause.detail


def test_new_function():
    (cause,) = last(sig(x=X3, fid=11), sig(x=X3, fid=12))
    assert brief(cause) == ("new_function", None, "function object #11", "function object #12")
    assert "lambda or functools.partial re-created" in cause.detail


def test_an_unknown_function_id_is_not_a_new_function():
    (cause,) = last(sig(x=X3, fid=0), sig(x=leaf("f32", 4), fid=5))
    assert cause.code == "shape"


def test_tracing_context_against_the_base_context():
    base = {"jax_enable_x64": "False"}
    (cause,) = last(sig(x=X3), sig(x=X3, context={"jax_enable_x64": "True"}), base=base)
    assert brief(cause) == ("tracing_context", "jax_enable_x64", "False", "True")
    # a context entry equal to the base value is no change
    (cause,) = last(sig(x=X3), sig(x=leaf("f32", 4), context={"jax_enable_x64": "False"}),
                    base=base)
    assert cause.code == "shape"


def test_sharding_of_a_leaf():
    (cause,) = last(sig(x=leaf("f32", 8)), sig(x=leaf("f32", 8, sharding="P('data')")))
    assert brief(cause) == ("sharding", "x", "f32[8]", "f32[8](P('data'))")
    assert cause.detail == "new sharding P('data') (was None)"


def test_sharding_from_lowering_changes_without_a_retrace():
    changes = (Change("in_shardings", "UnspecifiedValue", "SingleDeviceSharding(cpu:0)",
                      argument="x"),
               Change("donated_invars", "(False,)", "(True,)", argument="x"))
    causes = last(sig(x=X3), event(traced=False, compiled=True, lowering_changes=changes))
    assert [brief(c) for c in causes] == [
        ("sharding", "x", "UnspecifiedValue", "SingleDeviceSharding(cpu:0)"),
        ("sharding", "x", "(False,)", "(True,)")]
    assert causes[0].detail.startswith("argument placement changed")
    assert causes[1].detail.startswith("donate_argnums/donate_argnames changed")


def test_derived_jaxpr():
    (cause,) = last(sig(x=X3), event(traced=False, compiled=True, lowering_changes=None))
    assert cause.code == "derived_jaxpr"
    assert "grad, vjp, vmap" in cause.detail


def test_unknown_same_signature_again():
    (cause,) = last(sig(x=X3), sig(x=X3))
    assert (cause.code, cause.argument) == ("unknown", None)
    assert "caches were cleared" in cause.detail


def test_unknown_without_a_signature():
    (cause,) = last(sig(x=X3), event(None))
    assert cause.code == "unknown"
    assert "no signature recorded" in cause.detail


def test_unknown_compile_with_the_same_lowering_key():
    (cause,) = last(sig(x=X3), event(traced=False, compiled=True, lowering_changes=()))
    assert cause.code == "unknown"
    assert "same lowering key" in cause.detail


def test_several_differences_most_telling_first():
    old = sig(x=X3, static={"n": "1"}, fid=1)
    new = sig(x=leaf("f32", 4), static={"n": "2"}, fid=2, context={"flag": "on"})
    assert [c.code for c in last(old, new)] == [
        "new_function", "tracing_context", "static_value", "shape"]


def test_every_cause_code_is_covered_here():
    produced = set()
    scenarios = [
        explain(sig(x=X3), sig(x=leaf("f32", 4)), sig(x=leaf("i32", 4)),
                sig(x=leaf("i32", 4, sharding="s")), sig(x=leaf("i32", 4, weak=True))),
        explain(sig(x=X3, static={"n": "1"}), sig(x=X3, static={"n": "2"}),
                sig(x=X3, static={"n": "2"}, fid=2), sig(x=X3, static={"n": "2"}, fid=2,
                                                         context={"c": "1"})),
        explain(sig(p=X3), sig(structure={"p": "[*]"}, paths={"p[0]": X3}),
                sig(structure={"p": "[*]", "q": "*"}, paths={"p[0]": X3}, q=X3),
                event(traced=False, lowering_changes=None),
                event(traced=False, lowering_changes=()))]
    for causes in scenarios:
        produced |= {c.code for cs in causes for c in cs}
    assert produced == set(CauseCode)


def test_a_first_top_level_compile_after_nested_traces_is_a_first_compile():
    nested = event(sig(x=leaf("f32", 3)), seq=0, depth=1, compiled=False)
    top = event(sig(x=leaf("f32", 4)), seq=1)
    again = event(sig(x=leaf("f32", 5)), seq=2)
    causes = explain_events([nested, top, again], {})
    assert causes[1][0].code == "first_compile"
    assert "traced before only inside other jits" in causes[1][0].detail
    assert (causes[2][0].code, causes[2][0].before, causes[2][0].after) == (
        "shape", "f32[4]", "f32[5]")
