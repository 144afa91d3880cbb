"""Every cause code, each from a real JAX program run through `recompile-cli run`."""

from __future__ import annotations

import pytest
from helpers import user_events
from jax_support import requires_private_hooks


@pytest.fixture
def record(cli, program, tmp_path):
    """Run a script under the recorder and return (exit code, JSON report)."""

    def run(source: str, name: str = "prog"):
        script = program(name, source)
        result, report = cli.json("run", "--format", "json", script, tmp_path=tmp_path)
        return result.exit_code, report

    return run


def causes_of(report, name):
    return [e["cause"]["code"] for e in user_events(report, name)]


@requires_private_hooks
def test_shape_change_names_argument_and_shapes(record):
    code, report = record("""
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: x * 2)
        f(jnp.ones((100, 100))); f(jnp.ones((100, 100))); f(jnp.ones((150, 150)))
    """)
    assert code == 0
    events = user_events(report, "<lambda>")
    assert [e["cause"]["code"] for e in events] == ["first_compile", "shape"]
    cause = events[1]["cause"]
    assert (cause["argument"], cause["before"], cause["after"]) == (
        "x", "f32[100,100]", "f32[150,150]")
    assert all(e["traced"] and e["compiled"] for e in events)


@requires_private_hooks
def test_dtype_change(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x): return x + 1
        f(jnp.ones(3, jnp.float32)); f(jnp.ones(3, jnp.int32))
    """)
    cause = user_events(report, "f")[1]["cause"]
    assert (cause["code"], cause["before"], cause["after"]) == ("dtype", "f32[3]", "i32[3]")


@requires_private_hooks
def test_weak_type_python_scalar_then_array(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def g(s): return s * 2
        g(1.0); g(jnp.float32(1.0))
    """)
    cause = user_events(report, "g")[1]["cause"]
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "weak_type", "s", "~f32[]", "f32[]")


@requires_private_hooks
def test_static_value(record):
    _, report = record("""
        import functools, jax, jax.numpy as jnp
        @functools.partial(jax.jit, static_argnames=("mode",))
        def k(x, mode): return x * (2 if mode == "a" else 3)
        k(jnp.ones(3), mode="a"); k(jnp.ones(3), mode="a"); k(jnp.ones(3), mode="b")
    """)
    assert causes_of(report, "k") == ["first_compile", "static_value"]
    cause = user_events(report, "k")[1]["cause"]
    assert (cause["argument"], cause["before"], cause["after"]) == ("mode", "'a'", "'b'")


@requires_private_hooks
def test_tree_structure_dict_gains_key(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def loss(batch): return sum(v.sum() for v in batch.values())
        loss({"x": jnp.ones(2)}); loss({"x": jnp.ones(2), "y": jnp.ones(2)})
    """)
    cause = user_events(report, "loss")[1]["cause"]  # the part added, by its path
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "tree_structure", "batch['y']", "(absent)", "f32[2]")
    assert cause["detail"] == "pytree structure changed: batch['y'] added"


@requires_private_hooks
def test_closest_signature_is_the_true_nearest(record):
    # JAX's own explainer reports p([x]); p([x, x]) as "list vs dict"; the nearest key is the
    # one-element list, so the cause is the item added to the list.
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def p(xs): return sum(x.sum() for x in (xs.values() if isinstance(xs, dict) else xs))
        x = jnp.ones(2)
        p({"a": x}); p([x]); p([x, x])
    """)
    cause = user_events(report, "p")[2]["cause"]
    assert (cause["code"], cause["argument"], cause["before"], cause["after"]) == (
        "tree_structure", "xs[1]", "(absent)", "f32[2]")


@requires_private_hooks
def test_arg_passing_positional_vs_keyword(record):
    _, report = record("""
        import functools, jax, jax.numpy as jnp
        @functools.partial(jax.jit, static_argnames=("mode",))
        def k(x, mode): return x
        k(jnp.ones(3), mode="a"); k(jnp.ones(3), "a")
    """)
    cause = user_events(report, "k")[1]["cause"]
    assert cause["code"] == "arg_passing"
    assert cause["before"] == "1 positional + mode=" and cause["after"] == "2 positional"


@requires_private_hooks
def test_arg_passing_default_left_out(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x, y=1.0): return x * y
        f(jnp.ones(3)); f(jnp.ones(3), 2.0)
    """)
    cause = user_events(report, "f")[1]["cause"]
    assert (cause["code"], cause["argument"]) == ("arg_passing", "y")


@requires_private_hooks
def test_new_function_lambda_recreated_in_loop(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        x = jnp.ones(3)
        for i in range(3):
            jax.jit(lambda v: v + 1)(x)
    """)
    assert causes_of(report, "<lambda>") == ["first_compile", "new_function", "new_function"]
    [suggestion] = [s for s in report["suggestions"] if s["code"] == "new_function"]
    assert "the lambda defined at" in suggestion["message"]
    assert "prog.py:5" in suggestion["message"]  # the line that creates the new object
    assert "3 compiles -> 1" in suggestion["message"] and suggestion["predicted_compiles"] == 1


@requires_private_hooks
def test_new_function_bound_method_rewrapped(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        class Model:
            def step(self, x): return x * 2
        m = Model()
        for i in range(2):
            jax.jit(m.step)(jnp.ones(3))
    """)
    assert causes_of(report, "step") == ["first_compile", "new_function"]
    [suggestion] = [s for s in report["suggestions"] if s["code"] == "new_function"]
    assert "jax.jit(obj.step) wraps a new bound method" in suggestion["message"]
    assert "prog.py:7" in suggestion["message"]


@requires_private_hooks
def test_tracing_context_config_change(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x): return x + 1
        f(jnp.ones(3))
        with jax.numpy_rank_promotion("raise"):
            f(jnp.ones(3))
    """)
    cause = user_events(report, "f")[1]["cause"]
    assert (cause["code"], cause["argument"]) == ("tracing_context", "jax_numpy_rank_promotion")
    assert (cause["before"], cause["after"]) == ("'allow'", "'raise'")


@requires_private_hooks
def test_committed_device_compiles_without_retrace(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x): return x + 1
        f(jnp.ones(3))
        f(jax.device_put(jnp.ones(3), jax.devices()[0]))
    """)
    events = user_events(report, "f")
    assert [(e["traced"], e["compiled"]) for e in events] == [(True, True), (False, True)]
    cause = events[1]["cause"]
    assert (cause["code"], cause["argument"]) == ("sharding", "x")
    assert "SingleDeviceSharding" in cause["after"]


@requires_private_hooks  # public-only mode reports every later cause as unknown
def test_jaxpr_derived_by_grad_is_a_compile_without_retrace(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x): return jnp.sin(x)
        f(jnp.ones(3))
        jax.grad(lambda v: f(v).sum())(jnp.ones(3))
    """)
    later = user_events(report, "f")[1:]
    assert later and all(not e["traced"] and e["compiled"] for e in later)
    assert {e["cause"]["code"] for e in later} == {"derived_jaxpr"}
    assert {e["kind"] for e in later} == {"compiled_without_retrace"}
    assert "grad" in later[0]["cause"]["detail"]


@requires_private_hooks
def test_trace_error_names_argument_and_suggests_static(record):
    code, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def h(x, size_param):
            if size_param > 5:
                return x * 2
            return x
        h(jnp.ones(3), 3)
    """)
    assert code == 3
    event = user_events(report, "h")[0]
    assert event["error"]["type"] == "TracerBoolConversionError"
    assert event["error"]["argument"] == "size_param"
    assert not event["compiled"]
    [suggestion] = [s for s in report["suggestions"] if s["function"] == "h"]
    assert "static_argnames=('size_param',)" in suggestion["message"]
    assert "jax.lax.cond" in suggestion["message"]


@requires_private_hooks
def test_a_nested_trace_comes_after_the_trace_it_is_in_however_long_the_outer_hook_takes(record):
    # outer's signature (3,000 leaves) takes the hook far longer to read than inner's trace
    # lasts: the session's order must come from when each trace began, not from when its hook
    # was done
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def inner(x): return x * 2
        @jax.jit
        def outer(x, params): return inner(x) + sum(p.sum() for p in params[:2])
        params = [jnp.ones(2) for _ in range(3000)]
        for n in (3, 4, 5):
            outer(jnp.ones(n), params)
    """)
    order = [(e["function"], e["depth"]) for e in report["events"]
             if e["function"] in ("outer", "inner")]
    assert order == [("outer", 0), ("inner", 1)] * 3


@requires_private_hooks
def test_nested_jit_traces_without_compiling(record):
    _, report = record("""
        import jax, jax.numpy as jnp
        @jax.jit
        def inner(x): return x * 2
        @jax.jit
        def outer(x): return inner(x) + inner(x + 1)
        outer(jnp.ones(3)); outer(jnp.ones(4))
    """)
    inner = user_events(report, "inner")
    outer = user_events(report, "outer")
    assert [(e["traced"], e["compiled"], e["depth"]) for e in inner] == [
        (True, False, 1), (True, False, 1)]
    assert [(e["traced"], e["compiled"], e["depth"]) for e in outer] == [
        (True, True, 0), (True, True, 0)]
    assert inner[1]["cause"]["code"] == "shape"
    assert inner[1]["call_site"].endswith("(outer)")
