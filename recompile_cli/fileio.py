"""Writing the files the tool produces (reports, sessions, baselines, JUnit, CSV tables).

A regular file is written atomically: the text goes to a temporary file in the same folder,
which then replaces the target with ``os.replace``, so a failed write (full disk, interruption)
leaves the previous file intact and never a half-written one. A path that is a character device
or a FIFO (``/dev/stdout``, ``/dev/null``, a named pipe) is written directly and never replaced
(replacing ``/dev/null`` as root would break every program on the machine); a folder is an
error, and so is a device that cannot take the text (``/dev/full``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``: a regular file atomically, creating its folder if
    needed; a character device or a FIFO directly, never replaced.

    Raises:
        OSError: the path is a folder, the folder cannot be created, or the file or device
            cannot take the text (a full disk, ``/dev/full``); the previous content of a
            regular file is unchanged.
    """
    path = Path(path)
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "it is a folder", str(path))
    if mode is not None and not stat.S_ISREG(mode):  # a device or a FIFO: written, not replaced
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; use the usual mode
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
