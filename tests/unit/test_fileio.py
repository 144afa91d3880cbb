"""Writing report files, without JAX: an atomic write that fails keeps the previous file."""

from __future__ import annotations

import errno
import os
import stat
import threading

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


def test_a_device_is_written_never_replaced():
    before = os.stat("/dev/null")
    atomic_write_text("/dev/null", "report")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (
        before.st_ino, before.st_rdev)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_device_is_an_error_and_stays_a_device():
    with pytest.raises(OSError) as info:
        atomic_write_text("/dev/full", "report")
    assert info.value.errno == errno.ENOSPC
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_fifo_is_written_through_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "report text")
    reader.join(timeout=10)
    assert received == ["report text"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]  # no temporary file left


def test_a_folder_is_an_error_and_is_left_alone(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        atomic_write_text(folder, "report")
    assert folder.is_dir() and list(folder.iterdir()) == []
