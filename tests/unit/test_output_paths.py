"""The one check of file-path options before a run (``cli.output``): empty paths, folders,
paths below a file and unwritable folders are refused with a message naming the option."""

from __future__ import annotations

import os

import pytest
import typer

from recompile_cli.cli import output
from recompile_cli.cli.output import ReportFiles
from recompile_cli.errors import RecompileError


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_path_is_a_usage_error(value):
    with pytest.raises(typer.BadParameter, match="the path is empty"):
        output.path_option(value)


def test_an_unwritable_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as root, every folder is
    with pytest.raises(RecompileError, match=r"--save .*not writable"):
        output.check_writable(tmp_path / "new" / "s.json", "--save")


def test_a_path_below_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(RecompileError, match="is a file, not a folder"):
        output.check_writable(tmp_path / "f" / "deeper" / "x.json", "--junit-xml")


def test_a_folder_is_a_report_only_for_csv_tables(tmp_path):
    output.check_report_files(ReportFiles(None, tmp_path))  # CSV tables in it
    output.check_report_files(ReportFiles("csv", tmp_path))
    for fmt in ("json", "markdown", "html", "table"):
        with pytest.raises(RecompileError, match=r"--output .*it is a folder"):
            output.check_report_files(ReportFiles(fmt, tmp_path))
    with pytest.raises(RecompileError, match=r"--save .*it is a folder"):
        output.check_report_files(ReportFiles(None, None, tmp_path))
