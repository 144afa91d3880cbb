"""Edges of compile cost and cache keys on real JAX: ``max_equations`` in public-only mode is a
failure saying why (a warning with --allow-unrecorded), not a silent pass; the "inlined twice" pattern stays quiet
for the textbook loss used under grad and again for evaluation, and is worded honestly where
it is large; the guard's recorder does no compile-cost walk and takes no cache key apart; the
cache-key hook prints a module with its large constants elided and hashes them instead."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import budget
from jax_support import requires_private_hooks

import recompile_cli
from recompile_cli.capture.jax.programs import cache_key, cache_key_text, cost, module_constants
from recompile_cli.capture.recorder import Recorder

TRAIN_EVAL = '''
import jax
import jax.numpy as jnp

LAYERS = {layers}


@jax.jit
def loss_fn(params, x, y):
    h = x
    for _ in range(LAYERS):
        h = jnp.tanh(h @ params)
    return jnp.mean((h.sum(axis=-1) - y) ** 2)


@jax.jit
def train_step(params, x, y):
    return params - 0.01 * jax.grad(loss_fn)(params, x, y)


params, x, y = jnp.eye(8) * 0.5, jnp.ones((4, 8)), jnp.zeros(4)
for _ in range(3):
    params = train_step(params, x, y)
    print(float(loss_fn(params, x, y)))  # evaluation: the same loss, alone
'''


@requires_private_hooks
def test_a_loss_under_grad_and_alone_gets_no_inlined_advice(cli, tmp_path):
    program = tmp_path / "train_eval.py"
    program.write_text(TRAIN_EVAL.format(layers=3))
    result, report = cli.json("run", program, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    step = next(e for e in report["events"] if e["function"] == "train_step")
    (inlined,) = step["cost"]["inlined"]
    assert inlined[0].startswith("loss_fn@")  # recorded, but small: not worth a word
    assert report["compile_cost"]["patterns"] == []


@requires_private_hooks
def test_a_large_inlined_loss_is_named_as_the_cost_it_is(cli, tmp_path):
    program = tmp_path / "train_eval.py"
    program.write_text(TRAIN_EVAL.format(layers=80))
    result, report = cli.json("run", program, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (pattern,) = [p for p in report["compile_cost"]["patterns"] if p["kind"] == "inlined_twice"]
    message = pattern["message"]
    assert pattern["function"] == "loss_fn"
    # loss_fn compiled once on its own, though called three times; train_step's compile apart
    assert " is compiled on its own (once) and again inside train_step: " in message
    assert "That is expected when loss_fn is also used alone" in message
    assert "drop the standalone call" not in message


def test_max_equations_in_public_only_mode_fails_unless_allowed(cli, tmp_path):
    """No equations are recorded without the private hooks: the limit cannot be checked, so the
    gate fails saying why; --allow-unrecorded (or the budget's allow_unrecorded) makes it a
    warning."""
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(x):
            return x * 2

        step(jnp.ones(3))
    """))
    path = budget(tmp_path, "targets:\n  - script: prog.py\n    budgets:\n"
                            "      step: {max_equations: 0}\n")
    result = cli("check", "--hook-mode", "public-only", path)
    assert result.exit_code == 1, result.output
    assert "limits max_equations, but this run recorded no equations" in result.output
    assert "not recorded / 0" in result.output and "FAIL" in result.output
    allowed = cli("check", "--hook-mode", "public-only", "--allow-unrecorded", path)
    assert allowed.exit_code == 0, allowed.output
    assert "limits max_equations, but this run recorded no equations" in allowed.output
    path = budget(tmp_path, "targets:\n  - script: prog.py\n    budgets:\n"
                            "      step: {max_equations: 0, allow_unrecorded: true}\n")
    assert cli("check", "--hook-mode", "public-only", path).exit_code == 0


@requires_private_hooks
def test_the_guard_walks_no_compile_cost_and_takes_no_key_apart(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(cost, "cost_of", lambda *a, **k: calls.append("cost"))
    install = cache_key.KeyHooks.install  # (installed with or without a cache folder)
    monkeypatch.setattr(cache_key.KeyHooks, "install",
                        lambda self: (calls.append("keys"), install(self))[1])

    def compile_once(x):
        jax.jit(lambda x: jnp.sin(x) + 1)(x)

    with recompile_cli.guard(max_compiles=5, on="warn"):
        compile_once(jnp.ones(7))
    assert calls == []
    with Recorder():  # what a profiling run pays, for comparison
        compile_once(jnp.ones(9))
    assert calls[0] == "keys" and "cost" in calls


@pytest.fixture
def embedded_constants():
    """Captured constants embedded in the program, as JAX embeds them up to 0.12.0: JAX 0.12.1
    passes them as arguments by default (``jax_use_simplified_jaxpr_constants``), and a
    program then holds no large constant to elide."""
    if "jax_use_simplified_jaxpr_constants" not in getattr(jax.config, "values", {}):
        yield
        return
    before = jax.config.values["jax_use_simplified_jaxpr_constants"]
    jax.config.update("jax_use_simplified_jaxpr_constants", False)
    try:
        yield
    finally:
        jax.config.update("jax_use_simplified_jaxpr_constants", before)


@requires_private_hooks
@pytest.mark.parametrize("size", [1 << 12, 1 << 18])
def test_the_key_hook_prints_large_constants_elided_and_hashes_them(size, embedded_constants):
    table = np.linspace(0.0, 1.0, size, dtype=np.float32)
    other = table[::-1].copy()

    def lowered(values):
        return jax.jit(lambda x: x + jnp.asarray(values) * 0.5).lower(
            jnp.ones(len(values), jnp.float32)).compiler_ir()

    asm, digests = cache_key._module_text(lowered(table))
    assert asm.count(cache_key_text.ELIDED) == len(digests) == 1
    assert len(asm) < 10_000  # the same however large the constant
    assert digests[0].endswith(f":{size * 4}")
    values = [c.value for c in cache_key_text.normalise(asm, elided=digests).constants]
    assert values[0].startswith(f"{size * 4} bytes, sha256 ") and "0.5" in values
    assert cache_key._module_text(lowered(other))[1] != digests
    assert module_constants.large_constant_digests(lowered(table[:8])) == []  # printed whole
