"""Public-only mode tells the truth (issue 24): what it cannot tell comes first, JAX's own eager
operations and internal jits are grouped as ``jax`` (read from the stack, as there is no
location), every cause but a first compile is ``unknown``, ``--count-calls`` fills in the calls
and locations, and every sample program imports on the JAX under test.

On JAX >= 0.9 these run with ``--hook-mode public-only``; on JAX 0.4.30 (``.ci/run``'s old-JAX
leg) the recorder falls back to public-only by itself, and the same assertions hold."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import ROOT, SAMPLES, user_functions

ENV = {"JAX_PLATFORMS": "cpu", "COLUMNS": "100", "PYTHONUNBUFFERED": "1"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | ENV
    return subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--hook-mode",
                           "public-only", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)


@pytest.fixture(scope="module")
def train_loop(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path_factory.mktemp("public") / "report.json"
    done = _run("--count-calls", "-o", str(out), str(SAMPLES / "train_loop.py"), "--epochs", "1")
    assert done.returncode == 0, done.stderr
    return done, json.loads(out.read_text())


def test_the_explanation_comes_first(train_loop) -> None:
    done, _ = train_loop
    report = done.stdout[done.stdout.index("recompile-cli: "):].splitlines()
    assert "hook mode public-only" in report[0]
    assert report[1].startswith("public-only mode (")
    assert "causes are unknown" in " ".join(line.strip() for line in report[1:3])
    assert "outside JAX's internals" not in done.stdout


def test_jax_eager_operations_are_grouped_as_jax(train_loop) -> None:
    done, report = train_loop
    assert set(user_functions(report)) == {"train_step"}
    jax_names = {f["name"] for f in report["functions"] if f["owner"] == "jax"}
    assert jax_names, "JAX's own jits (eager operations, jax.random) are recorded, as jax"
    assert "train_step: 2 compiles, 1 re-compile (unknown)" in done.stdout
    assert "+ jax: " in done.stdout


def test_only_unknown_causes(train_loop) -> None:
    _, report = train_loop
    codes = {cause["code"] for event in report["events"] for cause in event["causes"]}
    assert codes <= {"first_compile", "unknown"}, codes


def test_count_calls_fills_in_calls_and_location(train_loop) -> None:
    done, report = train_loop
    (step,) = user_functions(report).values()
    assert step["calls"] == 4
    assert step["defined_at"].endswith("train_loop.py:27")
    assert ".../train_loop.py:27      4       2         2" in done.stdout


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.py")))
def test_every_sample_imports_on_this_jax(sample: str) -> None:
    """Importing defines the functions (jit decorators run) without running ``__main__``."""
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('sample', {str(SAMPLES / sample)!r})\n"
            "module = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(module)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**ENV, "PATH": "/usr/bin:/bin"}, cwd=SAMPLES, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_slow_calls_are_not_observable_in_public_only_mode_never_zero(train_loop) -> None:
    done, report = train_loop
    assert report["slow_calls"]["observable"] is False
    assert report["slow_calls"]["groups"] == []
    assert "slow calls: not observable with --hook-mode public-only" in done.stdout


def test_slow_calls_on_this_jax_are_counted_or_said_not_observable(tmp_path) -> None:
    """Without --hook-mode: on a JAX whose internals the slow-call hooks need (0.10, the
    newest) the sample's 19 slow calls; on one without them (0.4.30) the report says so instead
    of 0, and a gate on slow calls fails."""
    import os

    from jax_support import SLOW_CALLS_MISSING

    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | ENV
    done = subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--max-slow-calls", "0",
                           "-o", str(out), str(SAMPLES / "slow_step.py"), "--steps", "20"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 1, done.stderr  # the gate fails both ways
    slow = json.loads(out.read_text())["slow_calls"]
    if SLOW_CALLS_MISSING is None:
        assert slow["observable"] is True
        assert {g["function"]: g["calls"] for g in slow["groups"]} == {"train_step": 19,
                                                                       "clip_norm": 2}
    else:
        assert slow["observable"] is False and slow["groups"] == []
        assert "slow calls: not observable on this JAX (" in done.stdout
        assert "cannot be checked" in done.stdout
