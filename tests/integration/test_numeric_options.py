"""Every numeric option of every command is a finite number in its range, checked before any
work (issue 29): ``--fail-on-compile-regression inf`` would make a gate that can never fail,
``--max-compiles`` of 400 digits one that guards nothing. The options are found by reading the
commands themselves, so that an option added later is tried too; every hostile value is exit 2
naming the option, no traceback, and the target never runs. Sums of limits (a forecast's
``--warmup`` calls plus its ``--args`` calls) are held to the limit of each part."""

from __future__ import annotations

import types
import typing

import pytest
import typer

from recompile_cli import ranges
from recompile_cli.cli.app import app
from recompile_cli.gate.limits import LIMITS, Kind

PROGRAM = """
from pathlib import Path
Path(__file__).with_name("ran").write_text("yes")

def f():
    return 1
"""
HOSTILE = ["inf", "-inf", "nan", "1e309", "-1", "1" + "0" * 400, "abc", ""]
# just past each option's range (a new numeric option must say where its range ends)
# (every gate limit's count flag from its one declaration, gate.limits.LIMITS)
ABOVE = {**{limit.flag: ranges.MAX_COUNT + 1 for limit in LIMITS
            if limit.flag and limit.kind == Kind.COUNT},
         "--max-calls": ranges.MAX_CALLS + 1,
         "--max-array-bytes": ranges.MAX_BYTES + 1, "--fail-on-compile-regression": 1e7,
         "--host-timeout": 86401, "--timeout": 30 * 86400 + 1,
         "--warmup-parallel": ranges.MAX_THREADS + 1}
# what an option needs beside it for its value to be looked at
_COMPANIONS = {"--host-timeout": ["--check-hosts"]}


def numeric_options() -> list[tuple[str, str]]:
    """(command, option) for every option of every command whose value is a number, read from
    the commands' own annotations (``Annotated[int | None, typer.Option(...)]``)."""
    found = []
    for info in app.registered_commands:
        callback = info.callback
        assert callback is not None
        name = info.name or callback.__name__
        for hint in typing.get_type_hints(callback, include_extras=True).values():
            if typing.get_origin(hint) is not typing.Annotated:
                continue
            base, *extras = typing.get_args(hint)
            kinds = set(typing.get_args(base)) if isinstance(base, types.UnionType) else {base}
            option = next((e for e in extras if isinstance(e, typer.models.OptionInfo)), None)
            if option is not None and kinds - {type(None)} <= {int, float} and (
                    kinds & {int, float}):
                # in Annotated, typer keeps the first declaration as the "default"
                decls = [d for d in (option.default, *option.param_decls)
                         if isinstance(d, str) and d.startswith("--")]
                found.append((name, decls[0]))
    return found


NUMERIC = numeric_options()


def test_the_commands_numeric_options_are_all_found():
    assert {("run", "--max-compiles"), ("run", "--fail-on-compile-regression"),
            ("run", "--host-timeout"), ("check", "--fail-on-compile-regression"),
            ("profile", "--max-calls"), ("profile", "--max-array-bytes"),
            ("forecast", "--max-calls"), ("forecast", "--max-array-bytes"),
            ("forecast", "--max-compiles"), ("profile", "--max-compiles")} <= set(NUMERIC)


def _invocation(command, option, value, prog, budget):
    head = [command, *_COMPANIONS.get(option, []), option, value]
    if command == "run":
        return [*head, prog]
    if command == "check":
        return [*head, budget]
    return [*head, f"{prog}:f"]


@pytest.mark.parametrize("command, option", NUMERIC)
def test_every_numeric_option_refuses_what_is_not_a_finite_number_in_range(
        cli, program, tmp_path, command, option):
    prog = program("prog", PROGRAM)
    budget = tmp_path / "recompile-budget.yaml"
    budget.write_text(f"targets:\n  - script: {prog}\n    budgets:\n      f: {{max_compiles: 1}}\n")
    for value in [*HOSTILE, str(ABOVE[option])]:
        result = cli(*_invocation(command, option, value, prog, budget))
        assert result.exit_code == 2, (option, value, result.output)
        assert option in result.output, (option, value, result.output)
        assert "Traceback" not in result.output
        assert not prog.with_name("ran").exists(), (option, value)


def test_compilation_cache_refuses_an_empty_path_and_a_file(cli, program, tmp_path):
    prog = program("prog", PROGRAM)
    afile = tmp_path / "afile"
    afile.write_text("")
    for command, target in (("run", prog), ("profile", f"{prog}:f")):
        for value, words in (("", "the path is empty"), ("  ", "the path is empty"),
                             (afile, "is a file, not a folder")):
            result = cli(command, "--compilation-cache", value, target)
            assert result.exit_code == 2, (command, value, result.output)
            assert "--compilation-cache" in result.output and words in result.output
            assert not prog.with_name("ran").exists()


@pytest.mark.parametrize("option", ["--args", "--warmup", "--baseline"])
def test_an_empty_input_path_is_refused(cli, program, option):
    prog = program("prog", PROGRAM)
    result = cli("forecast", option, "", f"{prog}:f")
    assert result.exit_code == 2 and "the path is empty" in result.output, result.output
    assert not prog.with_name("ran").exists()


def test_warmup_and_workload_calls_are_held_to_one_limit_together(cli, program, tmp_path):
    prog = program("prog", PROGRAM)
    warm, work = tmp_path / "warm.yaml", tmp_path / "work.yaml"
    warm.write_text("calls:\n  - {repeat: 60000}\n")
    work.write_text("calls:\n  - {repeat: 50000}\n")
    result = cli("forecast", "--warmup", warm, "--args", work, f"{prog}:f")
    assert result.exit_code == 2, result.output
    assert ("The specs make 110,000 calls together (--warmup 60,000 and --args 50,000), more "
            "than the limit of 100,000 calls") in result.output
    assert not prog.with_name("ran").exists()
    tight = cli("forecast", "--max-calls", "6", "--warmup", warm, "--args", work, f"{prog}:f")
    assert tight.exit_code == 2 and "more than the limit of 6 calls" in tight.output
    warm.write_text("calls:\n  - {repeat: 3}\n")
    work.write_text("calls:\n  - {repeat: 3}\n")
    assert cli("forecast", "--max-calls", "6", "--warmup", warm, "--args", work,
               f"{prog}:f").exit_code == 0
