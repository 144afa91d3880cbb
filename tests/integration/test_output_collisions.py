"""Issue 44: outputs never collide. Every output path is resolved before anything runs: two
outputs on one file, or an output that is an input (the script, a spec, a session), is exit 2
naming both, nothing run and nothing replaced; an output that is the process's stdout is
written through stdout and the report moves to stderr, so a redirected stdout holds one valid
file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import jax, jax.numpy as jnp
print("the script's own line")
jax.jit(lambda x: x + 1)(jnp.ones(3))
"""


@pytest.mark.parametrize("args", [
    ["--save", "{script}"],
    ["--output", "r.json", "--junit-xml", "r.json"],
    ["--save-baseline", "b.json", "--save", "b.json"],
    ["--events-log", "e.jsonl", "--save", "e.jsonl"],
    ["--output", "x.json", "--save", "./sub/../x.json"],
])
def test_two_uses_of_one_file_are_refused_before_anything_runs(cli, program, tmp_path, args,
                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = program("t", SCRIPT)
    before = script.read_text()
    (tmp_path / "sub").mkdir()
    result = cli("run", "-q", *[a.format(script=script) for a in args], script)
    assert result.exit_code == 2, result.output
    assert "the same file" in result.output or "which this command reads" in result.output
    assert "the script's own line" not in result.output  # nothing ran
    assert script.read_text() == before
    assert not any(tmp_path.glob("*.json")) and not (tmp_path / "e.jsonl").exists()


def test_a_link_to_the_spec_is_the_spec(cli, project, tmp_path):
    link = tmp_path / "link.yaml"
    link.symlink_to(project / "two_shapes.yaml")
    before = (project / "two_shapes.yaml").read_text()
    result = cli("profile", f"{project / 'prog.py'}:step", "--args", project / "two_shapes.yaml",
                 "--save", link)
    assert result.exit_code == 2 and "--args" in result.output, result.output
    assert (project / "two_shapes.yaml").read_text() == before


def test_a_plan_or_report_written_over_its_session_is_refused(cli, program, tmp_path):
    session = tmp_path / "s.json"
    assert cli("run", "-q", "--save", session, program("t", SCRIPT)).exit_code == 0
    before = session.read_text()
    for args in (["warmup", session, "-o", session], ["report", session, "-o", session]):
        result = cli(*args)
        assert result.exit_code == 2 and "SESSION" in result.output, result.output
    assert session.read_text() == before


def _real(*args: str, cwd: Path, stdout: Path) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, its stdout redirected to ``stdout`` as a shell's
    ``> file`` does (the point: the tool sees its own stdout)."""
    with open(stdout, "w") as out:
        return subprocess.run([sys.executable, "-m", "recompile_cli", *args], cwd=cwd,
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=300)


@pytest.mark.measured_process
@pytest.mark.parametrize("args", [
    ["run", "-q", "--save", "/dev/stdout", "t.py"],
    ["run", "-q", "-f", "json", "--output", "/proc/self/fd/1", "t.py"],
    ["run", "-q", "--output", "/dev/stdout", "-f", "json", "t.py"],
])
def test_an_output_on_stdout_is_written_through_it_and_the_report_moves_out(tmp_path, args):
    (tmp_path / "t.py").write_text(SCRIPT)
    done = _real(*args, cwd=tmp_path, stdout=tmp_path / "s.txt")
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "s.txt").read_text())  # one valid file, nothing else
    assert written["events"]
    assert "the script's own line" in done.stderr  # the script's output moved too


@pytest.mark.measured_process
def test_a_report_for_tools_and_an_output_on_the_same_stdout_is_exit_2(tmp_path):
    (tmp_path / "t.py").write_text(SCRIPT)
    done = _real("run", "-q", "-f", "json", "--save", "/dev/stdout", "t.py", cwd=tmp_path,
                 stdout=tmp_path / "s.txt")
    assert done.returncode == 2 and "--save /dev/stdout is this command's stdout" in done.stderr
    assert "the script's own line" not in done.stderr + (tmp_path / "s.txt").read_text()
