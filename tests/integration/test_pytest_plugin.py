"""The pytest plugin: the max_compiles marker, the recompiles fixture, marker validation."""

from __future__ import annotations

from jax_support import requires_private_hooks

pytest_plugins = ["pytester"]

PLUGIN_TESTS = """
import jax, jax.numpy as jnp, pytest

@jax.jit
def train_step(x):
    return x * 2

@pytest.mark.max_compiles(1)
def test_one_shape():
    train_step(jnp.ones(3)); train_step(jnp.ones(3))

@pytest.mark.max_compiles(train_step=1)
def test_two_shapes():
    train_step(jnp.ones(3)); train_step(jnp.ones(4))

@pytest.mark.max_compiles(train_step=2)
def test_two_shapes_allowed():
    train_step(jnp.ones(3)); train_step(jnp.ones(4))

def test_fixture(recompiles):
    train_step(jnp.ones(5)); train_step(jnp.ones(6))
    assert recompiles.compiles("train_step") == 2
    assert recompiles.causes("train_step") == ["first_compile", "shape"]
    with pytest.raises(AssertionError, match="f32\\\\[5\\\\] -> f32\\\\[6\\\\]"):
        recompiles.assert_max_compiles(train_step=1)
"""


@requires_private_hooks
def test_pytest_plugin_passes_and_fails_with_the_cause(pytester):
    pytester.makepyfile(test_plugin_usage=PLUGIN_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    output = result.stdout.str()
    assert "FAILED test_plugin_usage.py::test_two_shapes" in output
    assert ("recompile-cli: train_step: 2 compiles, budget 1. Excess: shape at x: "
            "f32[3] -> f32[4] (test_plugin_usage.py:13 (test_two_shapes))") in output


@requires_private_hooks
def test_a_pytest_failure_names_each_cause_once_and_carries_the_suggestion(pytester):
    """Three leaves of a batch that shrank are one cause, named once, and the failure ends
    with the suggestion, as the guard's does (issue 33)."""
    pytester.makepyfile(test_batch="""
import jax, jax.numpy as jnp, pytest

@jax.jit
def train_step(batch):
    return sum(v.sum() for v in batch.values())

@pytest.mark.max_compiles(train_step=1)
def test_last_batch():
    for n in (16, 16, 16, 8):
        train_step({"a": jnp.ones((n, 4)), "b": jnp.ones((n, 2)), "c": jnp.ones((n,))})
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = " ".join(result.stdout.str().split())
    assert ("recompile-cli: train_step: 2 compiles, budget 1. Excess: shape at batch: 3 "
            "leaves, dim 0 16 -> 8 (test_batch.py:10 (test_last_batch)). Suggestion: the "
            "last batch is smaller:") in output
    assert "batch['a']" not in output.split("Suggestion:")[0]


def test_pytest_marker_arguments_are_validated(pytester):
    pytester.makepyfile(test_bad_marker="""
import pytest

@pytest.mark.max_compiles("two")
def test_limit_is_a_string():
    pass

@pytest.mark.max_compiles(train_step=-1)
def test_negative_limit():
    pass
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert "max_compiles='two' is not a limit" in output
    assert "train_step=-1 is not a limit" in output
    assert result.ret != 0 and "passed" not in result.stdout.lines[-1]


FIXTURE_COMPILES = """
import jax, jax.numpy as jnp
import pytest

@jax.jit
def step(x):
    return x * 2

@pytest.fixture
def warm():  # the test's own fixture: what it compiles is the test's
    step(jnp.ones(3))

@pytest.fixture(scope="module")
def shared():  # set up once for the module's tests: counted in none of them
    step(jnp.ones(5))

@pytest.mark.max_compiles(1)
def test_own_fixture_counts(warm):
    step(jnp.ones(4))

@pytest.mark.max_compiles(1)
def test_shared_fixture_does_not(shared):
    step(jnp.ones(4))

@pytest.mark.max_compiles(2)
def test_own_fixture_with_the_recompiles_fixture(warm, recompiles):
    step(jnp.ones(4))
    assert recompiles.compiles("step") == 2
"""


def test_compiles_in_a_tests_own_fixture_count_and_a_shared_fixtures_do_not(pytester):
    """Issue 44: compiles in a fixture's setup were not counted: a test whose fixture compiled
    passed a budget that its whole run broke."""
    pytester.makepyfile(test_fixture_compiles=FIXTURE_COMPILES)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "test_own_fixture_counts" in out and "step: 2 compiles, budget 1" in out
    assert "FAILED test_fixture_compiles.py::test_shared_fixture_does_not" not in out
