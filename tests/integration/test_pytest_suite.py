"""Issue 45: ``pytest --recompile`` records every test of a suite of real JAX tests, prints the
end-of-run table, saves the counts (``--recompile-save``) and fails exactly the test whose
compiles grew against them (``--recompile-compare``); a test's count is the same in another
order, in a subset and under pytest-xdist."""

from __future__ import annotations

import json

import pytest
from jax_support import requires_private_hooks

pytest_plugins = ["pytester"]

SUITE = """
import unittest
import jax, jax.numpy as jnp, pytest

@jax.jit
def shared(x):                       # one jitted function that every test below calls
    return x * 2

def test_compiles_once():
    shared(jnp.ones(3)); shared(jnp.ones(3))

def test_compiles_twice_on_purpose():
    shared(jnp.ones(3)); shared(jnp.ones(4))

def test_shared_signature_again():    # the same signature as the first test: compiled again
    shared(jnp.ones(3))

@pytest.mark.parametrize("n", [1, 3])
def test_parametrised(n):
    for k in range(n):
        shared(jnp.ones(k + 1))

class TestUnittest(unittest.TestCase):
    def test_method(self):
        shared(jnp.ones(7)); shared(jnp.ones(7))

def test_no_jax():
    assert True

@pytest.mark.max_compiles(shared=2)
def test_marker_inside_the_mode():
    shared(jnp.ones(3)); shared(jnp.ones(5))

def test_fixture_inside_the_mode(recompiles):
    shared(jnp.ones(3)); shared(jnp.ones(6))
    assert recompiles.compiles("shared") == 2
"""

EXPECTED = {
    "test_suite.py::test_compiles_once": {"shared": 1},
    "test_suite.py::test_compiles_twice_on_purpose": {"shared": 2},
    "test_suite.py::test_shared_signature_again": {"shared": 1},
    "test_suite.py::test_parametrised[1]": {"shared": 1},
    "test_suite.py::test_parametrised[3]": {"shared": 3},
    "test_suite.py::TestUnittest::test_method": {"shared": 1},
    "test_suite.py::test_no_jax": {},
    "test_suite.py::test_marker_inside_the_mode": {"shared": 2},
    "test_suite.py::test_fixture_inside_the_mode": {"shared": 2},
}

REVERSED = """
def pytest_collection_modifyitems(items):
    items.reverse()
"""


def _saved(pytester, name: str) -> dict:
    data = json.loads((pytester.path / name).read_text())
    assert data["format"] == "recompile-cli pytest counts" and data["version"] == 1
    return data["tests"]


@requires_private_hooks
def test_the_suite_mode_records_every_test_and_prints_the_table(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--recompile",
                                "--recompile-save=base.json")
    result.assert_outcomes(passed=9)
    assert _saved(pytester, "base.json") == EXPECTED
    text = (pytester.path / "base.json").read_text()
    assert list(json.loads(text)["tests"]) == sorted(EXPECTED)  # a stable order
    output = result.stdout.str()
    assert "recompile-cli: compiles per test" in output
    assert ("9 tests recorded, 4 with re-compiles: 13 compiles of functions outside JAX "
            "(5 re-compiles)") in output
    lines = result.stdout.lines
    first = lines.index("compiles  re-compiles  compile s  test") + 1
    assert lines[first].split()[:2] == ["3", "2"]
    assert lines[first].endswith("test_suite.py::test_parametrised[3]")
    assert any(line.split()[:4] == ["13", "5", "8", "0"] or
               (line.split()[:3] == ["13", "5", "8"] and line.endswith("shared"))
               for line in lines)
    assert "PASSED" not in output and "compiles against" not in output  # nothing per test


@requires_private_hooks
def test_the_ini_key_turns_the_mode_on_and_nothing_is_printed_without_it(pytester):
    pytester.makepyfile(test_suite=SUITE)
    plain = pytester.runpytest("-p", "no:cacheprovider")
    plain.assert_outcomes(passed=9)
    assert "compiles per test" not in plain.stdout.str()
    pytester.makeini("[pytest]\nrecompile = true\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    assert "9 tests recorded, 4 with re-compiles" in result.stdout.str()


@requires_private_hooks
def test_a_count_is_the_same_in_reverse_order_alone_and_under_xdist(pytester):
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("-p", "no:cacheprovider", "--recompile-save=forward.json")
    forward = _saved(pytester, "forward.json")
    assert forward == EXPECTED
    pytester.makeconftest(REVERSED)
    pytester.runpytest("-p", "no:cacheprovider", "--recompile-save=reversed.json")
    assert _saved(pytester, "reversed.json") == forward
    pytester.runpytest("-p", "no:cacheprovider", "--recompile-save=alone.json",
                       "test_suite.py::test_shared_signature_again")
    assert _saved(pytester, "alone.json") == {
        "test_suite.py::test_shared_signature_again": {"shared": 1}}
    xdist = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                          "--recompile-save=xdist.json")
    xdist.assert_outcomes(passed=9)
    assert _saved(pytester, "xdist.json") == forward
    assert "9 tests recorded, 4 with re-compiles" in xdist.stdout.str()  # the controller's


GROWN = SUITE.replace(
    "def test_compiles_once():\n    shared(jnp.ones(3)); shared(jnp.ones(3))",
    "def test_compiles_once():\n    shared(jnp.ones(3)); shared(jnp.ones(3, jnp.int32))",
).replace(
    "def test_compiles_twice_on_purpose():\n    shared(jnp.ones(3)); shared(jnp.ones(4))",
    "def test_compiles_twice_on_purpose():\n    shared(jnp.ones(3)); shared(jnp.ones(3))",
).replace("def test_no_jax():", "def test_added():\n    shared(jnp.ones(9))\n\n"
          "def _removed():")


@requires_private_hooks
def test_compare_fails_exactly_the_test_that_grew(pytester, monkeypatch):
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("-p", "no:cacheprovider", "--recompile-save=base.json")
    same = pytester.runpytest("-p", "no:cacheprovider", "--recompile-compare=base.json")
    same.assert_outcomes(passed=9)
    assert "baseline base.json: 0 tests compile more (failed), 0 fewer, 0 new" in \
        same.stdout.str()

    pytester.makepyfile(test_suite=GROWN)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = pytester.runpytest("-p", "no:cacheprovider", "--recompile-compare=base.json",
                                "--junitxml=junit.xml")
    result.assert_outcomes(passed=8, failed=1)
    output = result.stdout.str()
    assert "FAILED test_suite.py::test_compiles_once" in output
    assert ("recompile-cli: shared: 1 -> 2 compiles against the baseline. Excess: dtype at x: "
            "f32[3] -> i32[3] (test_suite.py:9 (test_compiles_once))") in output
    assert ("baseline base.json: 1 tests compile more (failed), 1 fewer, 1 new, 1 of its "
            "tests not run") in output
    assert "new (not in the baseline): test_suite.py::test_added" in output
    assert "not run (deselected, skipped or removed): test_suite.py::test_no_jax" in output
    assert "fewer compiles (save the baseline again to keep the gain): " \
        "test_suite.py::test_compiles_twice_on_purpose" in output
    assert any(line.startswith("::error file=test_suite.py,line=9,title=recompile-cli baseline"
                               "::test_suite.py::test_compiles_once: shared: 1 -> 2")
               for line in result.stdout.lines)
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="test_compiles_once"' in junit and "1 -&gt; 2 compiles against" in junit


def test_a_baseline_that_is_not_one_is_a_usage_error(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    (pytester.path / "bad.json").write_text('{"format": "something else"}')
    result = pytester.runpytest("-p", "no:cacheprovider", "--recompile-compare=bad.json")
    assert result.ret == 4
    assert "--recompile-compare bad.json: not a file of --recompile-save" in result.stderr.str()
    missing = pytester.runpytest("-p", "no:cacheprovider", "--recompile-compare=none.json")
    assert missing.ret == 4
    assert "no such file; write it first with --recompile-save" in missing.stderr.str()


# Functions of yours that JAX (or a library) holds for you, shared by every test: each test below
# asserts its own counts, so that a count that depended on which test ran first fails it.
HELD = """
import functools
import jax, jax.numpy as jnp, pytest

@jax.jit
def inner(x):
    return x * 3

def body(carry, x):                      # a scan body of yours, scanned eagerly by JAX
    return carry + inner(x), x

vmapped = jax.jit(jax.vmap(lambda x: x + 1))   # JAX's vmap of a function of yours

@functools.partial(jax.jit, static_argnums=1)
def apply(x, fn):                        # a function of yours as a static argument
    return fn(x)

def double(x):
    return 2 * x

optax = pytest.importorskip("optax")
optimizer = optax.sgd(0.1)               # a library's functions, made once for every test
update = jax.jit(optimizer.update)

@pytest.mark.parametrize("n", [1, 2])
def test_scan(recompiles, n):
    jax.lax.scan(body, 0.0, jnp.ones(3))
    assert (recompiles.traces("inner"), recompiles.compiles("inner")) == (1, 0)

def tripled(x):                          # handed to a jitted function of JAX's as static
    return inner(x)

@pytest.mark.parametrize("n", [1, 2])
def test_static_of_jax(recompiles, n):
    jnp.piecewise(jnp.arange(3.0), [jnp.arange(3.0) > 1], [tripled, double])
    assert recompiles.traces("inner") == 1

@pytest.mark.parametrize("n", [1, 2])
def test_vmap(recompiles, n):
    vmapped(jnp.ones((2, 3)))
    assert recompiles.compiles() == 1

@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.max_compiles(apply=1)
def test_static(recompiles, n):
    apply(jnp.ones(3), double)
    assert recompiles.compiles("apply") == 1

@pytest.mark.parametrize("n", [1, 2])
def test_optax(recompiles, n):
    params = {"w": jnp.ones(3)}
    update(params, optimizer.init(params))
    assert recompiles.compiles() == 1
"""


@requires_private_hooks
def test_functions_of_yours_held_by_jax_or_a_library_count_alike_in_any_order(pytester):
    pytest.importorskip("optax")
    pytester.makepyfile(test_held=HELD)
    forward = pytester.runpytest("-p", "no:cacheprovider", "--recompile",
                                 "--recompile-save=forward.json")
    forward.assert_outcomes(passed=10)
    pytester.makeconftest(REVERSED)
    backward = pytester.runpytest("-p", "no:cacheprovider", "--recompile",
                                  "--recompile-save=reversed.json")
    backward.assert_outcomes(passed=10)
    assert _saved(pytester, "reversed.json") == _saved(pytester, "forward.json")
    assert _saved(pytester, "forward.json")["test_held.py::test_static[2]"] == {"apply": 1}


@requires_private_hooks
def test_jax_own_programs_stay_compiled_from_test_to_test_and_yours_do_not():
    import jax
    import jax.numpy as jnp

    from recompile_cli.api.recording import Recording
    from recompile_cli.session.kinds import Owner

    double = jax.jit(lambda x: x * 2)
    x = jnp.ones((13, 17))  # a shape no other test compiles JAX's programs for
    seen = []
    for _ in range(2):
        with Recording("a test", keep_jax_caches=True) as rec:
            double(x)
            jnp.sin(x) + 1.0  # op by op: JAX's own programs
        inner = rec.report.report.totals.by_owner.get(Owner.JAX)
        seen.append((rec.report.compiles(), inner.compiles if inner else 0))
    (yours, jax_first), (yours_again, jax_again) = seen
    assert yours == yours_again == 1  # as in a fresh process, both times
    assert jax_first >= 2 and jax_again == 0  # sin and add compiled once, then kept
