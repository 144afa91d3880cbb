"""The command line's rough edges from a new user's first hour (issue 24), one test each: what
`diff` says, `merge`'s notes, CI annotations and JUnit names, `--version` and `-h`, readable
help, plurals, and the CSV columns that `to_pandas()` shares.

Most use hand-built sessions (``tests/builders.py``) saved to files; the CI test runs real JAX."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from builders import ENV, f32_event, session
from helpers import SAMPLES
from msgspec.structs import replace

from recompile_cli import __version__
from recompile_cli.analysis.report import build_report
from recompile_cli.gate.evaluate import Gated, Gates, evaluate
from recompile_cli.session.files import save_session

COMMANDS = ["profile", "run", "check", "report", "diff", "merge", "forecast"]


def _saved(tmp_path, name, events, **fields):
    path = tmp_path / name
    save_session(session(events, **fields), path)
    return path


def _compiles(n: int, function: str = "step") -> list:
    return [f32_event(i, function, n=3 + i, defined_at="prog.py:3") for i in range(n)]


@pytest.fixture
def old_and_new(tmp_path):
    return (_saved(tmp_path, "old.json", _compiles(1)),
            _saved(tmp_path, "new.json", _compiles(3)))


def test_diff_fail_on_regression_names_the_function(cli, old_and_new):
    result = cli("diff", *old_and_new, "--fail-on-regression")
    assert result.exit_code == 1
    assert ("recompile-cli diff: FAILED (--fail-on-regression): 1 function compiles more "
            "often in NEW: prog.py:step: 1 compile -> 3 (+2)") in result.output
    assert cli("diff", *old_and_new).exit_code == 0  # without the flag, a report only


def test_diff_of_unrelated_targets_says_so(cli, tmp_path):
    old = _saved(tmp_path, "a.json", _compiles(1), target="train.py")
    new = _saved(tmp_path, "b.json", _compiles(1), target="evaluate.py --fast")
    result = cli("diff", old, new)
    assert result.exit_code == 0
    assert ("note: the sessions recorded different targets ('train.py' and 'evaluate.py "
            "--fast'): functions are matched by file and name only") in result.output
    same = _saved(tmp_path, "c.json", _compiles(2), target="train.py --epochs 3")
    assert "different targets" not in cli("diff", old, same).output


def test_diff_in_markdown_is_a_pr_comment(cli, old_and_new):
    result = cli("diff", *old_and_new, "--format", "markdown")
    assert result.exit_code == 0
    text = result.output
    assert text.startswith("### recompile-cli diff: ")
    assert "| function " in text and "|---" in text.replace(" ", "").replace(":", "")
    assert "| prog.py:step " in text or "| prog.py:step|" in text.replace(" ", "")
    assert "```" not in text  # a real table, not a code block
    assert "- prog.py:step: `shape` at `x`: f32[3] -> f32[5] (x2)" in text


def _process_env(index: int):
    return replace(ENV, process_index=index, process_count=2, host=f"host{index}")


def test_merge_does_not_note_arguments_that_differ_only_by_process_id(cli, tmp_path):
    paths = [tmp_path / f"proc{index}.json" for index in (0, 1)]
    for index, path in enumerate(paths):
        save_session(replace(session(_compiles(1), target=f"train.py --process-id {index} "
                                     "--n 2"), environment=_process_env(index)), path)
    result = cli("merge", *paths)
    assert result.exit_code == 0, result.output
    assert "arguments differ" not in result.output
    assert "recompile-cli merge: train.py --process-id {process} --n 2 (2 processes" in (
        result.output)
    for index, path in enumerate(paths):  # arguments that really differ are still noted
        save_session(replace(session(_compiles(1), target=f"train.py --lr 0.{index + 1}"),
                             environment=_process_env(index)), path)
    assert "the script arguments differ between processes" in cli("merge", *paths).output


def test_the_page_of_a_merged_session_has_process_columns_and_the_divergence(cli, tmp_path):
    paths = [tmp_path / f"proc{index}.json" for index in (0, 1)]
    for index, path in enumerate(paths):
        save_session(replace(session(_compiles(1 + index), target="train.py"),
                             environment=_process_env(index)), path)
    merged, page = tmp_path / "merged.json", tmp_path / "merged.html"
    cli("merge", *paths, "--save", merged)
    assert merged.is_file()
    assert cli("report", merged, "--output", page).exit_code == 0
    html = page.read_text()
    assert "<h2>Processes (each: traces / compiles / compile s)</h2>" in html
    assert "<th scope=\"col\">process 0</th><th scope=\"col\">process 1</th>" in html
    assert "<td>1 / 1 / 0.010</td><td>2 / 2 / 0.020</td>" in html
    assert ("<h2>Divergence: 1 function compiles differently across processes</h2>"
            in html)
    assert html.index("<h2>Divergence") < html.index("<h2>Timeline</h2>")
    # the suggestion's `code spans` are <code>, not backticks
    suggestions = html.split("<h2>Suggestions</h2>", 1)[1].split("</ul>", 1)[0]
    assert "<code>x</code>" in suggestions and "`" not in suggestions


def test_version_and_short_help(cli):
    result = cli("--version")
    assert result.exit_code == 0 and result.output == f"recompile-cli {__version__}\n"
    assert cli("-h").output.startswith("Usage: recompile-cli [OPTIONS] COMMAND [ARGS]...")
    for command in COMMANDS:
        result = cli(command, "-h")
        assert result.exit_code == 0 and result.output.startswith(
            f"Usage: recompile-cli {command} ")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_readable_names(cli, command):
    text = cli(command, "--help").output
    usage = text.splitlines()[0]
    assert not re.search(r"[{}<>]", usage), usage
    assert not re.search(r"<(list\[|int|float|str|path)", text), text
    assert "{" not in text.split("Options:")[0]


def test_usage_lines_name_the_arguments(cli):
    assert cli("merge", "-h").output.startswith("Usage: recompile-cli merge [OPTIONS] REPORT...")
    assert cli("diff", "-h").output.startswith("Usage: recompile-cli diff [OPTIONS] OLD NEW")
    assert cli("run", "-h").output.startswith(
        "Usage: recompile-cli run [OPTIONS] [SCRIPT] [SCRIPT_ARGS...]")  # or -m MODULE
    assert "--max-compiles N" in cli("run", "-h").output


def gate(report, **gates):
    return evaluate([Gated("prog.py", report, Gates(**gates))])


def test_plurals_in_gate_messages():
    report = build_report(session(_compiles(1)))
    [violation] = gate(report, max_compiles=0).every_violation
    assert violation.message.startswith("step: 1 compile, budget 0.")
    report = build_report(session(_compiles(2)))
    [violation] = gate(report, max_compiles=1).every_violation
    assert violation.message.startswith("step: 2 compiles, budget 1.")
    [violation] = gate(report, fail_on=("shape",)).violations
    assert violation.message.startswith("step: 1 event with cause shape")
    [violation] = gate(build_report(session(_compiles(3))), fail_on=("shape",)).violations
    assert violation.message.startswith("step: 2 events with cause shape")


def test_to_pandas_columns_are_the_csv_columns(cli, tmp_path):
    import pandas as pd

    from recompile_cli.api import to_pandas

    saved = _saved(tmp_path, "s.json", _compiles(3))
    out = tmp_path / "tables"
    assert cli("report", saved, "--format", "csv", "--output", out).exit_code == 0
    frames = to_pandas(build_report(session(_compiles(3))))
    for name in ("functions", "events", "causes"):
        assert list(pd.read_csv(out / f"{name}.csv").columns) == list(
            getattr(frames, name).columns), name


def test_annotations_of_a_spec_target_carry_file_and_line_and_junit_names_no_absolute_path(
        tmp_path):
    """A spec's call has no source line: the annotation points at the function's definition.
    Run as a user runs it (a subprocess, from a folder away from the sample)."""
    import os
    import subprocess
    import sys

    junit = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {"GITHUB_ACTIONS": "true", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-m", "recompile_cli", "profile",
                           f"{SAMPLES / 'shapes.py'}:slow_function", "--args",
                           str(SAMPLES / "shapes.yaml"), "--max-compiles", "1", "--junit-xml",
                           str(junit), "-q"], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)
    assert done.returncode == 1, done.stderr
    [annotation] = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert re.match(r"::error file=[^,]*shapes\.py,line=13,title=recompile-cli max_compiles::"
                    r"slow_function: 2 compiles, budget 1", annotation), annotation
    suite = ET.parse(junit).getroot().get("name")
    assert suite == os.path.relpath(SAMPLES / "shapes.py", tmp_path) + ":slow_function"
    assert not suite.startswith("/")
