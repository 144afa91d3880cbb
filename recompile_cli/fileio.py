"""Writing the files the tool produces (reports, sessions, baselines, JUnit, CSV tables).

Every write is atomic: the text goes to a temporary file in the same folder, which then replaces
the target with ``os.replace``, so a failed write (full disk, interruption) leaves the previous
file intact and never a half-written one.

``strict_json`` writes standard JSON only: NaN and infinities (Python floats, numpy scalars,
pandas NA) become ``null`` (``jsonable``), and ``allow_nan=False`` guarantees that no ``NaN``
token is ever written.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


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


def jsonable(value: Any) -> Any:
    """``value`` with NaN/inf turned into None, numpy/pandas scalars into Python ones, tuples
    into lists and mapping keys into strings: what ``json.dumps(allow_nan=False)`` accepts."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalars (and 0-d arrays)
    if callable(item) and getattr(value, "shape", None) == ():
        with contextlib.suppress(TypeError, ValueError):
            return jsonable(item())
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas.NA, pandas.NaT
        return None
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(jsonable(key))
    return str(key)


def strict_json(data: Any, indent: int | None = 2) -> str:
    """Standard JSON text of ``data`` (see ``jsonable``); never writes NaN or Infinity."""
    return json.dumps(jsonable(data), indent=indent, allow_nan=False)
