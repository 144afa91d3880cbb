"""Calls that JAX refuses (a static argument it cannot hash, or whose ``__hash__`` or
``__eq__`` raises) are events with their cause under the function that was called, whether or
not the program catches the error: the argument down to the part JAX could not hash, and
advice under that function (never "(a jitted call)"). Caught refusals are seen through
``sys.monitoring`` on Python 3.12+, and through counted calls (``--count-calls``) on any
Python. The events log carries them to ``report``. Real JAX."""

from __future__ import annotations

import sys

import pytest
from jax_support import requires_private_hooks

pytestmark = requires_private_hooks
CATCHES = sys.version_info >= (3, 12)  # sys.monitoring sees exceptions the program catches

PROGRAM = """
import dataclasses, functools
from typing import Any, NamedTuple
import jax, jax.numpy as jnp

class Cfg(NamedTuple):
    lr: Any
    steps: Any

class BadHash:
    def __hash__(self):
        raise RuntimeError("no hashing")

class BadEq:
    def __hash__(self):
        return 1
    def __eq__(self, other):
        raise RuntimeError("no comparing")

@dataclasses.dataclass
class Model:  # eq=True without frozen=True: unhashable
    k: int

    @functools.partial(jax.jit, static_argnums=0)
    def apply(self, x):
        return x * self.k

def step(x, cfg):
    return x * 2

by_name = jax.jit(step, static_argnames="cfg")
by_position = jax.jit(step, static_argnums=1)
x = jnp.ones(3)
by_name(x, cfg=(1, 2))
by_position(x, BadEq())
cfg, model = Cfg(0.1, {3}), Model(2)
CALLS = [lambda: by_name(x, cfg=[1, 2]), lambda: by_position(x, {"lr": 0.1}),
         lambda: by_name(x, cfg=(0.1, [2])), lambda: by_name(x, cfg=cfg),
         lambda: by_position(x, BadHash()), lambda: by_position(x, BadEq()),
         lambda: model.apply(x)]
for call in CALLS[:COUNT]:
    try:
        call()
    except (ValueError, TypeError, RuntimeError):
        pass
LAST
"""

# (function, argument, what the advice says) of each refused call of PROGRAM, in order; one
# piece of advice per function, argument and why (the dict's is the list's)
REFUSED = [("step", "cfg", "is or holds a `list` (`[1, 2]`)"),
           ("step", "cfg", None),
           ("step", "cfg[1]", "is or holds a `list` (`[2]`)"),
           ("step", "cfg.steps", "is or holds a `set` (`{3}`)"),
           ("step", "cfg", "`BadHash.__hash__` of static argument `cfg` raised RuntimeError"),
           ("step", "cfg", "comparing static argument `cfg` (a `BadEq`) with an earlier value"),
           ("apply", "self", "is or holds a `Model` (`Model(k=2)`)")]


def refused(report: dict) -> list[tuple[str, str | None]]:
    return [(e["function"], e["error"]["argument"]) for e in report["events"]
            if e.get("error") and e["error"].get("refused")]


def run(cli, program, tmp_path, *options: str, count: int = len(REFUSED), last: str = ""):
    script = program("refuse", PROGRAM.replace("COUNT", str(count)).replace("LAST", last))
    return cli.json("run", *options, script, tmp_path=tmp_path)


@pytest.mark.skipif(not CATCHES, reason="Python 3.11 has no sys.monitoring: see the "
                    "--count-calls test")
def test_caught_refusals_are_events_of_the_function_called(cli, program, tmp_path):
    result, report = run(cli, program, tmp_path)
    assert result.exit_code == 0, result.output
    assert_each_refusal(report, result.stdout)


def test_counted_calls_record_caught_refusals_on_any_python(cli, program, tmp_path):
    result, report = run(cli, program, tmp_path, "--count-calls")
    assert result.exit_code == 0, result.output
    assert_each_refusal(report, result.stdout)


def assert_each_refusal(report: dict, stdout: str) -> None:
    assert refused(report) == [(f, a) for f, a, _ in REFUSED]
    advice = {(s["function"], s["message"]) for s in report["suggestions"]
              if s["message"].startswith("JAX refused a call")}
    for function, _, said in REFUSED:
        assert said is None or any(f == function and said in m for f, m in advice), said
    assert len(advice) == len([said for *_, said in REFUSED if said])
    assert not any(s["function"] == "(a jitted call)" for s in report["suggestions"])
    headline = stdout.splitlines()[1:3]
    assert headline[0].startswith("step: 2 compiles") and headline[0].endswith(
        "6 calls refused by JAX (static `cfg` 4, static `cfg[1]` 1, static `cfg.steps` 1)")
    assert headline[1] == "apply: 0 compiles, 1 call refused by JAX (static `self`)"


def test_an_uncaught_refusal_is_filed_under_its_function(cli, program, tmp_path):
    """Without sys.monitoring or counting, the refusal that ends the program is still read
    from its traceback, and its advice is the function's, not "(a jitted call)"."""
    result, report = run(cli, program, tmp_path, count=0,
                         last="by_name(x, cfg=(0.1, [2]))")
    assert result.exit_code == 3  # the target raised
    assert refused(report) == [("step", "cfg[1]")]
    (said,) = [s for s in report["suggestions"] if "refused" in s["message"]]
    assert said["function"] == "step" and "`cfg[1]` is or holds a `list` (`[2]`)" in said[
        "message"]
    assert "1 call refused by JAX (static `cfg[1]`)" in result.stdout.splitlines()[1]
    assert "refused" in next(row for row in result.stdout.splitlines()
                             if "refuse.py:" in row and "cfg[1]" in row)


def test_a_refusal_reaches_report_through_the_events_log(cli, program, tmp_path):
    log = tmp_path / "events.jsonl"
    result, report = run(cli, program, tmp_path, "--events-log", str(log), count=0,
                         last="by_position(x, [3])")
    assert result.exit_code == 3 and refused(report) == [("step", "cfg")]
    again, replayed = cli.json("report", log, tmp_path=tmp_path)
    assert again.exit_code == 0, again.output
    assert refused(replayed) == [("step", "cfg")]
    assert ([s["message"] for s in replayed["suggestions"]]
            == [s["message"] for s in report["suggestions"]])


def test_a_spec_call_that_jax_refuses_is_an_event_of_the_target(cli, program, tmp_path):
    target = program("target", """
        def step(x, cfg):
            return x * 2
    """)
    spec = tmp_path / "spec.yaml"
    spec.write_text("jit: {static_argnames: [cfg]}\n"
                    "calls:\n"
                    "  - {args: [{array: [3]}], kwargs: {cfg: 2}}\n"
                    "  - {args: [{array: [3]}], kwargs: {cfg: [1, 2]}}\n")
    result, report = cli.json("profile", f"{target}:step", "--args", spec, tmp_path=tmp_path)
    assert result.exit_code == 3, result.output
    (event,) = [e for e in report["events"] if e.get("error")]
    assert (event["function"], event["error"]["argument"], event["call_site"]) == (
        "step", "cfg", "spec.yaml calls[1]")
    assert any(s["function"] == "step" and "`cfg` is or holds a `list`" in s["message"]
               for s in report["suggestions"])
