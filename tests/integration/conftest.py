"""The integration layer's fixtures: real JAX on CPU, clean caches per test, and the CLI run
in-process. A run's target is recorded in this process too (``process.launchers.InProcess``),
through the same recording and stream reader as a measured process: tests of what a report
says need no process. A test of process behaviour (exit codes of a dying target, signals, the
supervisor, start-up) is marked ``measured_process``: its runs start a real measured process.
Constants and report helpers are in ``helpers.py`` (``from helpers import ...``), what the
installed JAX supports in ``jax_support.py``."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import pytest
from typer.testing import CliRunner

from recompile_cli.cli.app import app
from recompile_cli.process import launchers, prestart


@pytest.fixture(autouse=True)
def clean_jax_caches():
    """Every test starts from empty JAX caches, so compile counts do not depend on order."""
    jax.clear_caches()
    yield
    jax.clear_caches()


class Cli:
    """Runs ``recompile-cli`` in-process and keeps the result."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str):
        result = self.runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        return result

    def json(self, *args: str, tmp_path: Path):
        out = tmp_path / f"report-{len(list(tmp_path.glob('report-*.json')))}.json"
        command, *rest = args  # options go before `run`'s SCRIPT, which takes the rest
        result = self(command, "--output", out, *rest)
        return result, (json.loads(out.read_text()) if out.exists() else None)


@pytest.fixture(scope="session")
def warm_processes():
    """Measured processes for the tests marked ``measured_process``: one waits, Python started
    and the recorder imported, for the next run, and another starts as each run takes it
    (``launchers.Subprocess``), so that a test does not wait for Python to start. A run whose
    start-up variables differ (``spawn.STARTUP``) gets a process started for it, as the CLI's
    would."""
    launcher = launchers.Subprocess(spare_env=os.environ)
    yield launcher
    prestart.discard()


@pytest.fixture(autouse=True)
def launcher(request, monkeypatch):
    """Where the runs of this test record: in this process, unless it is marked
    ``measured_process`` (then in a measured process of their own, kept warm)."""
    if request.node.get_closest_marker("measured_process") is None:
        monkeypatch.setattr(launchers, "DEFAULT", launchers.InProcess())
    else:
        warm = request.getfixturevalue("warm_processes")
        prestart.ahead(warm.spare_env)
        monkeypatch.setattr(launchers, "DEFAULT", warm)
    return launchers.DEFAULT


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture
def program(tmp_path):
    """Write a Python module into tmp_path and return its path."""

    def write(name: str, source: str) -> Path:
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        return path

    return write


# -- a small project for the gate tests (check, quick gates) ---------------------------------
GATE_PROGRAM = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return jnp.tanh(x) * 2
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with a program, a spec and a budget file; runs from elsewhere."""
    (tmp_path / "prog.py").write_text(GATE_PROGRAM)
    (tmp_path / "two_shapes.yaml").write_text(
        "calls:\n  - args: [{array: [3]}]\n  - args: [{array: [4]}]\n  - args: [{array: [3]}]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path
