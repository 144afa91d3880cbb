"""Gates on `profile` and `run` (--max-compiles, --fail-on), baselines, CI outputs (Markdown,
JUnit, GitHub annotations) and `diff`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from helpers import budget
from jax_support import requires_private_hooks


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
    assert result.exit_code == 1 and "1 event with cause shape" in result.stdout
    assert cli("profile", target, "--args", spec, "--fail-on", "weak_type").exit_code == 0
    result = cli("profile", target, "--args", spec, "--fail-on", "bogus")
    assert result.exit_code == 2 and "unknown cause code(s) 'bogus'" in result.stderr


@requires_private_hooks
def test_quick_gate_on_run(cli, program):
    script = program("lambdas", """
        import jax, jax.numpy as jnp
        for i in range(3):
            jax.jit(lambda v: v + 1)(jnp.ones(2))
    """)
    result = cli("run", "--fail-on", "new_function", script)
    assert result.exit_code == 1
    assert "<lambda>: 2 events with cause new_function" in result.stdout


@requires_private_hooks
def test_baseline_regression_and_improvement(cli, project):
    target = str(project / "prog.py") + ":step"
    one = project / "one.yaml"
    one.write_text("calls:\n  - args: [{array: [3]}]\n")
    base = project / "baseline.json"
    assert cli("profile", target, "--args", one, "--save-baseline", base).exit_code == 0
    saved = json.loads(base.read_text())
    counts = saved["functions"]["prog.py:step"]
    assert (counts["traces"], counts["compiles"], counts["equations"]) == (1, 1, 2)
    assert counts["compile_seconds"] > 0  # compared by --fail-on-compile-regression
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
    assert "prog.py:step: new function compiles 2 times" in result.stdout
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
