"""What each compile after a warm-up lacked (issue 46, items 2 and 4), on real JAX, recorded
in-process: the table of misses (call site, argument and value the plan lacked, the nearest
warmed signature, the lines to add to the plan) whose lines, added to the plan, cover the next
run; ``--max-compiles-after-warmup``; and a script without a main guard whose jit is made inside
a function, warmed at its first call."""

from __future__ import annotations

from pathlib import Path

from jax_support import requires_private_hooks
from test_warmup import LOOP, after_warmup, recorded_plan, write

pytestmark = requires_private_hooks

NO_GUARD = """
import sys

import jax
import jax.numpy as jnp


def make_step(scale):
    @jax.jit
    def step(params, batch):
        h = batch["x"] @ params["w"]
        return jnp.mean((h - batch["y"]) ** 2) * scale
    return step


def train(sizes):
    step = make_step(2.0)
    params = {"w": jnp.zeros((4, 1))}
    for n in sizes:
        step(params, {"x": jnp.ones((n, 4)), "y": jnp.ones((n, 1))})


train([int(s) for s in sys.argv[1:]] or [32, 32, 8])
"""


def add_lines(plan: Path, block: str, lines: str) -> None:
    """``lines`` (a miss's ``plan_line``) added at the end of the plan's ``block``."""
    text = plan.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(text) if line.startswith(f"def {block}("))
    end = next(i for i in range(start + 1, len(text)) if text[i].strip() and
               not text[i].startswith(" "))
    while not text[end - 1].strip():
        end -= 1
    added = "".join("    " + line + "\n" for line in lines.splitlines())
    plan.write_text("".join([*text[:end], added, *text[end:]]))


def test_each_miss_names_what_the_plan_lacked_and_its_lines_cover_the_next_run(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)  # batches of 32, 16 and 8
    result, report = after_warmup(cli, tmp_path, plan, script, "32", "30")
    assert result.exit_code == 1, result.output
    (miss,) = report["warmup_coverage"]["misses"]
    assert miss["call_site"].startswith(str(script)) and miss["call_site"].endswith("(main)")
    assert miss["causes"][0]["argument"] == "batch['x']"
    assert miss["causes"][0]["after"] == "f32[30,4]"
    before = miss["causes"][0]["before"]  # the closest planned batch (ties: the latest)
    assert before in ("f32[32,4]", "f32[16,4]", "f32[8,4]")
    assert f"batch['x']={before}" in miss["nearest"]
    assert miss["plan_block"] == "_train_step"
    assert "'x': _array((30, 4), 'float32')" in miss["plan_line"]
    assert "recompile-cli warmup RUN.json" in miss["fix"]
    assert "Compiles after the warm-up (what the plan lacked)" in result.output
    assert "1. add to the plan's _train_step()" in result.output
    assert "[nearest warmed: " in result.output  # the gate's message too

    add_lines(plan, miss["plan_block"], miss["plan_line"])
    result, report = after_warmup(cli, tmp_path, plan, script, "32", "30")
    assert result.exit_code == 0, result.output
    assert report["warmup_coverage"]["misses"] == []


def test_max_compiles_after_warmup(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)
    over = cli("run", "--after-warmup", plan, "--max-compiles-after-warmup", "1", script,
               "30", "29")
    assert over.exit_code == 1
    assert "train_step: 2 compiles after the warm-up (" in over.output
    assert "limit 1)" in over.output
    under = cli("run", "--after-warmup", plan, "--max-compiles-after-warmup", "1", script, "30")
    assert under.exit_code == 0, under.output
    # no warm-up ran: the limit cannot be checked, which fails unless allowed
    blind = cli("run", "--max-compiles-after-warmup", "0", script, "8")
    assert blind.exit_code == 1 and "cannot be checked" in blind.output
    allowed = cli("run", "--max-compiles-after-warmup", "0", "--allow-unrecorded", script, "8")
    assert allowed.exit_code == 0, allowed.output


def test_a_script_without_a_main_guard_is_warmed_at_its_first_call(cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    script = write(tmp_path, "flat.py", NO_GUARD)
    session, plan = tmp_path / "s.json", tmp_path / "plan.py"
    assert cli("run", "--save", session, script).exit_code == 0
    summary = cli("warmup", session, "-o", plan)
    assert "step: 2 signatures warmed at its first call" in summary.output, summary.output
    assert "AT_FIRST_CALL = {('step', 'flat.py', 9): _step}" in plan.read_text()

    result, report = after_warmup(cli, tmp_path, plan, script, "8", "32", "8")
    assert result.exit_code == 0, result.output
    warmup = report["warmup"]
    assert warmup["at_first_call"] and warmup["waiting"][0].startswith("step@")
    (first,) = warmup["first_calls"]
    assert first["compiled"] == 2 and "failed" not in first
    assert report["warmup_coverage"]["misses"] == []
    assert "warm-up at first call: step at " in result.output
    steps = [e for e in report["events"] if e["function"] == "step" and e["compiled"]]
    assert all(e["start_seconds"] < first["ended_seconds"] for e in steps)

    # a size the recorded run never made: named, with the lines to add to _step()
    result, report = after_warmup(cli, tmp_path, plan, script, "8", "16")
    assert result.exit_code == 1
    (miss,) = report["warmup_coverage"]["misses"]
    assert miss["plan_block"] == "_step" and "'x': _array((16, 4), 'float32')" in miss["plan_line"]
