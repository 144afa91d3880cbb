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


def through_fifo(fifo, path) -> list[str]:
    """What a reader of ``fifo`` receives while ``path`` (the FIFO or a link to it) is
    written."""
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    atomic_write_text(path, "report text")
    reader.join(timeout=10)
    return received


def test_a_fifo_is_written_through_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    assert through_fifo(fifo, fifo) == ["report text"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]  # no temporary file left


def test_a_folder_is_an_error_and_is_left_alone(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        atomic_write_text(folder, "report")
    assert folder.is_dir() and list(folder.iterdir()) == []


# -- writes through links (issue 29): as a shell redirection, never replacing the link ------------
def _inode(path):
    return os.stat(path).st_ino


def test_a_link_to_a_regular_file_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("previous")
    real.chmod(0o640)
    link = tmp_path / "out" / "link.json"
    link.parent.mkdir()
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "real.json"]  # no temp left
    assert [p.name for p in link.parent.iterdir()] == ["link.json"]


def test_a_chain_of_relative_links_and_a_dangling_one_are_followed(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "first").symlink_to("../b/second")  # relative, to another folder
    (tmp_path / "b" / "second").symlink_to("made/by/the/write.txt")  # dangling
    atomic_write_text(tmp_path / "a" / "first", "text")
    assert (tmp_path / "b" / "made" / "by" / "the" / "write.txt").read_text() == "text"
    assert (tmp_path / "a" / "first").is_symlink() and (tmp_path / "b" / "second").is_symlink()


def test_a_folder_reached_through_a_link_is_written_in(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "data")
    atomic_write_text(tmp_path / "via" / "r.json", "x")
    assert (tmp_path / "data" / "r.json").read_text() == "x" and (tmp_path / "via").is_symlink()


def test_a_link_loop_is_an_error(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "a", "x")
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()


def test_a_link_to_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    link = tmp_path / "report.json"
    link.symlink_to(fifo)
    assert through_fifo(fifo, link) == ["report text"]
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "report.json"]


def test_a_link_to_a_character_device_is_written_in_place(tmp_path):
    null = os.stat("/dev/null")
    device = tmp_path / "null"
    try:  # a character device of our own, with /dev/null's numbers (needs root)
        os.mknod(device, 0o666 | stat.S_IFCHR, null.st_rdev)
    except (PermissionError, OSError):
        device.symlink_to("/dev/null")  # only read through, never renamed over
    link = tmp_path / "out.json"
    link.symlink_to(device)
    before = os.lstat(device)
    atomic_write_text(link, "report")
    after = os.lstat(device)
    assert link.is_symlink() and (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert stat.S_ISCHR(os.stat(link).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "out.json"]


def test_a_link_into_proc_is_written_in_place(tmp_path):
    """``-o /dev/stdout > r.json``: /dev/stdout links to /proc/self/fd/1, which names the file
    the shell opened; writing it must truncate and fill that file, never rename a temporary
    file over the link (as root, every later process would then write into that file)."""
    shell_file = tmp_path / "r.json"
    with open(shell_file, "w") as opened:
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{opened.fileno()}")
        inode = _inode(shell_file)
        atomic_write_text(link, '{"report": 1}')
        assert link.is_symlink()
    assert shell_file.read_text() == '{"report": 1}' and _inode(shell_file) == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "stdout"]


def test_the_tools_own_files_stay_inside_their_folder(tmp_path):
    """A planted ``DIR/recompile-cli -> /elsewhere`` must not make the tool write elsewhere."""
    from recompile_cli.fileio import OutsideFolder, read_within

    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir()
    elsewhere.mkdir()
    (cache / "recompile-cli").symlink_to(elsewhere)
    with pytest.raises(OutsideFolder):
        atomic_write_text(cache / "recompile-cli" / "KEY", "1.5", within=cache)
    (cache / "dangling").symlink_to(elsewhere / "new" / "deep")
    with pytest.raises(OutsideFolder):
        atomic_write_text(cache / "dangling" / "KEY", "1.5", within=cache)
    assert list(elsewhere.iterdir()) == []  # nothing written, no folder made
    (elsewhere / "KEY").write_text("2.5")
    with pytest.raises(OutsideFolder):
        read_within(cache / "recompile-cli" / "KEY", cache, 64)
    atomic_write_text(cache / "own" / "KEY", "1.5", within=cache)  # inside: made and written
    assert read_within(cache / "own" / "KEY", cache, 64) == b"1.5"
    inner = cache / "inner-link"
    inner.symlink_to(cache / "own")  # a link that stays inside is fine
    assert read_within(inner / "KEY", cache, 64) == b"1.5"


def test_reading_the_tools_own_file_never_waits_on_a_fifo(tmp_path):
    from recompile_cli.fileio import read_within

    os.mkfifo(tmp_path / "KEY")
    with pytest.raises(OSError, match="not a regular file"):
        read_within(tmp_path / "KEY", tmp_path, 64)
