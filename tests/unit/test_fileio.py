"""Writing report files, without JAX: an atomic write that fails keeps the previous file."""

from __future__ import annotations

import os

import pytest

from recompile_cli.fileio import atomic_write_text


def test_an_atomic_write_that_fails_leaves_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("previous")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left
