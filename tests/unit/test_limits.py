"""Every gate limit is declared once (``gate.limits.LIMITS``): the budget file's keys, the
command-line flags of every command and the docs' table all come from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.main import get_command

from recompile_cli.cli.app import app
from recompile_cli.errors import BudgetError
from recompile_cli.gate.budgets import load_budget_file
from recompile_cli.gate.limits import BUDGET_KEYS, LIMITS, Budget, flags_of, table_markdown

ROOT = Path(__file__).resolve().parents[2]


def _flags(command: str) -> set[str]:
    click = get_command(app).commands[command]  # type: ignore[attr-defined]
    return {option for param in click.params for option in param.opts if option.startswith("--")}


@pytest.mark.parametrize("command", ["profile", "run", "check", "forecast"])
def test_each_command_has_the_flags_its_limits_declare(command):
    declared = {limit.flag for limit in LIMITS if limit.flag}
    assert declared & _flags(command) == {limit.flag for limit in flags_of(command)}


def test_every_command_that_gates_takes_at_most_twelve_parameters():
    from recompile_cli.cli import app as app_module
    from recompile_cli.cli import forecast_command

    for function in (app_module.profile, app_module.run, app_module.check,
                     forecast_command.forecast):
        own = function.__wrapped__.__code__  # type: ignore[attr-defined]
        assert own.co_argcount + own.co_kwonlyargcount <= 12, function.__name__


def test_the_docs_table_is_the_declaration():
    text = (ROOT / "docs" / "ci.md").read_text()
    table = re.search(r"<!-- limits-table -->\n(.*?)<!-- /limits-table -->", text, re.S)
    assert table is not None and table.group(1) == table_markdown(), (
        "docs/ci.md's limits table is stale: paste gate.limits.table_markdown()")
    assert all(f"`{key}`" in table.group(1) for key in BUDGET_KEYS)


def _budget(tmp_path: Path, limits: str) -> Path:
    path = tmp_path / "recompile-budget.yaml"
    path.write_text(f"targets:\n  - target: m.py:f\n    budgets:\n      f: {limits}\n")
    return path


@pytest.mark.parametrize("key", BUDGET_KEYS)
def test_every_budget_key_is_read_into_its_field(tmp_path, key):
    limit = next(limit for limit in LIMITS if limit.key == key)
    value = {"count": "3", "seconds": "2.5", "tolerance": "0.25", "switch": "true",
             "causes": "[shape]"}[limit.kind]
    extra = "" if key == "max_traces" else ", max_traces: 1"
    (target,) = load_budget_file(_budget(tmp_path, f"{{{key}: {value}{extra}}}")).targets
    (budget,) = target.budgets
    assert getattr(budget, key) == {"3": 3, "2.5": 2.5, "0.25": 0.25, "true": True,
                                    "[shape]": ("shape",)}[value]
    assert isinstance(budget, Budget)


@pytest.mark.parametrize("limits", ["{max_compiles: null}", "{max_slow_calls: null}",
                                    "{max_eager_compiles: null, max_traces: 2}",
                                    "{allow_unrecorded: true}", "{tolerance: 0.1}"])
def test_a_budget_that_sets_no_limit_is_refused(tmp_path, limits):
    with pytest.raises(BudgetError, match=r"sets no limit|is null, which sets no limit"):
        load_budget_file(_budget(tmp_path, limits))
