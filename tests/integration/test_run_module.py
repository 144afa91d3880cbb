"""Issue 45: ``recompile-cli run -m MODULE ARGS...`` runs a module as ``python -m`` would: the
working folder first on ``sys.path`` (a checkout's copy wins over an installed one), a
package's ``__main__``, ``sys.argv[0]`` its file, and everything after MODULE is the module's,
options included."""

from __future__ import annotations

import json

import pytest

from recompile_cli.cli.app import _options_end_at_module

PACKAGE_MAIN = """
import json, sys
import jax, jax.numpy as jnp
import helper                      # found in the working folder, as python -m finds it

print(json.dumps({"argv": sys.argv, "path0": sys.path[0]}))

@jax.jit
def step(x):
    return x * 2

step(jnp.ones(3)); step(jnp.ones(4))
"""


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    (tmp_path / "demo_pkg").mkdir()
    (tmp_path / "demo_pkg" / "__init__.py").write_text("")
    (tmp_path / "demo_pkg" / "__main__.py").write_text(PACKAGE_MAIN)
    (tmp_path / "helper.py").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_m_runs_a_package_as_python_m_with_its_arguments(cli, checkout, capsys):
    result = cli("run", "--format", "json", "--output", "report.json", "-m", "demo_pkg",
                 "-q", "--format", "x", "tests")
    assert result.exit_code == 0, result.output
    shown = json.loads(next(line for line in (result.output + capsys.readouterr().out)
                            .splitlines() if line.startswith('{"argv"')))
    assert shown["argv"] == [str(checkout / "demo_pkg" / "__main__.py"), "-q", "--format",
                             "x", "tests"]
    assert shown["path0"] == str(checkout)
    report = json.loads((checkout / "report.json").read_text())
    assert report["target"] == "-m demo_pkg -q --format x tests"
    step = next(f for f in report["functions"] if f["name"] == "step")
    assert step["compiles"] == 2


def test_run_m_errors(cli, checkout):
    missing = cli("run", "-m", "no_such_module_here")
    assert missing.exit_code == 2
    assert "No module named 'no_such_module_here'" in missing.output
    neither = cli("run")
    assert neither.exit_code == 2 and "Missing SCRIPT" in neither.output


def test_the_options_end_at_the_module():
    params = _params()
    assert _options_end_at_module(params, ["-m", "pytest", "-q", "-x"]) == [
        "-m", "pytest", "--", "-q", "-x"]
    assert _options_end_at_module(params, ["--format", "json", "--module=pytest", "-k", "a"]) \
        == ["--format", "json", "--module=pytest", "--", "-k", "a"]
    assert _options_end_at_module(params, ["-mpytest", "--", "-x"]) == [
        "-mpytest", "--", "--", "-x"]
    assert _options_end_at_module(params, ["train.py", "-m", "x"]) == ["train.py", "-m", "x"]


def _params():
    import typer.main

    from recompile_cli.cli.app import app

    command = typer.main.get_command(app)
    return command.commands["run"].params  # type: ignore[attr-defined]
