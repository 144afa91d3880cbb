"""Issue 19 (part G), the pytest plugin: a marker budget that matches no function is a pytest
warning; a test that removes recompile-cli's listeners fails its budget instead of passing
blind; marker limits are checked by ``recompile_cli.options``."""

from __future__ import annotations

pytest_plugins = ["pytester"]

TESTS = """
import jax, jax.numpy as jnp, pytest

@jax.jit
def train_step(x):
    return x * 2

@pytest.mark.max_compiles(trian_step=1)
def test_typo_in_the_budget():
    train_step(jnp.ones(3)); train_step(jnp.ones(4))

@pytest.mark.max_compiles(1)
def test_clears_the_listeners():
    train_step(jnp.ones(3))
    jax.monitoring.clear_event_listeners()
    train_step(jnp.ones(4)); train_step(jnp.ones(5))

@pytest.mark.max_compiles(1.5)
def test_float_limit():
    pass

def test_fixture_typo(recompiles):
    train_step(jnp.ones(3))
    with pytest.raises(AssertionError, match="trian_step=1 matches no function"):
        recompiles.assert_max_compiles(trian_step=1)
"""


def test_marker_front_doors(pytester):
    pytester.makepyfile(test_front=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=2, failed=2, warnings=1)
    output = result.stdout.str()
    assert "UnmatchedBudgetWarning: recompile-cli: the limit trian_step=1 matches no function" \
        in output
    assert "test_front.py::test_typo_in_the_budget" in output  # the warning names the test
    assert "FAILED test_front.py::test_clears_the_listeners" in output
    assert "removed recompile-cli's jax.monitoring listeners" in output
    assert "FAILED test_front.py::test_float_limit" in output
    assert "max_compiles=1.5 is not a limit" in output
    assert "Traceback" not in output
