"""Why the persistent compilation cache missed: real runs of sample_programs/sweep.py sharing one
cache directory (every compile stored: JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0), compared
with `diff` in table, Markdown and JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, SAMPLES
from jax_support import requires_private_hooks

FIX = ("a hyperparameter baked into the program: pass it as an argument and one cache entry "
       "serves the whole sweep")


def _run(tmp: Path, name: str, lr: str, cwd: Path = ROOT, script: str = "sample_programs/sweep.py",
         **env: str) -> Path:
    saved = tmp / f"{name}.json"
    environment = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    environment.update(JAX_PLATFORMS="cpu", JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", **env)
    proc = subprocess.run(
        [sys.executable, "-m", "recompile_cli", "run", "--compilation-cache", str(tmp / "cache"),
         "--save", str(saved), script, lr],
        capture_output=True, text=True, cwd=cwd, env=environment, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return saved


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("sweep")
    other = tmp / "other-checkout"
    (other / "sample_programs").mkdir(parents=True)
    shutil.copy(SAMPLES / "sweep.py", other / "sample_programs" / "sweep.py")
    metadata = {"JAX_COMPILATION_CACHE_INCLUDE_METADATA_IN_KEY": "1"}
    return {"lr1": _run(tmp, "lr1", "0.1"), "again": _run(tmp, "again", "0.1"),
            "lr2": _run(tmp, "lr2", "0.05"),
            "flag": _run(tmp, "flag", "0.1", XLA_FLAGS="--xla_cpu_enable_fast_math=true"),
            "moved": _run(tmp, "moved", "0.1", cwd=other),
            "meta": _run(tmp, "meta", "0.1", **metadata),
            "meta_moved": _run(tmp, "meta_moved", "0.1", cwd=other, **metadata)}


def _diff(old: Path, new: Path, fmt: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "diff", "-f", fmt, str(old),
                           str(new)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _train_step(path: Path) -> dict:
    events = json.loads(path.read_text())["events"]
    [event] = [e for e in events if e["function"] == "train_step" and e["compiled"]]
    return event


@requires_private_hooks
def test_each_compile_records_its_key_and_outcome(runs):
    first, again = _train_step(runs["lr1"]), _train_step(runs["again"])
    assert first["persistent_cache"] == "miss_written"
    assert again["persistent_cache"] == "hit"
    key = first["cache_key"]
    assert key["key"] == again["cache_key"]["key"]
    assert key["key"].startswith("jit_train_step-")
    parts = [item.partition("=")[0] for item in key["parts"].split("; ")]
    assert parts == ["computation", "jax_lib version", "backend version", "XLA flags",
                     "compile_options", "accelerator_config", "compression", "custom_hook"]
    assert [c["value"] for c in key["constants"]][-1] == "0.1"
    assert key["constants"][-1]["site"].endswith("sample_programs/sweep.py:29")
    # A hit saves the exact compile time that was stored (not JAX's whole seconds, 0 here).
    hit = again["cache_key"]
    assert hit["stored_exact"] is True
    assert hit["stored_seconds"] == pytest.approx(key["compile_seconds"])
    assert again["cache_saved_seconds"] == pytest.approx(
        hit["stored_seconds"] - hit["retrieval_seconds"])
    assert again["cache_saved_seconds"] > 0


@requires_private_hooks
def test_the_same_run_again_is_a_hit_that_diff_does_not_flag(runs):
    table = _diff(runs["lr1"], runs["again"], "table")
    assert "every compile used a key that the other run had" in table
    assert "train_step: key" not in table
    data = json.loads(_diff(runs["lr1"], runs["again"], "json"))["persistent_cache"]
    assert data["changed"] == [] and data["same"] == 5
    assert "nothing to explain" in _diff(runs["lr1"], runs["again"], "markdown")


@requires_private_hooks
def test_a_changed_learning_rate_is_named_with_both_values(runs):
    table = _diff(runs["lr1"], runs["lr2"], "table")
    assert "constants: only constants differ (1 constant differs)" in table
    assert "constant 4 (f32[]): 0.1 -> 0.05 at sample_programs/sweep.py:29" in table
    assert f"fix: {FIX}" in table
    markdown = _diff(runs["lr1"], runs["lr2"], "markdown")
    assert "### Persistent compilation cache" in markdown
    assert "    - constant 4 (f32[]): 0.1 -> 0.05 at sample_programs/sweep.py:29" in markdown
    [changed] = json.loads(_diff(runs["lr1"], runs["lr2"], "json"))["persistent_cache"]["changed"]
    assert changed["function"] == "sweep.py:train_step"
    [change] = changed["changes"]
    assert change["part"] == "constants" and change["fix"] == FIX
    [detail] = change["details"]
    assert (detail["before"], detail["after"]) == ("0.1", "0.05")
    assert detail["site"].endswith("sample_programs/sweep.py:29")


@requires_private_hooks
def test_an_xla_flag_is_named(runs):
    table = _diff(runs["lr1"], runs["flag"], "table")
    assert "xla_flags: XLA flags differ: --xla_cpu_enable_fast_math=true added" in table
    assert "4 of JAX's own functions changed too" in table
    assert "--xla_cpu_enable_fast_math=true added" in _diff(runs["lr1"], runs["flag"],
                                                            "markdown")
    [changed] = json.loads(_diff(runs["lr1"], runs["flag"], "json"))["persistent_cache"]["changed"]
    parts = [c["part"] for c in changed["changes"]]
    assert parts == ["xla_flags", "compile_options"]
    assert changed["changes"][0]["details"] == [{
        "what": "--xla_cpu_enable_fast_math", "before": None,
        "after": "--xla_cpu_enable_fast_math=true", "site": None}]


@requires_private_hooks
def test_another_checkout_folder_is_a_hit(runs):
    # JAX strips location metadata from the key by default: the moved program hits.
    assert _train_step(runs["moved"])["persistent_cache"] == "hit"
    for fmt in ("table", "markdown"):
        assert "nothing to explain" in _diff(runs["lr1"], runs["moved"], fmt)
    assert json.loads(_diff(runs["lr1"], runs["moved"], "json"))["persistent_cache"][
        "changed"] == []


@requires_private_hooks
def test_another_checkout_folder_is_metadata_only_when_jax_keys_on_metadata(runs):
    table = _diff(runs["meta"], runs["meta_moved"], "table")
    assert ("metadata: only location metadata differs (e.g. another checkout folder): the "
            "programs are otherwise identical") in table
    assert "metadata: only location metadata differs" in _diff(runs["meta"],
                                                              runs["meta_moved"], "markdown")
    [changed] = json.loads(_diff(runs["meta"], runs["meta_moved"], "json"))[
        "persistent_cache"]["changed"]
    assert [c["part"] for c in changed["changes"]] == ["metadata"]
    # Against the run without it, the configuration value that put metadata in the key.
    parts = [c["part"] for c in json.loads(_diff(runs["lr1"], runs["meta"], "json"))[
        "persistent_cache"]["changed"][0]["changes"]]
    assert parts == ["jax_config", "metadata"]


@requires_private_hooks
def test_report_shows_hits_misses_and_time_saved(runs):
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "report", str(runs["again"])],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # the head lines wrap at the terminal's width
    assert "5 hits (" in text and "s saved), 0 misses written" in text
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "report", "-f", "json",
                           str(runs["lr2"])], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    totals = json.loads(proc.stdout)["totals"]
    assert (totals["persistent_cache_hits"], totals["persistent_cache_misses_written"]) == (4, 1)
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "report", str(runs["lr2"])],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    text = " ".join(proc.stdout.split())
    assert ("missed: train_step; to see why, save this run and an earlier one (--save) and "
            "compare them: recompile-cli diff EARLIER.json THIS.json") in text


def test_public_only_mode_says_the_explanation_needs_jax_0_9(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "recompile_cli", "run", "--hook-mode", "public-only",
         "--compilation-cache", str(tmp_path / "cache"), "--save", str(tmp_path / "s.json"),
         "sample_programs/sweep.py", "0.1"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env=dict(os.environ, JAX_PLATFORMS="cpu", JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0"))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert ("why the persistent compilation cache missed (its key taken apart) needs JAX >= 0.9 "
            "and hook mode private") in text
    assert "5 misses written" in text  # still counted from the public events
    saved = tmp_path / "s.json"
    diff = subprocess.run([sys.executable, "-m", "recompile_cli", "diff", str(saved), str(saved)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ("neither run has cache keys, so key changes cannot be explained: it was recorded "
            "with hook mode public-only (cache keys need the private hooks, JAX >= 0.9)"
            ) in " ".join(diff.stdout.split())


@requires_private_hooks
def test_a_changed_operation_is_named_with_its_user_line(tmp_path):
    source = ("import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef step(x):\n"
              "    y = jnp.sin(x)\n    return y {op} 2.0\n\n\nstep(jnp.ones(4))\n")
    saved = []
    for name, op in (("mul", "*"), ("add", "+")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "prog.py").write_text(source.format(op=op))
        saved.append(_run(tmp_path, name, "0", cwd=folder, script="prog.py"))
    [changed] = json.loads(_diff(*saved, "json"))["persistent_cache"]["changed"]
    [change] = changed["changes"]
    assert change["part"] == "computation"
    [detail] = change["details"]
    assert (detail["before"], detail["after"]) == ("multiply", "add")
    assert detail["site"].endswith("prog.py:8")
    assert "the program differs: first at operation" in _diff(*saved, "table")


@requires_private_hooks
def test_a_baked_in_table_that_grew_is_named_with_its_shapes_and_user_line(tmp_path):
    """A global table read inside the function is baked in as a constant: when it grows, the
    cache ``diff`` names it by its types (``i32[17,4] -> i32[17,8]``) and the line of the
    function that reads it, not "constant -> constant" at the call's line."""
    source = ("import sys\nimport jax, jax.numpy as jnp, numpy as np\n"
              "W = int(sys.argv[1])\nTABLE = np.arange(17 * W, dtype=np.int32).reshape(17, W)\n"
              "\n@jax.jit\ndef lookup(i):\n    return jnp.asarray(TABLE)[i].sum()\n\n"
              "lookup(3)\n")
    (tmp_path / "table.py").write_text(source)
    saved = [_run(tmp_path, f"w{width}", str(width), cwd=tmp_path, script="table.py")
             for width in (4, 8)]
    table = _diff(*saved, "table")  # run from the repository: the paths stay absolute
    line = f"{tmp_path / 'table.py'}:8"
    assert ("computation: the program differs: a baked-in constant 1 changed shape "
            f"(i32[17,4] -> i32[17,8]) at {line}") in table
    assert f"constant 1: i32[17,4] -> i32[17,8] at {line}" in table
    assert "constant -> constant" not in table
