"""Writing the files the tool produces (reports, sessions, baselines, JUnit, CSV tables, the
cache folder's own files), and reading back the cache folder's own files.

A path is written as a shell redirection writes it: through every symbolic link to the file it
points at, and never by replacing a link. The links are followed one by one (``target``):

* a regular file (or a path where none exists yet) is written atomically: the text goes to a
  temporary file in the target's own folder, which then replaces the target with
  ``os.replace`` (keeping its permission bits), so a failed write (full disk, interruption)
  leaves the previous file intact and never a half-written one; the link, if any, still points
  at it;
* a character device, a FIFO or a socket (``/dev/null``, a named pipe), and anything reached
  through ``/proc`` (``/dev/stdout`` is a link to ``/proc/self/fd/1``, which names whatever
  the process's stdout is: a terminal, a pipe, a file a shell opened), is opened and written
  in place, never replaced (replacing ``/dev/stdout`` as root would break every program on the
  machine);
* a folder is an error, and so is a device that cannot take the text (``/dev/full``).

With ``within`` (the tool's own files in a folder that is not the user's: the persistent
cache), the target must lie inside that folder once every link is followed: a planted link
``DIR/recompile-cli -> /elsewhere`` is refused (``OutsideFolder``), never written through, and
``read_within`` reads only a regular file inside the folder (never a FIFO that would block).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

_MAX_LINKS = 40  # as Linux's MAXSYMLINKS: more is a loop
_PROC = "/proc"


class OutsideFolder(OSError):
    """A file of the tool's own that resolves (through links) outside the folder it belongs
    in."""


def target(path: str | Path) -> Path | None:
    """The file that writing ``path`` writes: ``path`` with its folders' links resolved and its
    own links followed one at a time, as ``open`` follows them. None when the way passes
    through ``/proc`` (a process's open files: the link names no path to write)."""
    current = Path(os.path.abspath(path))
    for _ in range(_MAX_LINKS):
        folder = os.path.realpath(current.parent)
        if folder == _PROC or folder.startswith(_PROC + os.sep):
            return None
        current = Path(folder) / current.name
        if not current.is_symlink():
            return current
        current = Path(os.path.normpath(Path(folder) / os.readlink(current)))
    raise OSError(errno.ELOOP, "too many levels of symbolic links", str(path))


def atomic_write_text(path: str | Path, text: str, within: str | Path | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` through its links: a regular file atomically,
    creating its folder if needed; a character device, a FIFO or a file reached through
    ``/proc`` in place, never replaced. With ``within``, the file must lie in that folder.

    Raises:
        OSError: the path is a folder, the folder cannot be created, or the file or device
            cannot take the text (a full disk, ``/dev/full``); the previous content of a
            regular file is unchanged. ``OutsideFolder`` when ``within`` is given and the
            path resolves outside it (nothing is written, no folder made).
    """
    real = target(path)
    if within is not None:
        _check_within(path, real, within)
    if real is None:
        _write_in_place(Path(path), text)
        return
    try:
        mode: int | None = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "it is a folder", str(path))
    if mode is not None and not stat.S_ISREG(mode):  # a device, a FIFO: written, not replaced
        _write_in_place(real, text)
        return
    real.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        # mkstemp makes it private: keep the file's own mode, else the usual one
        os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_within(path: str | Path, within: str | Path, max_bytes: int) -> bytes:
    """At most ``max_bytes`` of a regular file of the tool's own inside ``within`` (links
    followed, as for writing). Opened without blocking, so a FIFO planted in its place cannot
    hang the reader.

    Raises:
        OSError: it does not exist or cannot be read; ``OutsideFolder`` when it resolves
            outside ``within``; ``OSError`` (EINVAL) when it is not a regular file.
    """
    _check_within(path, target(path), within)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return file.read(max_bytes)


def _check_within(path: str | Path, real: Path | None, within: str | Path) -> None:
    folder = os.path.realpath(within)
    if real is None or os.path.commonpath([str(real), folder]) != folder or str(real) == folder:
        raise OutsideFolder(errno.EACCES, f"a link leads outside {folder}", str(path))


def _write_in_place(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
