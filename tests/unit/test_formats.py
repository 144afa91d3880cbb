"""The one registry of report formats (``render.FORMATS``): every front door offers what it holds,
the commands' own format choices are parts of it, and the documentation lists each format with
the extensions that imply it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recompile_cli.cli.merge_command import MergeFormat
from recompile_cli.cli.options_cli import DiffFormat, Format, GateFormat, OutputOption
from recompile_cli.render import FORMATS, extensions_text, guess_format, renderer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reports.md"


def test_every_format_has_a_renderer_and_the_cli_offers_each():
    assert [f.value for f in Format] == list(FORMATS)
    for name in FORMATS:
        assert callable(renderer(name))


@pytest.mark.parametrize("choices", [GateFormat, DiffFormat, MergeFormat])
def test_each_commands_formats_are_registry_formats(choices):
    assert {f.value for f in choices} <= set(FORMATS)


@pytest.mark.parametrize(("path", "fmt"), [
    ("run.json", "json"), ("run.trace.json", "chrome-trace"), ("RUN.HTM", "html"),
    ("report.html", "html"), ("r.md", "markdown"), ("r.txt", "table"), ("d/r.csv", "csv"),
    ("run", None), ("run.yaml", None), ("", None)])
def test_an_extension_implies_its_format_the_longest_first(path, fmt):
    assert guess_format(path) == fmt


def test_a_command_guesses_only_among_its_own_formats():
    assert guess_format("r.html", among=[f.value for f in MergeFormat]) is None
    assert guess_format("r.md", among=[f.value for f in MergeFormat]) == "markdown"


def test_the_output_help_lists_every_extension():
    help_text = OutputOption.__metadata__[0].help
    assert extensions_text() in help_text
    for spec in FORMATS.values():
        for extension in spec.extensions:
            assert extension in help_text


def test_the_docs_list_every_format_with_its_extensions():
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z-]+)` \| ([^|]*) \|",
                                                        DOCS.read_text(encoding="utf-8"), re.M)}
    assert set(rows) == set(FORMATS)
    for name, spec in FORMATS.items():
        assert re.findall(r"`(\.[a-z.]+)`", rows[name]) == list(spec.extensions)
