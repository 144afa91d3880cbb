"""Whose a jitted function is and where its function object was made, on real programs: a
library's function that the user jitted is the user's (and counts against the gate), a jit that
a package applied to its own function stays that package's, a library's jit wrapper is named
after the function it wraps, and a new function object is blamed on the line that made it."""

from __future__ import annotations

import functools
import sys
import textwrap

import pytest
from helpers import on_python_path, user_events, user_functions
from jax_support import requires_private_hooks

pytest.importorskip("optax")
pytest.importorskip("flax")
pytest.importorskip("equinox")


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Write a package into a site-packages folder on ``sys.path``: installed, so a library."""
    site = tmp_path / "site-packages"

    def install(name: str, source: str) -> None:
        package = site / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(textwrap.dedent(source))
        on_python_path(monkeypatch, str(site))
        monkeypatch.delitem(sys.modules, name, raising=False)

    yield install
    for name in [p.name for p in site.iterdir()] if site.exists() else []:
        sys.modules.pop(name, None)


@pytest.fixture
def record(cli, program, tmp_path):
    def run(source: str, *options: str):
        result, report = cli.json("run", *options, program("prog", source), tmp_path=tmp_path)
        return result, report

    return run


def _rows(report: dict) -> dict[str, tuple[str, str, int]]:
    return {f["name"]: (f["owner"], f["package"], f["compiles"]) for f in report["functions"]}


USERS_JIT_OF_LIBRARIES = """
    import jax, jax.numpy as jnp, optax

    opt = optax.adam(1e-3)
    update = jax.jit(opt.update)   # a library's function, jitted here
    sin = jax.jit(jnp.sin)         # JAX's jitted function, jitted again here
    for n in (3, 4):
        params = {"w": jnp.ones(n)}
        update(params, opt.init(params), params)
        sin(jnp.ones(n))
        jnp.cos(jnp.ones(n))       # JAX's own jit, called directly: JAX's
        jax.random.normal(jax.random.key(0), (n,))   # JAX's internal _normal: JAX's
"""


@requires_private_hooks
def test_a_library_function_jitted_by_the_user_is_the_users(record, cli, program):
    result, report = record(USERS_JIT_OF_LIBRARIES)
    rows = _rows(report)
    assert rows["update_fn"] == ("user", "optax", 2)
    assert rows["sin"] == ("user", "jax", 2)
    assert rows["cos"][:2] == rows["_normal"][:2] == ("jax", "jax")
    assert rows["broadcast_in_dim"][:2] == ("jax", "jax")  # an eager op
    causes = [(e["cause"]["code"], e["cause"]["argument"]) for e in user_events(report, "sin")
              if e["owner"] == "user"]
    assert causes == [("first_compile", None), ("shape", "x")]  # not JAX's own sin traces
    update = [e for e in user_events(report, "update_fn") if e["cause"]["code"] == "shape"]
    assert update[0]["cause"]["before"] == "f32[3]" and update[0]["call_site"].endswith(
        "prog.py:9 (<module>)")
    # shown as the user's, with the library's name
    assert "update_fn (optax)" in result.stdout and "sin (jax)" in result.stdout
    assert "no user function" not in result.stdout
    # the gate counts them: JAX compiled each twice
    gated = cli("run", "--max-compiles", "1", program("gated", USERS_JIT_OF_LIBRARIES))
    assert gated.exit_code == 1, gated.stdout
    assert "update_fn: 2 compiles, budget 1" in gated.stdout
    assert "sin: 2 compiles, budget 1" in gated.stdout
    assert "cos:" not in gated.stdout


@requires_private_hooks
def test_flax_and_equinox_functions_jitted_or_transformed_by_the_user(record):
    _, report = record("""
        import jax, jax.numpy as jnp, equinox as eqx, optax
        import flax.linen as nn

        model = nn.Dense(2)
        params = model.init(jax.random.key(0), jnp.ones((1, 4)))
        apply = jax.jit(model.apply)
        batched = jax.vmap(apply, in_axes=(None, 0))   # called through a transformation
        opt = optax.sgd(0.1)
        update = eqx.filter_jit(opt.update)            # a library's wrapper, applied here
        for n in (3, 5):
            apply(params, jnp.ones((n, 4)))
            batched(params, jnp.ones((2, n, 4)))
            p = {"w": jnp.ones(n)}
            update(p, opt.init(p), p)
    """)
    rows = _rows(report)
    assert rows["apply"][:2] == ("user", "flax")
    assert rows["apply"][2] == 4  # two shapes, called directly and under vmap
    assert rows["update_fn"] == ("user", "optax", 2)
    assert all("equinox" not in (e["defined_at"] or "") for e in user_events(report, "update_fn"))
    # flax's own jits and lambdas inside model.init stay flax's
    assert [name for name, (owner, package, _) in rows.items()
            if owner == "user" and package == "flax"] == ["apply"]


@requires_private_hooks
def test_a_jit_a_package_applied_to_its_own_function_stays_the_packages(record, installed):
    installed("originlib", """
        import jax

        @jax.jit
        def helper(x):
            return x * 2

        def _shift(x):
            return x + 1

        shifted = jax.jit(_shift)   # exported under another name

        def plain(x):
            return x * 3
    """)
    result, report = record("""
        import jax, jax.numpy as jnp, originlib
        plain = jax.jit(originlib.plain)
        for n in (3, 4):
            originlib.helper(jnp.ones(n))
            originlib.shifted(jnp.ones(n))
            plain(jnp.ones(n))
    """, "--max-compiles", "1")
    rows = _rows(report)
    assert rows["helper"] == ("library", "originlib", 2)
    assert rows["_shift"] == ("library", "originlib", 2)
    assert rows["plain"] == ("user", "originlib", 2)
    assert set(user_functions(report)) == {"plain"}
    assert result.exit_code == 1 and "plain: 2 compiles, budget 1" in result.stdout
    assert "helper:" not in result.stdout and "_shift:" not in result.stdout


@requires_private_hooks
def test_a_library_wrapper_is_named_after_the_function_it_wraps(record, installed):
    # Like diffrax.diffeqsolve: a package wraps its own function with equinox.filter_jit.
    installed("fakediffrax", """
        import equinox as eqx

        @eqx.filter_jit
        def diffeqsolve(y0, steps):
            return y0 * steps

        def vector_field(y):
            return -y
    """)
    result, report = record("""
        import equinox as eqx, jax.numpy as jnp, fakediffrax
        field = eqx.filter_jit(fakediffrax.vector_field)
        for n in (3, 4):
            fakediffrax.diffeqsolve(jnp.ones(n), 2)
            field(jnp.ones(n))
    """, "--count-calls")
    rows = _rows(report)
    assert rows["diffeqsolve"] == ("library", "fakediffrax", 2)
    calls = {f["name"]: f["calls"] for f in report["functions"]}
    assert calls["diffeqsolve"] == calls["vector_field"] == 2  # counted under the same key
    assert rows["vector_field"] == ("user", "fakediffrax", 2)
    solve = next(f for f in report["functions"] if f["name"] == "diffeqsolve")
    assert solve["defined_at"].endswith("fakediffrax/__init__.py:4")
    assert not any("equinox" in (f["defined_at"] or "") for f in report["functions"]
                   if f["name"] in ("diffeqsolve", "vector_field"))
    assert sorted((r["function"], r["owner"]) for r in report["cause_table"]) == [
        ("diffeqsolve", "library"), ("vector_field", "user")]
    assert "diffeqsolve (fakediffrax)" in result.stdout
    assert "vector_field (fakediffrax)" in result.stdout and "equinox" not in result.stdout


@requires_private_hooks
def test_a_new_function_object_is_blamed_on_the_line_that_made_it(record):
    _, report = record("""
        import functools, jax, jax.numpy as jnp
        def f(x, a):
            return x * a
        def make(a):
            return functools.partial(f, a=a)
        x = jnp.ones(3)
        for i in range(2):
            g = functools.partial(f, a=2.0)
            step = jax.jit(g)
            step(x)
        for i in range(2):
            h = jax.jit(lambda v: v + 1)
            h(x)
        for i in range(2):
            k = jax.jit(make(2.0))
            k(x)
        for i in range(2):
            jax.jit(functools.partial(f, a=3.0))(x)
        class Model:
            def apply(self, v):
                return v * 2
        for i in range(2):
            model = Model()
            run = jax.jit(model.apply)
            run(x)
        calls = [jax.jit(functools.partial(f, a=4.0)) for _ in range(2)]
        calls[0](x); calls[1](x)
    """)
    made = {}  # call line -> (where the object was made, the cause's detail)
    for event in report["events"]:
        if event["owner"] == "user" and event["cause"]["code"] == "new_function":
            call = int(event["call_site"].rsplit(":", 1)[1].split()[0])
            created = event["signature"]["created_at"]
            made[call] = (created and int(created.rsplit(":", 1)[1]), event["cause"]["detail"])
    assert made[11][0] == 9 and "functools.partial object on every call, from" in made[11][1]
    assert made[14][0] == 13 and "lambda object with the same code, made at" in made[14][1]
    assert made[17][0] == 16  # the jit wrapper around make()'s partial
    assert made[19][0] == 19  # made in the calling statement itself
    assert made[26][0] == 25 and "bound method" in made[26][1]
    # held in a list: where it was made is not known, and the cause says so
    assert made[28][0] is None and "where it is made is not known" in made[28][1]
    for call, (line, detail) in made.items():
        if line is not None:
            assert f"prog.py:{line}" in detail, (call, detail)


def test_a_librarys_closure_is_named_by_the_factory_the_user_called():
    """Issue 43: ``jax.checkpoint_policies.save_from_both_policies(...)`` showed as ``policy
    (ad_checkpoint.py:174)``, a name the user never wrote; the user's own closures keep their
    name and place. (``functools.lru_cache(maxsize=1)`` makes such a closure on every Python
    and JAX; JAX 0.12 returns one of the two policies itself for that call.)"""
    import jax

    from recompile_cli.capture.code.function_names import function_name

    policies = jax.checkpoint_policies
    made = policies.save_from_both_policies(policies.nothing_saveable,
                                            policies.everything_saveable)
    if "<locals>" in made.__qualname__:  # JAX 0.10: a closure of the factory
        assert function_name(made) == "save_from_both_policies(...)"
    assert function_name(functools.lru_cache(maxsize=1)) == "lru_cache(...)"

    def factory():
        def inner(x):
            return x
        return inner

    assert function_name(factory()) == (
        f"inner (test_origins.py:{factory.__code__.co_firstlineno + 1})")


INTROSPECTS = """
import functools, inspect
import jax, jax.numpy as jnp

def loss(x):
    return jnp.sum(x * 2)

step = jax.jit(loss)
assert step.__wrapped__ is loss, step.__wrapped__
assert inspect.unwrap(step) is loss
assert step.__name__ == "loss" and step.__qualname__ == "loss"
assert inspect.signature(step) == inspect.signature(loss)
assert step.lower(jnp.ones(3)).compile()(jnp.ones(3)) == 6.0
print("introspected", float(step(jnp.ones(3))))
"""


def test_count_calls_keeps_the_jitted_object_as_the_program_sees_it(cli, program):
    """Issue 44: under --count-calls ``__wrapped__`` was the jitted object, not the function."""
    result = cli("run", "--count-calls", program("introspects", INTROSPECTS))
    assert result.exit_code == 0, result.output
    assert "introspected 6.0" in result.stdout
