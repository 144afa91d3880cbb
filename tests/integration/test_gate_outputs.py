"""What the gate reports on real JAX, in every output (terminal, Markdown, JUnit XML, GitHub
annotations): events counted once however many arguments changed, a target that raised shown
as an error and never as a pass, and paths relative to the working folder."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from helpers import budget
from jax_support import requires_private_hooks

# One re-compile where two arguments change shape together, in each kind of container.
CONTAINERS = {
    "dict": ("step({'x': a, 'y': b})", "batch", "batch['x']", "batch['y']"),
    "positional": ("step(a, b)", "x, y", "x", "y"),
    "tuple": ("step((a, b))", "batch", "batch[0]", "batch[1]"),
    "namedtuple": ("step(Pair(a, b))", "batch", "batch.x", "batch.y"),
    "register_dataclass": ("step(DPair(a, b))", "batch", "batch.x", "batch.y"),
}
TWO_CHANGES = """
import dataclasses, functools, typing
import jax, jax.numpy as jnp

class Pair(typing.NamedTuple):
    x: jax.Array
    y: jax.Array

@functools.partial(jax.tree_util.register_dataclass, data_fields=["x", "y"], meta_fields=[])
@dataclasses.dataclass
class DPair:
    x: jax.Array
    y: jax.Array

@jax.jit
def step({params}):
    return sum(v.sum() for v in jax.tree_util.tree_leaves(({params},)))

for n in (3, 4):
    a, b = jnp.ones(n), jnp.ones(n)
    {call}
"""


def annotations(stdout: str) -> list[tuple[dict[str, str], str]]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("::error "):
            props, message = line[len("::error "):].split("::", 1)
            out.append((dict(p.split("=", 1) for p in props.split(",")), message))
    return out


@requires_private_hooks
@pytest.mark.parametrize("container", list(CONTAINERS))
def test_fail_on_counts_one_event_with_two_changed_arguments_once(cli, program, tmp_path,
                                                                 monkeypatch, container):
    call, params, first, second = CONTAINERS[container]
    script = program("two", TWO_CHANGES.format(params=params, call=call))
    junit = tmp_path / "junit.xml"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = cli("run", "--fail-on", "shape", "--junit-xml", junit, script)
    assert result.exit_code == 1, result.output
    expected = (f"step: 1 event with cause shape (--fail-on): shape at {first}: f32[3] -> "
                f"f32[4], {second}: f32[3] -> f32[4] (")
    assert f"- {expected}" in result.stdout
    assert result.stdout.count(f"at {first}: f32[3] -> f32[4]") == 2  # violation + annotation

    [(fields, message)] = annotations(result.stdout)
    assert fields["title"] == "recompile-cli fail_on" and message.startswith(expected)
    suite = ET.parse(junit).getroot()
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    [failure] = cases["step (fail_on)"].findall("failure")
    assert failure.get("message").startswith(expected)
    assert (suite.get("failures"), suite.get("errors")) == ("1", "0")


@requires_private_hooks
def test_an_event_with_two_wanted_codes_is_one_event_listing_both(cli, program, monkeypatch):
    script = program("mixed", """
        import jax, jax.numpy as jnp
        @jax.jit
        def step(x, y): return x.sum() + y.sum()
        step(jnp.ones(3), jnp.ones(2))
        step(jnp.ones(4), jnp.ones(2, dtype=jnp.int32))
        step(jnp.ones(5), jnp.ones(3, dtype=jnp.int32))
    """)
    monkeypatch.chdir(script.parent)
    result = cli("run", "--fail-on", "shape,dtype", script.name)
    assert result.exit_code == 1, result.output
    # each cause named once, with its changes in order and where each happened
    assert ("- step: 2 events with cause shape, dtype (--fail-on): shape at x: f32[3] -> "
            "f32[4] (mixed.py:6 (<module>)), then f32[4] -> f32[5] (mixed.py:7 (<module>)), "
            "y: i32[2] -> i32[3] (mixed.py:7 (<module>)); dtype at y: f32[2] -> i32[2] "
            "(mixed.py:6 (<module>)).") in result.stdout
    assert result.stdout.count("events with cause") == 1
    assert result.stdout.count("shape at") == 1 and result.stdout.count("dtype at") == 1


@requires_private_hooks
def test_max_compiles_excess_lists_every_changed_argument(cli, program):
    script = program("two", TWO_CHANGES.format(params="batch", call="step({'x': a, 'y': b})"))
    result = cli("run", "--max-compiles", "1", script)
    assert result.exit_code == 1, result.output
    assert ("step: 2 compiles, budget 1. Excess: shape at batch['x']: f32[3] -> f32[4], "
            "batch['y']: f32[3] -> f32[4] (") in result.stdout


RAISES_AFTER_COMPILING = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return x * 2

step(jnp.ones(3))
raise RuntimeError("boom")
"""
RAISES_FIRST = """
raise ValueError("no data")
"""


@requires_private_hooks
def test_check_shows_a_target_that_raised_as_an_error_everywhere(cli, project, monkeypatch):
    (project / "raises.py").write_text(RAISES_AFTER_COMPILING)
    (project / "early.py").write_text(RAISES_FIRST)
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 2}
          - script: raises.py
            budgets:
              step: {max_compiles: 2}
          - script: early.py
            budgets:
              step: {max_compiles: 2}
    """)
    summary, junit = project / "summary.md", project / "junit.xml"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = cli("check", path, "--junit-xml", junit)
    assert result.exit_code == 3, result.output
    assert "recompile-cli gate: FAILED" in result.stdout
    rows = {tuple(line.split()[:2]): line.split()[-1] for line in result.stdout.splitlines()
            if line.startswith(("prog.py", "raises.py", "early.py"))}
    assert rows == {("prog.py:step", "step"): "ok", ("raises.py", "step"): "ERROR",
                    ("early.py", "(target"): "ERROR"}

    suite = ET.parse(junit).getroot()
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert set(cases) == {("prog.py:step", "step"), ("raises.py", "step"),
                          ("early.py", "early.py (target raised)")}
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "0", "2")
    assert list(cases[("prog.py:step", "step")]) == []
    [error] = cases[("raises.py", "step")]
    assert error.tag == "error" and error.get("type") == "target_raised"
    assert "raised RuntimeError" in error.get("message") and "boom" in error.get("message")
    [error] = cases[("early.py", "early.py (target raised)")]
    assert error.tag == "error" and "raised ValueError" in error.get("message")

    found = annotations(result.stdout)
    assert [fields["title"] for fields, _ in found] == ["recompile-cli target_raised"] * 2
    assert found[0][1].startswith("raises.py: ") and "boom" in found[0][1]
    assert found[1][1].startswith("early.py: ") and "no data" in found[1][1]

    markdown = summary.read_text()
    assert "| raises.py" in markdown and "| ERROR" in markdown and "| ok " in markdown
    assert "### Targets that raised (the gate cannot pass)" in markdown


@requires_private_hooks
def test_run_with_a_gate_reports_a_script_that_raised_as_an_error(cli, program, tmp_path):
    script = program("raises", RAISES_AFTER_COMPILING)
    junit = tmp_path / "junit.xml"
    result = cli("run", "--max-compiles", "5", "--junit-xml", junit, script)
    assert result.exit_code == 3
    assert "recompile-cli gate: FAILED" in result.stdout
    [case] = ET.parse(junit).getroot().iter("testcase")
    [error] = case
    assert case.get("name") == "step" and error.tag == "error"


@requires_private_hooks
def test_check_header_and_junit_suite_use_paths_relative_to_the_working_folder(
        cli, project, monkeypatch):
    path = budget(project, """
        targets:
          - target: prog.py:step
            args: two_shapes.yaml
            budgets:
              step: {max_compiles: 1}
    """)
    monkeypatch.chdir(project)
    junit = project / "out" / "junit.xml"
    result = cli("check", path, "--junit-xml", junit, "--save-baseline", project / "base.json")
    assert result.exit_code == 1, result.output
    assert "recompile-cli check: recompile-budget.yaml (jax " in result.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("name") == "recompile-budget.yaml"
    assert str(project) not in result.stdout and str(project) not in junit.read_text()

    target = project / "prog.py"
    result = cli("profile", f"{target}:step", "--args", project / "two_shapes.yaml",
                 "--max-compiles", "1", "--junit-xml", junit)
    assert result.exit_code == 1
    suite = ET.parse(junit).getroot()
    [case] = suite.iter("testcase")
    assert (suite.get("name"), case.get("classname")) == ("prog.py:step", "prog.py:step")
