"""Stale captures on real JAX: only the names traced code loads as globals or closure cells
(its own bytecode and that of the functions, lambdas and comprehensions inside it) are
watched; attribute, method and import names that happen to match a changed global are not."""

from __future__ import annotations

import pytest
from jax_support import requires_private_hooks


@pytest.fixture
def stale(cli, program, tmp_path):
    """Run a script; returns its stdout and ``{(function, variable): stale capture}``."""

    def run(source: str) -> tuple[str, dict[tuple[str, str], dict]]:
        result, report = cli.json("run", program("prog", source), tmp_path=tmp_path)
        assert result.exit_code == 0, result.output
        return result.stdout, {(s["function"], s["variable"]): s
                               for s in report["stale_captures"]}

    return run


@requires_private_hooks
def test_attribute_method_and_import_names_are_not_globals(stale):
    stdout, found = stale("""
        import typing
        import jax, jax.numpy as jnp

        class Batch(typing.NamedTuple):
            tokens: jax.Array
            mask: jax.Array

        tokens, mask, tanh, sum, numpy = 1, 2.0, "tanh", 3, "numpy"

        @jax.jit
        def loss(batch):
            import jax.numpy  # an import binds a local, it reads no global `numpy`
            return jnp.tanh(batch.tokens * batch.mask).sum() + jax.numpy.ones(())

        loss(Batch(jnp.ones(3), jnp.ones(3)))
        tokens, mask, tanh, sum, numpy = 10, 20.0, "changed", 30, "other"
        loss(Batch(jnp.ones(3), jnp.ones(3)))
    """)
    assert found == {}
    assert "stale capture" not in stdout


@requires_private_hooks
def test_a_real_stale_global_and_closure_value_still_warn(stale):
    stdout, found = stale("""
        import jax, jax.numpy as jnp
        SCALE = 2.0

        def make(offset):
            @jax.jit
            def step(batch):
                return batch["x"] * SCALE + offset
            return step

        offset = 1.0
        step = make(offset)
        step({"x": jnp.ones(2)})
        SCALE = 5.0

        def run():
            factor = 3
            f = jax.jit(lambda x: x * factor)
            f(jnp.ones(2))
            factor = 4
        run()
    """)
    assert set(found) == {("step", "SCALE"), ("<lambda>", "factor")}
    scale, factor = found[("step", "SCALE")], found[("<lambda>", "factor")]
    assert (scale["scope"], scale["traced_value"], scale["current_value"]) == (
        "global", "2.0", "5.0")
    assert (factor["scope"], factor["traced_value"], factor["current_value"]) == (
        "closure", "3", "4")
    assert "`SCALE`, traced as 2.0 but now 5.0" in stdout


@requires_private_hooks
def test_globals_of_nested_helpers_lambdas_and_comprehensions_count(stale):
    _, found = stale("""
        import jax, jax.numpy as jnp
        SCALE, SHIFT, POWERS, UNUSED = 2.0, 1.0, (1, 2), 0

        @jax.jit
        def step(x):
            def helper(v):
                return v * SCALE
            shift = lambda v: v + SHIFT
            return shift(helper(x)) + sum(x ** p for p in POWERS)

        step(jnp.ones(2))
        SCALE, SHIFT, POWERS, UNUSED = 3.0, 4.0, (1, 2, 3), 9
    """)
    assert {variable: (s["scope"], s["traced_value"], s["current_value"])
            for (_, variable), s in found.items()} == {
        "SCALE": ("global", "2.0", "3.0"), "SHIFT": ("global", "1.0", "4.0"),
        "POWERS": ("global", "(1, 2)", "(1, 2, 3)")}


@requires_private_hooks
def test_a_closure_cell_read_only_by_a_nested_function_counts(stale):
    _, found = stale("""
        import jax, jax.numpy as jnp

        def run():
            factor, label = 3, "a"
            @jax.jit
            def step(x):
                def scale(v):
                    return v * factor
                return scale(x)
            step(jnp.ones(2))
            factor, label = 4, "b"
        run()
    """)
    assert {(k, s["scope"], s["traced_value"], s["current_value"])
            for k, s in found.items()} == {(("step", "factor"), "closure", "3", "4")}


@requires_private_hooks
def test_values_read_on_the_host_by_a_callback_are_never_stale(stale):
    """A host callback runs at every call and reads its globals and closure values afresh:
    whatever the callback is (a lambda, a nested function, a functools.partial), whichever
    callback API calls it, and wherever it sits (a cond branch, a scan body, a nested jit)."""
    stdout, found = stale("""
        import functools
        import jax, jax.numpy as jnp
        from jax.experimental import io_callback
        STEP, SCALE, LOGGED, INNER, BRANCH, BODY = 0, 2.0, [], 0, 0, 0

        def run():
            seen = 0

            @jax.jit
            def inner(x):
                jax.debug.callback(lambda v: print("inner", INNER), x)
                return x + 1

            @jax.jit
            def step(x):
                def scaled(v):
                    return (v * SCALE).astype(v.dtype)

                def log(v, tag):
                    LOGGED.append((tag, seen))
                    return v

                shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
                jax.debug.callback(lambda v: print("step", STEP, v.sum()), x)
                y = jax.pure_callback(scaled, shape, x)
                z = io_callback(functools.partial(log, tag="io"), shape, x, ordered=True)
                w = jax.lax.cond(x.sum() > 0, lambda v: jax.pure_callback(
                    lambda u: u + BRANCH, shape, v), lambda v: v, x)

                def body(carry, _):
                    jax.debug.callback(lambda c: print("body", BODY), carry)
                    return carry, None

                carry, _ = jax.lax.scan(body, x, None, length=2)
                return inner(y + z + w + carry)

            for i in range(3):
                global STEP, SCALE, INNER, BRANCH, BODY
                STEP, SCALE, INNER, BRANCH, BODY = i, 2.0 + i, i, i, i
                seen = i
                step(jnp.ones(3))
        run()
    """)
    assert found == {}
    assert "stale capture" not in stdout


@requires_private_hooks
def test_a_value_the_trace_reads_too_is_still_stale(stale):
    """Only what the callback alone reads is left out: a global that the traced code also
    reads (or formats into `jax.debug.print`, which bakes it in) is baked into the program."""
    _, found = stale("""
        import jax, jax.numpy as jnp
        SCALE, SHOWN, LOGGED = 2.0, 1, 0

        @jax.jit
        def step(x):
            jax.debug.callback(lambda v: print(SCALE, LOGGED), x)
            jax.debug.print("shown {} {}", SHOWN, x)
            return x * SCALE

        step(jnp.ones(2))
        SCALE, SHOWN, LOGGED = 3.0, 2, 5
        step(jnp.ones(2))
    """)
    assert {variable: (s["traced_value"], s["current_value"])
            for (_, variable), s in found.items()} == {"SCALE": ("2.0", "3.0"),
                                                       "SHOWN": ("1", "2")}
