"""Writing the files the tool produces (reports, sessions, baselines, JUnit, CSV tables).

Every write is atomic: the text goes to a temporary file in the same folder, which then replaces
the target with ``os.replace``, so a failed write (full disk, interruption) leaves the previous
file intact and never a half-written one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating its folder if needed.

    Raises:
        OSError: the folder cannot be created or the file cannot be written; the previous
            content of ``path``, if any, is unchanged.
    """
    path = Path(path)
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
