"""Wasted compiles on real JAX (issue 47): a compile whose program its function already had is
marked ``same_program_as`` the earlier compile, counted, priced and explained by the part of
the key that changed (an unused static field, a lambda made anew), in every format and by the
``--max-wasted-compiles`` gate; a real shape or static change is never flagged, nor is anything
in the sample programs."""

from __future__ import annotations

import pytest
from helpers import SAMPLES, user_events
from jax_support import requires_private_hooks

from recompile_cli.capture.jax.programs import cost as jax_cost

SEEDED = """
import dataclasses, functools
import jax, jax.numpy as jnp

@dataclasses.dataclass(frozen=True)
class Config:
    scale: float
    log_every: int  # the program never reads it

@functools.partial(jax.jit, static_argnames="cfg")
def step(x, cfg):
    return jnp.tanh(x) * cfg.scale

def main():
    x = jnp.ones(8)
    for n in (10, 20, 30):
        step(x, Config(2.0, n))          # 2 wasted: log_every is not in the program
    step(x, Config(3.0, 10))             # a real static change: a new program
    step(jnp.ones(9), Config(2.0, 10))   # a real shape change: a new program
    for _ in range(3):
        jax.jit(lambda y: y * 2 + 1)(x)  # 2 wasted: the same lambda made anew

main()
"""

REAL_CHANGES = """
import functools
import jax, jax.numpy as jnp

@functools.partial(jax.jit, static_argnums=1)
def g(x, n):
    return x * n

@jax.jit
def h(x):
    return jnp.sin(x)

x = jnp.ones(4)
for n in (2, 3, 2, 4):
    g(x, n)            # each new n is a new constant in the program
for size in (4, 5, 6):
    h(jnp.ones(size))  # each new shape is a new program
for k in (1.0, 2.0):
    jax.jit(lambda y: y * k)(x)  # made anew, and its constant differs: a new program
"""


def _wasted(report: dict) -> dict:
    return report["wasted_compiles"]


@pytest.fixture
def seeded(cli, program, tmp_path):
    result, report = cli.json("run", program("seeded", SEEDED), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    return result, report


@requires_private_hooks
def test_an_unused_static_field_is_a_wasted_compile(seeded):
    _, report = seeded
    events = [e for e in user_events(report, "step") if e["compiled"]]
    first, *again = events
    assert all(e["program_fingerprint"] for e in events)
    assert [e["same_program_as"] for e in again] == [first["seq"], first["seq"], None, None]
    (group,) = [g for g in _wasted(report)["groups"] if g["function"] == "step"]
    assert (group["code"], group["argument"], group["compiles"]) == (
        "static_value", "cfg.log_every", 2)
    assert group["events"] == [again[0]["seq"], again[1]["seq"]]
    assert group["seconds"] > 0
    assert "`cfg.log_every` is static, but the program does not depend on it" in group["why"]
    assert "field(compare=False)" in group["fix"] and "static_argnames" in group["fix"]
    (row,) = [f for f in _wasted(report)["functions"] if f["function"] == "step"]
    assert (row["compiles"], row["programs"], row["wasted"]) == (5, 3, 2)


@requires_private_hooks
def test_a_lambda_made_anew_with_the_same_body_is_a_wasted_compile(seeded):
    _, report = seeded
    events = [e for e in user_events(report, "<lambda>") if e["compiled"]]
    assert len(events) == 3 and events[1]["cause"]["code"] == "new_function"
    assert [e["same_program_as"] for e in events] == [None, events[0]["seq"], events[0]["seq"]]
    (group,) = [g for g in _wasted(report)["groups"] if g["function"] == "<lambda>"]
    assert (group["code"], group["argument"], group["compiles"]) == ("new_function", None, 2)
    assert "create the function once" in group["fix"]
    assert _wasted(report)["yours"]["compiles"] == 4


@requires_private_hooks
def test_the_verdict_and_the_section_in_every_human_format(cli, program, tmp_path):
    path = program("seeded", SEEDED)
    table = cli("run", path).stdout
    assert "wasted compiles: 4 compiles of your functions bought nothing" in table
    verdict = " ".join(table.split())  # wrapped to the terminal's width
    assert "step 2 (static cfg.log_every)" in verdict and "<lambda> 2 (new_function)" in verdict
    assert "Wasted compiles (the same program compiled again)" in table
    markdown = cli("run", "-f", "markdown", path).stdout
    assert "### Wasted compiles" in markdown and "leave `log_every` out of the hash" in markdown
    html = cli("run", "-f", "html", "-o", tmp_path / "r.html", path)
    assert html.exit_code == 0
    page = (tmp_path / "r.html").read_text()
    assert "Wasted compiles" in page and "wasted compiles: 4 compiles" in page


@requires_private_hooks
def test_real_shape_and_static_changes_are_never_flagged(cli, program, tmp_path):
    result, report = cli.json("run", program("real", REAL_CHANGES), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    compiled = [e for e in report["events"] if e["compiled"] and e["owner"] == "user"]
    assert len(compiled) == 3 + 3 + 2
    assert all(e["program_fingerprint"] for e in compiled)
    assert all(e["same_program_as"] is None for e in report["events"])
    assert _wasted(report)["compiles"] == 0 and _wasted(report)["groups"] == []
    assert "wasted compiles" not in result.stdout


@requires_private_hooks
def test_the_gate_fails_over_the_limit_and_passes_at_it(cli, program):
    path = program("seeded", SEEDED)
    over = cli("run", "--max-wasted-compiles", "1", path)
    assert over.exit_code == 1
    assert "FAIL max_wasted_compiles" in over.stdout
    assert ("step: 2 wasted compiles (a program it had compiled already, compiled again), "
            "budget 1") in over.stdout
    assert cli("run", "--max-wasted-compiles", "2", path).exit_code == 0


@requires_private_hooks
def test_a_module_past_the_bound_has_no_fingerprint_and_the_gate_says_so(
        cli, program, tmp_path, monkeypatch):
    monkeypatch.setattr(jax_cost, "MODULE_OP_LIMIT", 2)
    path = program("seeded", SEEDED)
    _, report = cli.json("run", path, tmp_path=tmp_path)
    compiled = [e for e in report["events"] if e["compiled"] and e["owner"] == "user"]
    assert compiled and all("program_fingerprint" not in e for e in compiled)
    assert all(e["same_program_as"] is None for e in report["events"])
    assert _wasted(report)["compiles"] == 0 and _wasted(report)["unknown"] > 0
    gated = cli("run", "--max-wasted-compiles", "5", path)
    assert gated.exit_code == 1 and "no program fingerprint" in gated.stdout
    assert cli("run", "--max-wasted-compiles", "5", "--allow-unrecorded", path).exit_code == 0


@requires_private_hooks
def test_the_sample_program_and_its_fix(cli, tmp_path):
    result, report = cli.json("run", SAMPLES / "wasted_compiles.py", tmp_path=tmp_path)
    assert result.exit_code == 0
    found = {(g["function"], g["code"], g["argument"]): g["compiles"]
             for g in _wasted(report)["groups"]}
    assert found == {("train_step", "static_value", "cfg.log_every"): 2,
                     ("<lambda>", "new_function", None): 2}
    result, report = cli.json("run", SAMPLES / "wasted_compiles.py", "--fixed",
                              tmp_path=tmp_path)
    assert result.exit_code == 0 and _wasted(report)["groups"] == []


SAMPLE_RUNS = [
    ("profile", "shapes.py:slow_function", "--args", "shapes.yaml"),
    ("profile", "static_args.py:example_function_static", "--args", "static_args.yaml"),
    ("profile", "lax_cond.py:example_function_lax", "--args", "lax_cond.yaml"),
    ("run", "train_loop.py", "--epochs", "2"),
    ("run", "slow_step.py", "--steps", "20"),
    ("run", "sweep.py", "0.1"),
    ("run", "heavy.py"),
]


@requires_private_hooks
@pytest.mark.parametrize("command", SAMPLE_RUNS, ids=lambda c: c[1])
def test_the_sample_programs_have_no_wasted_compile(cli, tmp_path, command):
    verb, *args = command
    result, report = cli.json(verb, *[SAMPLES / a if a.endswith((".py", ".yaml")) or ".py:" in a
                                      else a for a in args], tmp_path=tmp_path)
    assert report is not None, result.output
    wasted = _wasted(report)
    assert wasted["fingerprinted"] > 0 and wasted["note"] is None
    assert wasted["compiles"] == 0 and wasted["groups"] == [], wasted
    assert all(e["same_program_as"] is None for e in report["events"])
    assert not report.get("stale_statics"), report["stale_statics"]


@requires_private_hooks
@pytest.mark.parametrize("command", [c for c in SAMPLE_RUNS if c[0] == "run"] + [
    ("run", "wasted_compiles.py"), ("run", "flax_train.py")], ids=lambda c: c[1])
def test_the_sample_programs_have_no_stale_static_at_any_call(cli, tmp_path, command):
    """Every call checked (``--count-calls``): no static of the samples ran stale."""
    verb, *args = command
    result, report = cli.json(verb, "--count-calls", *[SAMPLES / a if a.endswith(".py") else a
                                                       for a in args], tmp_path=tmp_path)
    assert report is not None, result.output
    assert sum(report["calls"].values()) > 0  # the calls were counted
    assert not report.get("stale_statics"), report["stale_statics"]
    assert "stale" not in result.stdout


@requires_private_hooks
def test_public_only_says_why_none_can_be_told(cli, tmp_path):
    result, report = cli.json("run", "--hook-mode", "public-only", SAMPLES / "shapes.py",
                              tmp_path=tmp_path)
    assert result.exit_code == 0
    assert "private hooks" in _wasted(report)["note"]
    assert all("program_fingerprint" not in e for e in report["events"])


POLICIES = """
import functools
import jax, jax.numpy as jnp

@functools.partial(jax.jit, static_argnums=1)
def step(x, policy):
    return jax.checkpoint(lambda y: jnp.sin(y) * 2, policy=policy)(x)

def make_policy():  # a checkpoint policy made per step: a new function object each time
    def policy(*args, **params):
        return False  # saves nothing: the same program whichever object it is
    return policy

for _ in range(3):
    step(jnp.ones(3), make_policy())
"""


@requires_private_hooks
def test_a_static_compared_by_identity_is_made_once_not_taken_out_of_the_key(
        cli, program, tmp_path):
    """A function passed as a static (a checkpoint policy) must stay static: the fix for the
    same program compiled again is to make it once, not to stop passing it as static."""
    result, report = cli.json("run", program("policies", POLICIES), tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    (group,) = _wasted(report)["groups"]
    assert (group["argument"], group["compiles"]) == ("policy", 2)
    assert "compared by identity" in group["why"]
    assert group["fix"].startswith("make `policy` once") and "static_arg" not in group["fix"]
