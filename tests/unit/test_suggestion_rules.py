"""One test per rule of ``analysis/suggest.py``: the message a user reads and the predicted
compiles."""

from __future__ import annotations

from builders import event, leaf, numbered, sig

from recompile_cli.analysis.causes import explain_events
from recompile_cli.analysis.suggest import Suggestion, suggest
from recompile_cli.session.model import Change, TraceError

X3 = leaf("f32", 3)


def suggestions(*items, base=None) -> list[Suggestion]:
    events = numbered(*items)
    return list(suggest(events, explain_events(events, base or {})))


def only(*items, base=None) -> Suggestion:
    (found,) = suggestions(*items, base=base)
    return found


def test_buckets_when_a_dimension_takes_three_or_more_sizes():
    s = only(*[sig(tokens=leaf("f32", n)) for n in range(1, 41)])
    assert (s.function, s.code, s.predicted_compiles) == ("f", "shape", 7)
    assert s.message == (
        "`tokens` dim 0 took 40 values (1..40): 40 compiles -> 7 with power-of-two buckets of "
        "`tokens` dim 0 (1, 2, 4, 8, 16, 32, 64; pads 39% on average), or 5 with multiples of "
        "8 (pads 49% on average). Pad along that dimension to the bucket size and mask the "
        "padding.")


def test_buckets_name_every_dim_of_the_same_axis():
    s = only(*[sig(x=leaf("f32", n, n)) for n in (2, 3, 5)])
    # power-of-two buckets (2, 4, 8) would not reduce the 3 compiles: never suggested
    assert s.message == ("`x` dims 0, 1 took 3 values (2..5): pad to 5 (and mask) so that one "
                         "shape is reused: 3 compiles -> 1 (pads 72% on average).")
    assert s.predicted_compiles == 1


def test_buckets_never_pad_far_past_the_sizes_seen():
    s = only(*[sig(x=leaf("f32", n)) for n in (100, 120, 128)])
    assert s.message == (
        "`x` dim 0 took 3 values (100..128): 3 compiles -> 1 with power-of-two buckets of `x` "
        "dim 0 (128; pads 12% on average), or 2 with multiples of 16 (pads 6% on average). Pad "
        "along that dimension to the bucket size and mask the padding.")


def test_two_datasets_of_different_sizes_are_not_a_last_batch():
    s = only(event(sig(x=leaf("f32", 8000, 4)), call_site="eval.py:20 (<module>)"),
             event(sig(x=leaf("f32", 2000, 4)), call_site="eval.py:21 (<module>)"))
    assert s.message.startswith("two datasets of different sizes: `x` dim 0 is 8000, then 2000")
    assert "Pad the last batch" not in s.message and s.predicted_compiles == 1


def test_static_value_and_shape_changed_together_are_both_named():
    s = only(sig(x=X3, static={"n": "1"}), sig(x=leaf("f32", 4), static={"n": "2"}))
    assert s.code == "static_value"
    assert s.message.endswith("Together with: shape of `x` (f32[3] -> f32[4]).")


def test_first_top_level_compile_after_a_nested_trace_gets_no_suggestion():
    s = suggestions(event(sig(x=X3), depth=1, compiled=False), sig(x=leaf("f32", 4)))
    assert s == []


def test_last_partial_batch():
    structure = {"batch": "{'x': *, 'y': *}"}
    s = only(*[sig(structure=structure,
                   paths={"batch['x']": leaf("f32", n, 3), "batch['y']": leaf("i32", n)})
               for n in (32, 32, 32, 32, 32, 4)])
    assert (s.code, s.predicted_compiles) == ("shape", 1)
    assert s.message == (
        "the last batch is smaller: `batch['x']` dim 0 is 32, then 4 once at the end. Pad the "
        "last batch to 32 (and mask it) or drop it (drop_last): 2 compiles -> 1.")


def test_one_shape_when_a_dimension_takes_two_sizes():
    s = only(*[sig(x=leaf("f32", n)) for n in (4, 8, 4, 8)])
    assert (s.code, s.predicted_compiles) == ("shape", 1)
    assert s.message == ("`x` dim 0 took the values 4, 8: pad to 8 (and mask) so that one "
                         "shape is reused: 2 compiles -> 1 (pads 50% on average).")


def test_shape_with_a_change_of_rank_has_no_prediction():
    s = only(sig(x=leaf("f32", 4)), sig(x=leaf("f32", 4, 2)))
    assert (s.code, s.predicted_compiles) == ("shape", None)
    assert s.message.startswith("re-compiled once for new shapes of `x` (f32[4], f32[4,2]).")


def test_weak_type():
    s = only(sig(s=leaf("f32", weak=True)), sig(s=leaf("f32")))
    assert (s.code, s.predicted_compiles) == ("weak_type", 1)
    assert s.message == (
        "`s` was passed to f both as a Python scalar (weakly typed) and as a typed array "
        "(~f32[], f32[]). Convert it the same way at every call site, "
        "`jnp.asarray(s, dtype=...)`: 2 compiles -> 1.")


def test_dtype():
    s = only(sig(x=leaf("f32", 4)), sig(x=leaf("i32", 4)), sig(x=leaf("f16", 4)))
    assert (s.code, s.predicted_compiles) == ("dtype", 1)
    assert s.message == (
        "`x` reached f with different dtypes (f32[4], i32[4], f16[4]). Cast it once before the "
        "call, e.g. `x.astype(jnp.float32)` (the dtype seen first): 3 compiles -> 1.")


def test_dtype_names_the_dtype_seen_first():
    s = only(sig(x=leaf("i32", 4)), sig(x=leaf("f32", 4)))
    assert "`x.astype(jnp.int32)` (the dtype seen first)" in s.message


def test_static_values():
    s = only(*[sig(x=X3, static={"n": str(i)}) for i in range(4)])
    assert (s.code, s.predicted_compiles) == ("static_value", 1)
    assert s.message.startswith("static argument `n` of f took 4 values (0, 1, 2, 3); each new "
                                "value compiles again.")
    assert "`jax.lax.cond` / `jnp.where`): 4 compiles -> 1;" in s.message


def test_arguments_passed_differently():
    s = only(sig(x=X3, y=X3), sig(x=X3, y=X3, keywords=("y",)))
    assert (s.code, s.predicted_compiles) == ("arg_passing", 1)
    assert s.message == (
        "called with its arguments passed in different ways (2 positional, 1 positional + y=); "
        "JAX keys its cache on how arguments are passed. Pass them the same way in every call "
        "(e.g. always `y=...` by keyword): 2 compiles -> 1.")


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


def test_tree_structure():
    s = only(sig(structure={"p": "[*]"}, paths={"p[0]": X3}),
             sig(structure={"p": "[*, *]"}, paths={"p[0]": X3, "p[1]": X3}))
    assert (s.code, s.predicted_compiles) == ("tree_structure", None)
    assert s.message.startswith("the pytree structure of `p` changed between calls of f "
                                "([*], [*, *]). Keep containers the same")


def test_tracing_context():
    s = only(sig(x=X3), sig(x=X3, context={"jax_enable_x64": "True"}),
             base={"jax_enable_x64": "False"})
    assert (s.code, s.predicted_compiles) == ("tracing_context", None)
    assert s.message.startswith("the tracing context `jax_enable_x64` changed between calls of "
                                "f (False, True).")


def test_placement():
    s = only(sig(x=X3), event(traced=False, lowering_changes=(
        Change("in_shardings", "UnspecifiedValue", "SingleDeviceSharding", argument="x"),)))
    assert (s.code, s.predicted_compiles) == ("sharding", None)
    assert s.message.startswith("compiled again without a re-trace because `x` arrived with a "
                                "different placement or donation")


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
