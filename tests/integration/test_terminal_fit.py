"""Every table of a report fits the terminal by one rule (``render.fit``), on real runs read at
80, 100 and 160 columns: no line is wider, the argument path and the cause stay whole in their
column (wrapped at a joint where they must, never cut), values wrap after ``->``, and the call
column and the seconds are the first to go."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT, SAMPLES
from jax_support import requires_private_hooks

# A train step whose weak-typed learning rate lives at opt_state['hyperparams']['learning_rate']
# (decayed with a Python float at the second epoch) and whose last batch is smaller.
STEP = """
    import jax, jax.numpy as jnp

    @jax.jit
    def train_step(params, opt_state, batch):
        lr = opt_state["hyperparams"]["learning_rate"]
        loss = lambda p: jnp.mean((batch["inputs"] @ p - batch["targets"]) ** 2)
        return params - lr * jax.grad(loss)(params), opt_state

    params = jnp.zeros((8, 1))
    opt_state = {"hyperparams": {"learning_rate": jnp.float32(0.1)}, "count": jnp.int32(0)}
    for epoch in range(2):
        if epoch == 1:
            opt_state["hyperparams"]["learning_rate"] = 0.05  # a Python float: weakly typed
        for n in (32, 32, 4):
            batch = {"inputs": jnp.ones((n, 8)), "targets": jnp.ones((n, 1))}
            params, opt_state = train_step(params, opt_state, batch)
"""
LEARNING_RATE = "opt_state['hyperparams']['learning_rate']"
WIDTHS = [80, 100, 160]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, Path]:
    """Real recordings, made once: the train step above, and two of the README's samples."""
    folder = tmp_path_factory.mktemp("fit")
    (folder / "train.py").write_text(textwrap.dedent(STEP))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "COLUMNS": "100"}
    runs = {"train.py": ["run", "train.py"],
            "train_loop": ["run", str(SAMPLES / "train_loop.py"), "--epochs", "1"],
            "shapes": ["profile", f"{SAMPLES / 'shapes.py'}:slow_function", "--args",
                       str(SAMPLES / "shapes.yaml")]}
    saved = {}
    for name, (verb, *args) in runs.items():
        saved[name] = folder / f"{name}.json"
        subprocess.run([sys.executable, "-m", "recompile_cli", verb, "--save", saved[name],
                        *args], cwd=folder, env=env, check=True, capture_output=True,
                       timeout=300)
    return saved


def tables(text: str) -> dict[str, list[dict[str, list[str]]]]:
    """Each table of a terminal report by the title above it: its rows, each a header -> the
    cell's lines (a wrapped cell has several)."""
    lines = text.splitlines()
    found = {}
    for i in range(1, len(lines) - 1):
        if not re.fullmatch(r"-+(  +-+)*", lines[i + 1]) or not lines[i]:
            continue
        spans = [m.span() for m in re.finditer(r"-+", lines[i + 1])]
        ends = [start for start, _ in spans[1:]] + [None]
        names = [lines[i][start:end].strip() for (start, _), end in zip(spans, ends, strict=True)]
        rows: list[dict[str, list[str]]] = []
        for line in lines[i + 2:]:
            if not line.strip() or line.startswith(("+ ", "... ")):
                break
            cells = [line[start:end].strip() for (start, _), end in zip(spans, ends, strict=True)]
            if rows and not cells[0]:  # the next lines of wrapped cells
                for name, cell in zip(names, cells, strict=True):
                    if cell:
                        rows[-1][name].append(cell)
            else:
                rows.append({name: [cell] if cell else [] for name, cell in zip(names, cells, strict=True)})
        found[lines[i - 1]] = rows
    return found


def report(cli, monkeypatch, session: Path, width: int) -> str:
    monkeypatch.chdir(session.parent)
    monkeypatch.setenv("COLUMNS", str(width))
    result = cli("report", session)
    assert result.exit_code == 0, result.output
    return result.stdout


def whole(cell: list[str]) -> str:
    """An argument path or a cause as written: its lines wrap at joints, without a blank."""
    return "".join(cell)


@requires_private_hooks
@pytest.mark.parametrize("width", WIDTHS)
def test_the_learning_rate_path_stays_whole_at_any_width(cli, monkeypatch, sessions, width):
    text = report(cli, monkeypatch, sessions["train.py"], width)
    assert max(map(len, text.splitlines())) <= width, text
    found = tables(text)
    for title in ("Re-compilations by cost", "Recompilation events"):
        rows = found[title]
        assert {(whole(r["argument"]), whole(r["cause"])) for r in rows} == {
            (LEARNING_RATE, "weak_type"), ("batch['inputs']", "shape")}, text
        values = "values" if "values" in rows[0] else "before -> after"
        for row in rows:  # values wrap after their arrow, and lose nothing
            assert " ".join(row[values]) in {"f32[] -> ~f32[]", "f32[32,8] -> f32[4,8]"}
            assert all(line.endswith("->") for line in row[values][:-1]), text
    columns = set(found["Re-compilations by cost"][0])
    assert "seconds" in columns or "call" not in columns  # the call goes before the seconds
    if width == 160:  # room for everything, on one line each
        assert {"call", "seconds"} <= columns, text
        assert all(len(cell) <= 1 for row in found["Re-compilations by cost"]
                   for cell in row.values()), text
    if width == 80:  # the call went first, the path wrapped at a joint
        assert "call" not in columns, text


@requires_private_hooks
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("sample", ["train_loop", "shapes"])
def test_every_table_of_a_sample_fits_and_keeps_its_arguments(cli, monkeypatch, sessions,
                                                              sample, width):
    text = report(cli, monkeypatch, sessions[sample], width)
    assert max(map(len, text.splitlines())) <= width, text
    found = tables(text)
    assert {"Re-compilations by cost", "Functions", "Recompilation events"} <= set(found)
    argument = "batch['x']" if sample == "train_loop" else "x"
    for title in ("Re-compilations by cost", "Recompilation events"):
        [row] = found[title]
        assert (whole(row["argument"]), whole(row["cause"])) == (argument, "shape"), text
    [function] = found["Functions"]
    assert whole(function["function"]) in {"train_step", "slow_function"}
    if width >= 100:  # what the README shows, made at 100 columns: nothing left out
        assert "call" in found["Re-compilations by cost"][0], text


def test_the_readme_says_its_blocks_are_made_at_100_columns():
    readme = (ROOT / "README.md").read_text()
    assert "100 columns" in readme.split("## Profile one function")[0]


# A jitted step in a module two folders down, with a name too long to fit a gate table's
# target column at 80 columns whole.
CLASSIFIER = """
    import jax, jax.numpy as jnp


    @jax.jit
    def train_classifier_step(params, batch):
        return params - 0.1 * jnp.mean(batch @ params)
"""
STEPS = """
    calls:
      - sweep: {n: [32, 32, 4]}
        args: [{array: [8, 1]}, {array: ["${n}", 8]}]
"""


@requires_private_hooks
def test_at_80_columns_a_gate_target_keeps_its_function_and_a_location_its_file(
        cli, monkeypatch, tmp_path):
    folder = tmp_path / "experiments" / "vision"
    folder.mkdir(parents=True)
    source = textwrap.dedent(CLASSIFIER)
    (folder / "wide_classifier.py").write_text(source)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "return" in text)
    (tmp_path / "steps.yaml").write_text(textwrap.dedent(STEPS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    result = cli("profile", "experiments/vision/wide_classifier.py:train_classifier_step",
                 "--args", "steps.yaml", "--max-compiles", "1")
    text = result.stdout
    assert result.exit_code == 1, result.output
    assert max(map(len, text.splitlines())) <= 80, text
    found = tables(text)
    [gate] = [rows for rows in found.values() if rows and "target" in rows[0]]
    target = whole(gate[0]["target"])
    # the module path gives way, from its start; the function's name stays whole
    assert target.startswith("...") and target.endswith(":train_classifier_step"), text
    # the compile cost's line keeps its file name and line, its folders left out first
    section = text.split("\nCompile cost\n", 1)[1].split("\nRecompilation events\n", 1)[0]
    [cost] = tables(section).values()
    assert [whole(row["line"]) for row in cost] == [f"wide_classifier.py:{line}"], text
    # a cause code in "top causes" wraps between the counts, never cut in the middle
    [function] = found["Functions"]
    assert " ".join(function["top causes"]) == "first_compile 1, shape 1", text
