"""`recompile-cli check`: budget files (YAML and pyproject), budgets, steady state, bad budget
files, and the repository's own dogfood budget."""

from __future__ import annotations

import shutil
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest
from helpers import SAMPLES, budget
from jax_support import requires_private_hooks


@requires_private_hooks
def test_budget_that_holds_exits_0(cli, project):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 2, max_traces: 2, allowed_causes: [first_compile, shape]}
    """)
    result = cli("check", path)
    assert result.exit_code == 0, result.output
    assert "recompile-cli gate: passed" in result.stdout
    assert "2 / 2" in result.stdout


@requires_private_hooks
def test_budget_broken_by_a_shape_change_exits_1_naming_argument_and_shapes(cli, project):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 1}
    """)
    result = cli("check", path)
    assert result.exit_code == 1
    assert "recompile-cli gate: FAILED" in result.stdout
    assert "step: 2 compiles, budget 1. Excess: shape at x: f32[3] -> f32[4]" in result.stdout


def test_same_target_with_two_specs_runs_each_with_its_own(cli, project):
    (project / "one.yaml").write_text("calls:\n  - args: [{array: [3]}]\n")
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: one.yaml
            budgets:
              step: {max_compiles: 1}
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 2}
    """)
    result = cli("check", path)
    assert result.exit_code == 0, result.output
    assert "1 / 1" in result.stdout and "2 / 2" in result.stdout


@requires_private_hooks
def test_allowed_causes(cli, project):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              "st*": {allowed_causes: [first_compile]}
    """)
    result = cli("check", path)
    assert result.exit_code == 1
    assert "causes outside first_compile: shape at x" in result.stdout


def test_compile_seconds_budget_with_tolerance(cli, project):
    # Times are noisy, so only limits that cannot be in doubt: 0 s always breaks, an hour holds.
    for seconds, code in ((0.0, 1), (3600, 0)):
        path = budget(project, f"""
            targets:
              - target: prog.py:step
                args: two_shapes.yaml
                budgets:
                  step: {{max_compile_seconds: {seconds}, tolerance: 0.5}}
        """)
        result = cli("check", path)
        assert result.exit_code == code, result.output
        if code:
            assert "s of XLA compile, budget 0.000 s (+50% tolerance)" in result.stdout


@requires_private_hooks
def test_steady_state_violation_for_a_target(cli, project):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            steady_state_after: 1
            budgets:
              step: {max_compiles: 5}
    """)
    result = cli("check", path, "--junit-xml", project / "junit.xml")
    assert result.exit_code == 1
    assert ("After a warm-up of 1 call of step, step compiled 1 more time, first "
            "during call 2: shape at x: f32[3] -> f32[4]") in (
        result.stdout)
    # the budget held, the steady state did not: the row says so, never ok (issue 33)
    [row] = [line for line in result.stdout.splitlines() if line.startswith("prog.py:step")]
    assert row.split()[-2:] == ["FAIL", "steady_state"], result.stdout
    cases = {(c.get("classname"), c.get("name")): [f.get("type") for f in c]
             for c in ET.parse(project / "junit.xml").getroot().iter("testcase")}
    assert cases == {("prog.py:step", "step"): [],
                     ("prog.py:step", "step (steady_state)"): ["steady_state"]}


@requires_private_hooks
def test_two_budgets_on_one_function_are_one_row_and_a_test_case_each(cli, project):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              "st*": {max_compiles: 1}
              "*": {max_compiles: 5}
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 5}
    """)
    result = cli("check", path, "--junit-xml", project / "junit.xml")
    assert result.exit_code == 1, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("prog.py:step")]
    assert len(rows) == 2, result.stdout
    assert rows[0].endswith("FAIL st*: max_compiles, *: ok") and " 2 / 1 " in rows[0], (
        result.stdout)
    assert rows[1].split()[-1] == "ok"
    suite = ET.parse(project / "junit.xml").getroot()
    cases = [(c.get("classname"), c.get("name")) for c in suite.iter("testcase")]
    assert cases == [("prog.py:step --args two_shapes.yaml (targets[0])", "step (budget st*)"),
                     ("prog.py:step --args two_shapes.yaml (targets[0])", "step (budget *)"),
                     ("prog.py:step --args two_shapes.yaml (targets[1])", "step")]
    assert suite.get("failures") == "1"


@requires_private_hooks
def test_steady_state_of_a_script_counts_calls(cli, project):
    shutil.copy(SAMPLES / "train_loop.py", project / "train_loop.py")
    for after, code in ((4, 0), (3, 1)):
        path = budget(project, f"""
            targets:
              - script: train_loop.py
                script_args: ["--epochs", "2"]
                steady_state_after: {after}
                budgets:
                  "train_*": {{max_compiles: 2}}
        """)
        result = cli("check", path)
        assert result.exit_code == code, result.output
    assert ("After a warm-up of 3 calls of train_step, train_step compiled 1 more time, "
            "first during call 4") in result.stdout
    assert "shape at batch['x']: f32[32,8] -> f32[4,8]" in result.stdout


def test_budget_in_pyproject(cli, project, monkeypatch):
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [[tool.recompile-cli.targets]]
        target = "prog.py:step"
        args = "two_shapes.yaml"
        budgets = { step = { max_compiles = 1 } }
    """))
    monkeypatch.chdir(project)
    result = cli("check")
    assert result.exit_code == 1 and "step: 2 compiles, budget 1" in result.stdout


@pytest.mark.parametrize("text, words", [
    ("targets: []\n", "field targets: must be a non-empty list"),
    ("targets: [\n  - {target: a\n", "recompile-budget.yaml, line 2: not valid YAML"),
    ("targets:\n  - target: prog.py:step\n    budgets: {step: {max_compile: 1}}\n",
     "line 3, field targets[0].budgets.step.max_compile: unknown field"),
    ("targets:\n  - target: prog.py:step\n    script: x.py\n    budgets: {step: {max_compiles: 1}}\n",
     "exactly one of 'target'"),
    ("targets:\n  - target: prog.py:step\n    budgets: {step: {allowed_causes: [shapes]}}\n",
     "must be a list of cause codes"),
    ("targets:\n  - target: prog.py:step\n    args: missing.yaml\n    budgets: {step: {max_compiles: 1}}\n",
     "Cannot read the spec file missing.yaml"),
])
def test_bad_budget_file_exits_2(cli, project, text, words):
    path = budget(project, text)
    result = cli("check", path)
    assert result.exit_code == 2
    assert words in result.stderr and "Traceback" not in result.output


def test_no_budget_file_exits_2(cli, project):
    result = cli("check")
    assert result.exit_code == 2 and "No budget file" in result.stderr


@requires_private_hooks
def test_dogfood_budget_of_this_repository_holds(cli, monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    result = cli("check")
    assert result.exit_code == 0, result.output


@requires_private_hooks
def test_an_eager_only_star_budget_puts_no_library_function_under_the_steady_state(
        cli, project, monkeypatch):
    """Issue 43: a ``"*"`` budget meant for eager compiles alone put every counted function
    (a library's internals included) under the steady-state gate."""
    lib = project / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("import jax\n@jax.jit\ndef helper(x):\n    return x * 2\n")
    monkeypatch.setenv("PYTHONPATH", str(lib.parent))
    monkeypatch.syspath_prepend(str(lib.parent))
    monkeypatch.delitem(sys.modules, "fakelib", raising=False)  # another test's fakelib
    (project / "loop.py").write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp, fakelib

        @jax.jit
        def train_step(x):
            return x + 1

        for _ in range(4):
            train_step(jnp.ones(3))
        for n in range(3):  # the library compiles for each new size: not a step of yours
            fakelib.helper(jnp.ones(n + 2))
    """))
    path = budget(project, """
        targets:
          - script: loop.py
            steady_state_after: 2
            budgets:
              "*": {max_eager_compiles: 100}
              train_step: {max_compiles: 1}
    """)
    result = cli("check", path)
    assert result.exit_code == 0, result.output
    assert "helper compiled" not in result.stdout
