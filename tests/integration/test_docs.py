"""README.md and docs/*.md stay true: every marked output block is what its command prints now
(timings and version numbers masked), every link and cited test exists, the CI examples work as
written, and the package ships its licence and type marker.

The commands run once each (a module-scoped cache) through ``scripts/update_docs.py``, the
script that writes the blocks."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from helpers import ROOT


def _update_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_docs", ROOT / "scripts" / "update_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["update_docs"] = module
    spec.loader.exec_module(module)
    return module


update_docs = _update_docs()
DOCUMENTS = update_docs.documents()
BLOCKS = [block for path in DOCUMENTS for block in update_docs.blocks(path)]


# The outputs were recorded on one JAX (the README says which): another JAX compiles other
# internal functions, and an old one runs public-only, so the blocks are checked on that JAX only
# (.ci/run's main leg).
DOCS_JAX = re.search(r"\(jax (\S+?), ", BLOCKS[0].text).group(1)  # type: ignore[union-attr]
same_jax = pytest.mark.skipif(
    importlib.metadata.version("jax") != DOCS_JAX,
    reason=f"the documented outputs were recorded on JAX {DOCS_JAX}")




def _units(blocks: list) -> list[list]:
    """The blocks in units checked in document order: the blocks of one document that name the
    same folder under /tmp (one writes a file there that a later one reads) are one unit, so
    that no worker runs a reader before its writer; any other block is a unit of its own."""
    units: list[list] = []
    shared: dict[tuple[Path, str], list] = {}
    for block in blocks:
        folders = re.findall(r"/tmp/([\w.-]+)", block.command)
        unit = next((shared[(block.path, f)] for f in folders if (block.path, f) in shared), None)
        if unit is None:
            unit = []
            units.append(unit)
        unit.append(block)
        for folder in folders:
            shared.setdefault((block.path, folder), unit)
    return units


UNITS = _units(BLOCKS)


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move reference to docs/"
    # CI runs the README's test command, from its "Running the tests" section.
    tests = readme.split("## Running the tests", 1)[1].split("\n## ", 1)[0]
    assert "pip install -e '.[test]' && python -m pytest" in tests.splitlines()
    # The first command a reader meets is `run` on a script, with its real output.
    first_command = next(line for line in lines if line.startswith("recompile-cli "))
    assert first_command.startswith("recompile-cli run ")
    assert BLOCKS and BLOCKS[0].path.name == "README.md"
    assert BLOCKS[0].command == first_command


@same_jax
@pytest.mark.parametrize("unit", UNITS, ids=[
    f"{unit[0].path.name}:{unit[0].command.split(' ')[1]}:{BLOCKS.index(unit[0])}"
    + (f"+{len(unit) - 1}" if len(unit) > 1 else "") for unit in UNITS])
def test_output_block_is_the_real_output(unit: list) -> None:
    ran = [(block, update_docs.masked(update_docs.run(block.command))) for block in unit]
    stale = [(block, real) for block, real in ran if update_docs.masked(block.text) != real]
    for block, real in stale[:1]:  # the first stale block's diff
        assert update_docs.masked(block.text) == real, (
            f"{block.path.relative_to(ROOT)}: {len(stale)} stale block(s), the first of "
            f"`{block.command}`: run `python scripts/update_docs.py`")


def test_blocks_that_share_a_file_are_checked_in_order() -> None:
    warmup = [unit for unit in UNITS if unit[0].path.name == "warmup.md"]
    # the train_loop plan's four blocks share /tmp/recompile-warmup; the Flax block is whole
    assert [len(unit) for unit in warmup] == [4, 1]
    assert "-o /tmp/recompile-warmup/warmup_plan.py" in warmup[0][0].command
    assert "/tmp/recompile-warmup-flax/" in warmup[1][0].command
    assert all(len(unit) == 1 for unit in UNITS if unit[0].path.name == "forecast.md")


def test_masking_hides_only_timings_and_versions() -> None:
    one = "in all, 0.567 s: 8 traces (jax 0.10.2)\n-----  ---\nx    0.140\n"
    other = "in all, 12.5 s: 8 traces (jax 0.4.30)\n--  -------\nx  1.2\n"
    assert update_docs.masked(one) == update_docs.masked(other)
    assert update_docs.masked(one) != update_docs.masked(one.replace("8 traces", "9 traces"))
    # A table ranked by seconds: rows of close cost swap places from run to run; other
    # tables keep their order.
    ranked = "count  seconds\n-----  -------\nx1     0.029\nx2     0.015\n"
    swapped = "count  seconds\n-----  -------\nx2     0.031\nx1     0.012\n"
    assert update_docs.masked(ranked) == update_docs.masked(swapped)
    assert update_docs.masked(ranked.replace("seconds", "calls")) != update_docs.masked(
        swapped.replace("seconds", "calls"))
    # the headline's functions of equal re-compiles come in order of their compile seconds
    head = "f: 1 compile, no re-compile\ng: 1 compile, no re-compile\nyours: 2 compiles"
    other = "g: 1 compile, no re-compile\nf: 1 compile, no re-compile\nyours: 2 compiles"
    assert update_docs.masked(head) == update_docs.masked(other)
    assert update_docs.masked(head) != update_docs.masked(head.replace("g: 1", "g: 2"))


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file (outside code blocks)."""
    anchors, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.*)", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-"))
    return anchors


# Written by other engineers at the same time; linked before they land.
_PENDING = {"compile-cost.md", "persistent-cache.md", "forecast.md", "multi-host.md", "guard.md"}


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_relative_links_and_anchors_resolve(path: Path) -> None:
    broken = []
    for target in _LINK.findall(path.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            if linked.name not in _PENDING:
                broken.append(target)
            continue
        if anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} links to what does not exist: {broken}"


def _test_functions() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for file in (ROOT / "tests").glob("*/test_*.py"):
        found.setdefault(file.name, set()).update(
            re.findall(r"^def (test_\w+)\(", file.read_text(), re.M))
    return found


def test_every_cited_test_exists() -> None:
    """The guarantees cite `test_file.py::test_name` (and `::test_name` for the same file)."""
    functions, missing = _test_functions(), []
    for path in DOCUMENTS:
        for row in path.read_text().splitlines():
            current = None
            for file, name in re.findall(r"`(test_\w+\.py)?(?:::(test_\w+))?`", row):
                if file:
                    current = file
                    if file not in functions and "::" in row:
                        missing.append(f"{path.name}: {file}")
                if name and current in functions and name not in functions[current]:
                    missing.append(f"{path.name}: {current}::{name}")
    assert not missing, f"cited tests that do not exist: {missing}"


def test_the_github_actions_job_works_as_written() -> None:
    text = (ROOT / "docs" / "ci.md").read_text()
    job_yaml = next(block for block in re.findall(r"```yaml\n(.*?)```", text, re.S)
                    if "runs-on" in block)
    job = yaml.safe_load(job_yaml)
    steps = job["jobs"]["recompile-cli"]["steps"]
    python = next(step["with"]["python-version"] for step in steps
                  if step.get("uses", "").startswith("actions/setup-python"))
    assert python in {"3.11", "3.13"}, "use a Python that .ci/run tests"
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[0] == "pip install -e ."
    assert not any("tools/" in run for run in runs), "no vendored copy"
    budget_file = runs[1].split()[2]
    assert runs[1].startswith("recompile-cli check ") and (ROOT / budget_file).is_file()


def test_the_licence_and_type_marker_are_shipped() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"]["text"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert (ROOT / "recompile_cli" / "py.typed").is_file()
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["recompile_cli"]


def test_the_warning_filter_shown_works_in_plain_python(tmp_path: Path) -> None:
    """The docs show `python -W "error:recompile-cli guard:UserWarning"`: it must turn the
    guard's warning into an error (a `-W` naming our class is ignored by plain Python)."""
    import subprocess

    shown = '-W "error:recompile-cli guard:UserWarning"'
    assert shown in (ROOT / "docs" / "python-api.md").read_text()
    script = tmp_path / "job.py"
    script.write_text(
        "import jax, jax.numpy as jnp, recompile_cli\n"
        "f = jax.jit(lambda x: x * 2)\n"
        "with recompile_cli.guard(max_compiles=1, on='warn'):\n"
        "    f(jnp.ones(3)); f(jnp.ones(4))\n"
        "print('not stopped')\n")
    done = subprocess.run([sys.executable, "-W", "error:recompile-cli guard:UserWarning",
                           str(script)], capture_output=True, text=True,
                          env=update_docs.environment(), timeout=300)
    assert done.returncode == 1 and "not stopped" not in done.stdout
    assert "RecompileWarning: recompile-cli guard: <lambda> compiled 2 times" in done.stderr
