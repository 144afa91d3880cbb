"""``run --after-warmup``: the warm-up's count is what the plan compiled, not every compile
since the run started (issue 43: "PLAN compiled 11 signatures" for a plan of 0, counting the
script's own compiles at import, made before the plan ran)."""

from __future__ import annotations

import pytest

SCRIPT = """
import jax, jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2

X = jnp.arange(3.0) + 1  # compiles at import, before the plan: JAX's and f's
f(X)

if __name__ == "__main__":
    for n in (3, 4):
        f(jnp.ones(n))
"""

EMPTY_PLAN = """
def warm_up(parallel=None):
    return {"compiled": [], "skipped": []}
"""

ONE_SIGNATURE = """
import sys
import jax, jax.numpy as jnp

def warm_up(parallel=None):
    f = sys.modules["__main__"].f
    f.lower(jax.ShapeDtypeStruct((4,), jnp.float32)).compile()
    return {"compiled": [("f", "x=f32[4]")], "skipped": []}
"""

@pytest.mark.parametrize(("plan", "compiled", "after"), [(EMPTY_PLAN, 0, 1),
                                                         (ONE_SIGNATURE, 1, 0)],
                         ids=["empty-plan", "one-signature"])
def test_the_warm_up_count_is_what_the_plan_compiled(cli, program, tmp_path, plan, compiled,
                                                     after):
    script = program("script", SCRIPT)
    result, report = cli.json("run", "--after-warmup", program("plan", plan), script,
                              tmp_path=tmp_path)
    assert result.exit_code == (1 if after else 0), result.output  # a compile after it fails
    coverage = report["warmup_coverage"]
    assert (coverage["compiled"], coverage["compiles_after"]) == (compiled, after)
    table = cli("run", "--after-warmup", tmp_path / "plan.py", script)
    word = "signature" if compiled == 1 else "signatures"
    assert f"plan.py compiled {compiled} {word}" in table.stdout
