"""The CI gate on real programs: budget files, steady state, quick gates, baselines, CI outputs,
the diff command and the pytest plugin."""

from __future__ import annotations

import json
import shutil
import textwrap
import xml.etree.ElementTree as ET

import pytest
from conftest import SAMPLES
from jax_support import requires_private_hooks

pytest_plugins = ["pytester"]

SHAPES = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return jnp.tanh(x) * 2
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with a program, a spec and a budget file; runs from elsewhere."""
    (tmp_path / "prog.py").write_text(SHAPES)
    (tmp_path / "two_shapes.yaml").write_text(
        "calls:\n  - args: [{array: [3]}]\n  - args: [{array: [4]}]\n  - args: [{array: [3]}]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def budget(project, text: str):
    path = project / "recompile-budget.yaml"
    path.write_text(textwrap.dedent(text))
    return path


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
    result = cli("check", path)
    assert result.exit_code == 1
    assert ("After a warm-up of 1 call(s) of step, step compiled 1 more time(s), first "
            "during call 2: shape at x: f32[3] -> f32[4]") in (
        result.stdout)


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
    assert ("After a warm-up of 3 call(s) of train_step, train_step compiled 1 more time(s), "
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
def test_quick_gates_on_profile(cli, project):
    target = str(project / "prog.py") + ":step"
    spec = str(project / "two_shapes.yaml")
    assert cli("profile", target, "--args", spec, "--max-compiles", "2").exit_code == 0
    junit = project / "quick.xml"
    result = cli("profile", target, "--args", spec, "--max-compiles", "1", "--junit-xml", junit)
    assert result.exit_code == 1 and "step: 2 compiles, budget 1" in result.stdout
    [case] = ET.parse(junit).getroot().iter("testcase")
    assert case.get("name") == "step" and case.find("failure").get("type") == "max_compiles"
    result = cli("profile", target, "--args", spec, "--fail-on", "shape,weak_type")
    assert result.exit_code == 1 and "1 event(s) with cause shape" in result.stdout
    assert cli("profile", target, "--args", spec, "--fail-on", "weak_type").exit_code == 0
    result = cli("profile", target, "--args", spec, "--fail-on", "bogus")
    assert result.exit_code == 2 and "unknown cause code(s) bogus" in result.stderr


@requires_private_hooks
def test_quick_gate_on_run(cli, program):
    script = program("lambdas", """
        import jax, jax.numpy as jnp
        for i in range(3):
            jax.jit(lambda v: v + 1)(jnp.ones(2))
    """)
    result = cli("run", "--fail-on", "new_function", script)
    assert result.exit_code == 1
    assert "<lambda>: 2 event(s) with cause new_function" in result.stdout


@requires_private_hooks
def test_baseline_regression_and_improvement(cli, project):
    target = str(project / "prog.py") + ":step"
    one = project / "one.yaml"
    one.write_text("calls:\n  - args: [{array: [3]}]\n")
    base = project / "baseline.json"
    assert cli("profile", target, "--args", one, "--save-baseline", base).exit_code == 0
    saved = json.loads(base.read_text())
    assert saved["functions"] == {"prog.py:step": {"traces": 1, "compiles": 1}}
    assert saved["environment"]["backend"] == "cpu"

    result = cli("profile", target, "--args", project / "two_shapes.yaml", "--baseline", base)
    assert result.exit_code == 1
    assert "prog.py:step: 2 compiles, baseline 1 (+1)" in result.stdout

    cli("profile", target, "--args", project / "two_shapes.yaml", "--save-baseline", base)
    result = cli("profile", target, "--args", one, "--baseline", base)
    assert result.exit_code == 0
    assert "Improvements" in result.stdout and "prog.py:step: 1 compiles, baseline 2 (-1)" in (
        result.stdout)
    assert f"--save-baseline {base}" in result.stdout


@requires_private_hooks
def test_baseline_new_function_and_version_warning(cli, project):
    target = str(project / "prog.py") + ":step"
    base = project / "baseline.json"
    base.write_text(json.dumps({"kind": "recompile-cli-baseline", "schema_version": 1,
                                "environment": {"jax_version": "0.0.1", "backend": "cpu"},
                                "functions": {}}))
    result = cli("profile", target, "--args", project / "two_shapes.yaml", "--baseline", base)
    assert result.exit_code == 1
    assert "prog.py:step: new function compiles 2 time(s)" in result.stdout
    assert "made with jax_version 0.0.1" in result.stdout
    base.write_text("{}")
    result = cli("profile", target, "--baseline", base)
    assert result.exit_code == 2 and "is not a recompile-cli baseline" in result.stderr


@requires_private_hooks
def test_ci_outputs_markdown_junit_and_annotations(cli, project, monkeypatch):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 1}
              "nothing_*": {max_compiles: 0}
    """)
    summary = project / "summary.md"
    junit = project / "junit.xml"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = cli("check", path, "--junit-xml", junit)
    assert result.exit_code == 1

    suite = ET.parse(junit).getroot()
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"step"}  # a budget that matches nothing is no passing test case
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    assert "the budget 'nothing_*' matches no function" in result.stdout
    [failure] = cases["step"].findall("failure")
    assert failure.get("type") == "max_compiles" and "f32[3] -> f32[4]" in failure.get("message")

    [annotation] = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    props, message = annotation[len("::error "):].split("::", 1)
    fields = dict(p.split("=", 1) for p in props.split(","))
    assert fields["title"] == "recompile-cli max_compiles"
    assert "step: 2 compiles, budget 1" in message

    markdown = summary.read_text()
    assert "**recompile-cli gate: FAILED**" in markdown
    printed = cli("check", path, "--format", "markdown").stdout
    assert "**recompile-cli gate: FAILED**" in printed and "| step " in printed
    assert "| target" in markdown and "| step " in markdown
    assert "### Violations" in markdown


@requires_private_hooks
def test_annotation_points_at_the_users_call_site(cli, program, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    script = program("twice", """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda v: v * 2)
        f(jnp.ones(2))
        f(jnp.ones(3))
    """)
    result = cli("run", "--max-compiles", "1", script)
    [annotation] = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert annotation.startswith(f"::error file={script},line=5,")


def test_markdown_report_format(cli, project):
    result = cli("profile", "--format", "markdown", str(project / "prog.py") + ":step",
                 "--args", project / "two_shapes.yaml")
    assert result.exit_code == 0
    assert "### Functions" in result.stdout and "| step " in result.stdout
    assert "### Re-compilations by cost" in result.stdout


@requires_private_hooks
def test_diff_shows_changes_and_new_causes(cli, project):
    target = str(project / "prog.py") + ":step"
    one = project / "one.yaml"
    one.write_text("calls:\n  - args: [{array: [3]}]\n")
    old, new = project / "old.json", project / "new.json"
    cli("profile", target, "--args", one, "--save", old)
    cli("profile", target, "--args", project / "two_shapes.yaml", "--save", new)
    result = cli("diff", old, new)
    assert result.exit_code == 0
    line = next(row for row in result.stdout.splitlines() if row.startswith("prog.py:step"))
    assert "1 -> 2" in line and "+1" in line
    assert "- prog.py:step: shape at x: f32[3] -> f32[4]" in result.stdout
    assert cli("diff", "--fail-on-regression", old, new).exit_code == 1
    assert cli("diff", "--fail-on-regression", new, old).exit_code == 0


@requires_private_hooks
def test_dogfood_budget_of_this_repository_holds(cli, monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    result = cli("check")
    assert result.exit_code == 0, result.output


# -- pytest plugin -----------------------------------------------------------------------------
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
    assert "max_compiles='two' is not a compile limit" in output
    assert result.ret != 0 and "passed" not in result.stdout.lines[-1]
