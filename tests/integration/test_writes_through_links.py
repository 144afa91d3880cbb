"""Every output of every command is written through a symbolic link to what it points at, as a
shell redirection writes it, and never replaces the link (issue 29): ``-o``, ``--save``,
``--junit-xml``, ``--save-baseline``, ``--events-log`` of ``run``; ``report -o``; ``merge -o``
and ``--save``; ``forecast --save``. A link to a regular file gets the file filled; a link to a
FIFO or to a character device (made in a temporary folder, never the machine's own ``/dev``) is
written in place, nothing renamed over it."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

PROGRAM = """
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    return jnp.tanh(x) * 2


step(jnp.ones(3))
step(jnp.ones(4))
"""


def linked(folder: Path, name: str) -> tuple[Path, Path]:
    """A link ``folder/links/name`` to ``folder/files/name`` (made on first write)."""
    (folder / "links").mkdir(exist_ok=True)
    (folder / "files").mkdir(exist_ok=True)
    link, real = folder / "links" / name, folder / "files" / name
    link.symlink_to(real)
    return link, real


def still_links(folder: Path) -> None:
    links = list((folder / "links").iterdir())
    assert links and all(p.is_symlink() for p in links), links
    assert [p.name for p in (folder / "links").iterdir() if p.name.startswith(".")] == []


def test_every_output_is_written_through_its_link(cli, program, tmp_path):
    prog = program("prog", PROGRAM)
    paths = {name: linked(tmp_path, name) for name in (
        "report.json", "session.json", "junit.xml", "baseline.json", "events.jsonl",
        "again.md", "merged.json", "merged-session.json", "forecast.json")}
    link = {name: pair[0] for name, pair in paths.items()}
    real = {name: pair[1] for name, pair in paths.items()}
    result = cli("run", "-o", link["report.json"], "--save", link["session.json"],
                 "--junit-xml", link["junit.xml"], "--save-baseline", link["baseline.json"],
                 "--events-log", link["events.jsonl"], "--max-compiles", "5", prog)
    assert result.exit_code == 0, result.output
    assert json.loads(real["report.json"].read_text())["events"]
    assert json.loads(real["session.json"].read_text())["events"]
    assert "<testsuite" in real["junit.xml"].read_text()
    assert json.loads(real["baseline.json"].read_text())["kind"] == "recompile-cli-baseline"
    assert real["events.jsonl"].read_text().startswith('{"type":"header"')
    assert cli("report", "-o", link["again.md"], link["session.json"]).exit_code == 0
    assert real["again.md"].read_text().startswith("**recompile-cli: ")
    merged = cli("merge", "-o", link["merged.json"], "--save", link["merged-session.json"],
                 link["session.json"])
    assert merged.exit_code == 0, merged.output
    assert json.loads(real["merged.json"].read_text())
    assert json.loads(real["merged-session.json"].read_text())["events"]
    spec = tmp_path / "spec.yaml"
    spec.write_text("calls:\n  - {args: [{array: [3]}]}\n  - {args: [{array: [4]}]}\n")
    forecast = cli("forecast", "--save", link["forecast.json"], "--args", spec, f"{prog}:step")
    assert forecast.exit_code == 0, forecast.output
    assert json.loads(real["forecast.json"].read_text())["schema_version"] == 1
    still_links(tmp_path)


def _reader(fifo: Path, into: list[bytes]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.append(fifo.read_bytes()), daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("option", ["-o", "--save", "--junit-xml", "--save-baseline",
                                    "--events-log"])
def test_a_link_to_a_fifo_gets_the_output_in_place(cli, program, tmp_path, option):
    prog = program("prog", PROGRAM)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / ("out.json" if option != "--junit-xml" else "out.xml")
    link.symlink_to(fifo)
    received: list[bytes] = []
    reader = _reader(fifo, received)
    result = cli("run", option, link, "--max-compiles", "5", prog)
    reader.join(timeout=60)
    assert result.exit_code == 0, result.output
    assert received and received[0].strip(), received
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file


def test_a_link_to_a_character_device_is_written_in_place(cli, program, tmp_path):
    prog = program("prog", PROGRAM)
    device = tmp_path / "null"
    try:  # a device of our own with /dev/null's numbers (root); else read through a link
        os.mknod(device, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    except OSError:
        device.symlink_to("/dev/null")
    before = os.lstat(device)
    links = {option: tmp_path / f"to-null{option}" for option in
             ("-o", "--save", "--junit-xml", "--save-baseline", "--events-log")}
    for path in links.values():
        path.symlink_to(device)
    result = cli("run", "-f", "json", *[x for option, path in links.items()
                                        for x in (option, path)], "--max-compiles", "5", prog)
    assert result.exit_code == 0, result.output
    after = os.lstat(device)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert all(path.is_symlink() for path in links.values())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file
