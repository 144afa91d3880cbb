"""The integration layer's fixtures: real JAX on CPU, clean caches per test, and the CLI run
in-process. Constants and report helpers are in ``helpers.py`` (``from helpers import ...``),
what the installed JAX supports in ``jax_support.py``."""

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
