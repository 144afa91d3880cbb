"""Stale statics on real JAX: a static equal (``__eq__``/``__hash__``) to the one an executable
was compiled for while its state differs is warned with both values under ``--count-calls``;
a truly equal static, a differing field the traced code never reads, and a plain run with no
later miss are not (the plain run says --count-calls shows every reuse)."""

from __future__ import annotations

import textwrap

import pytest
from jax_support import requires_private_hooks

HEAD = """
import dataclasses
from functools import partial
import jax, jax.numpy as jnp

class Config:
    def __init__(self, name, dropout, log_every=1):
        self.name, self.dropout, self.log_every = name, dropout, log_every
    def __eq__(self, other):
        return isinstance(other, Config) and self.name == other.name
    def __hash__(self):
        return hash(self.name)

x = jnp.ones(3)
"""


@pytest.fixture
def stale(cli, program, tmp_path):
    """Run a script; returns its stdout, ``{(function, argument): stale static}`` and the
    report's warnings."""

    def run(source: str, *flags: str) -> tuple[str, dict[tuple[str, str], dict], list[str]]:
        result, report = cli.json("run", *flags, program("prog", HEAD + textwrap.dedent(source)),
                                  tmp_path=tmp_path)
        assert result.exit_code == 0, result.output
        return result.stdout, {(s["function"], s["argument"]): s
                               for s in report.get("stale_statics", [])}, report["warnings"]

    return run


@requires_private_hooks
def test_a_config_equal_by_name_with_another_dropout_is_warned(stale):
    stdout, found, _ = stale("""
        @partial(jax.jit, static_argnums=1)
        def step(x, cfg):
            return x * cfg.dropout

        step(x, Config("a", 0.1))
        step(x, Config("a", 0.5))
    """, "--count-calls")
    one = found[("step", "cfg")]
    assert one["seen"] == "call"
    assert [(d["path"], d["compiled"], d["called"]) for d in one["differences"]] == [
        ("cfg.dropout", "0.1", "0.5")]
    assert one["compares"] == "`Config.__eq__` compares `name` only"
    assert "`cfg.dropout=0.1` ran with `cfg.dropout=0.5`" in stdout


@requires_private_hooks
def test_a_dataclass_field_compared_out_is_warned(stale):
    stdout, found, _ = stale("""
        @dataclasses.dataclass(frozen=True)
        class Opts:
            scale: float = dataclasses.field(compare=False)
            tag: str = "a"

        @partial(jax.jit, static_argnames="opts")
        def f(x, opts):
            return x * opts.scale

        f(x, opts=Opts(1.0))
        f(x, opts=Opts(2.0))
    """, "--count-calls")
    one = found[("f", "opts")]
    assert [(d["path"], d["compiled"], d["called"]) for d in one["differences"]] == [
        ("opts.scale", "1.0", "2.0")]
    assert "compare=False" in one["compares"]
    assert "stale static" in stdout


@requires_private_hooks
def test_a_later_miss_sees_it_without_counting(stale):
    _, found, _ = stale("""
        @partial(jax.jit, static_argnums=1)
        def step(x, cfg):
            return x * cfg.dropout

        step(x, Config("a", 0.1))
        step(jnp.ones(4), Config("a", 0.5))  # another shape: traced again, equal config
    """)
    assert found[("step", "cfg")]["seen"] == "trace"


@requires_private_hooks
def test_equal_statics_and_unread_fields_are_not_warned(stale):
    stdout, found, _ = stale("""
        @dataclasses.dataclass(frozen=True)
        class Same:
            scale: float

        @partial(jax.jit, static_argnums=1)
        def g(x, same):
            return x * same.scale

        @partial(jax.jit, static_argnums=1)
        def unread(x, cfg):
            return x * 2  # log_every differs, but nothing here reads it

        g(x, Same(1.0)); g(x, Same(1.0))
        unread(x, Config("a", 0.1, 1)); unread(x, Config("a", 0.1, 5))
    """, "--count-calls")
    assert found == {}
    assert "stale static" not in stdout


@requires_private_hooks
def test_a_plain_run_with_no_later_miss_says_count_calls_sees_reuses(stale):
    _, found, warnings = stale("""
        @partial(jax.jit, static_argnums=1)
        def step(x, cfg):
            return x * cfg.dropout

        step(x, Config("a", 0.1))
        step(x, Config("a", 0.5))
    """)
    assert found == {}
    assert any("--count-calls to see every reuse" in w for w in warnings)


@requires_private_hooks
def test_a_static_self_compared_by_identity_gets_no_hint_without_evidence(stale):
    # purejaxrl's environment wrappers jit their methods with `self` static, JAX's own recipe:
    # an object compared by identity is stale only if changed in place, which nothing here does
    _, found, warnings = stale("""
        class Wrapper:
            def __init__(self, scale):
                self.scale = scale

            @partial(jax.jit, static_argnums=0)
            def step(self, x):
                return x * self.scale

        env = Wrapper(2.0)
        env.step(x); env.step(x)
        Wrapper(3.0).step(x)
    """)
    assert found == {}
    assert not [w for w in warnings if "stale static" in w]


@requires_private_hooks
def test_the_gate_fails_on_a_stale_static(cli, program, tmp_path):
    path = program("prog", HEAD + """
@partial(jax.jit, static_argnums=1)
def step(x, cfg):
    return x * cfg.dropout

step(x, Config("a", 0.1))
step(x, Config("a", 0.5))
""")
    failed = cli("run", "--count-calls", "--max-stale-statics", "0", str(path))
    assert failed.exit_code == 1, failed.output
    assert "max_stale_statics" in failed.output or "stale static" in failed.output
    passed = cli("run", "--count-calls", "--max-stale-statics", "1", str(path))
    assert passed.exit_code == 0, passed.output
    # without counted calls the gate has nothing to check: it fails, never passes blind
    blind = cli("run", "--max-stale-statics", "1", str(path))
    assert blind.exit_code == 1 and "not_recorded" in blind.output, blind.output
    assert "--count-calls" in blind.output
    allowed = cli("run", "--allow-unrecorded", "--max-stale-statics", "1", str(path))
    assert allowed.exit_code == 0, allowed.output


HASHED_BY_STATE = """
    class Rate:
        def __init__(self, r):
            self.r = r
        def __eq__(self, other):
            return isinstance(other, Rate) and self.r == other.r
        def __hash__(self):
            return hash(self.r)

    @partial(jax.jit, static_argnums=1)
    def step(x, rate):
        return x * rate.r

    rate = Rate(1.0)
    first = float(step(x, rate).sum())
    rate.r = 5.0                                # the compiled-for object, changed in place
    same = float(step(x, rate).sum())
    new = float(step(x, Rate(5.0)).sum())       # a new object equal to its new state
    print(f"RESULT {first} {same} {new}")
"""


@requires_private_hooks
def test_a_static_hashed_by_its_state_changed_in_place_is_warned_where_it_ran_stale(stale):
    stdout, found, _ = stale(HASHED_BY_STATE, "--count-calls")
    (line,) = [line for line in stdout.splitlines() if line.startswith("RESULT")]
    ran = [float(v) for v in line.split()[1:]]
    assert ran[0] == 3.0 and ran[2] in (3.0, 15.0)
    if ran[1:] == [15.0, 15.0]:  # JAX traced the new state each time (JAX 0.12.1): not stale
        assert found == {}
        return
    # JAX 0.10.2 ran the program compiled for r=1.0 for both: its key holds that object
    assert ran[1:] == [3.0, 3.0]
    one = found[("step", "rate")]
    assert one["seen"] == "call" and one["seen_times"] == 2
    assert [(d["path"], d["compiled"], d["called"]) for d in one["differences"]] == [
        ("rate.r", "1.0", "5.0")]
    assert "was changed in place after the compile" in one["compares"]


@requires_private_hooks
def test_the_sample_program_is_warned_fails_the_gate_and_its_fix_is_clean(cli, tmp_path):
    from helpers import SAMPLES, user_functions

    sample = SAMPLES / "stale_static.py"
    result, report = cli.json("run", "--count-calls", "--max-stale-statics", "0", sample,
                              tmp_path=tmp_path)
    assert result.exit_code == 1, result.output
    (found,) = report["stale_statics"]
    assert (found["function"], found["argument"], found["seen"]) == ("train_step", "cfg", "call")
    assert [(d["path"], d["compiled"], d["called"]) for d in found["differences"]] == [
        ("cfg.dropout", "0.1", "0.5")]
    assert "`Config.__eq__` compares `name` only" in result.stdout
    # the fix compares every field: a re-compile for the new rate, nothing stale
    fixed, fixed_report = cli.json("run", "--count-calls", "--max-stale-statics", "0", sample,
                                   "--fixed", tmp_path=tmp_path)
    assert fixed.exit_code == 0, fixed.output
    assert not fixed_report.get("stale_statics")
    assert user_functions(fixed_report)["train_step"]["compiles"] == 2
