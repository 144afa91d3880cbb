"""``file:line`` locations: the one place they are parsed and shown.

Capture writes them absolute (``path:line``; a call site adds its function); every later layer
reads them here and shows them as ``relative`` does: relative below the current folder, a
notebook cell's file as IPython names it (``In[2], line 4``). Pure text functions, but for the
current folder and a running IPython shell (found in ``sys.modules``, never imported).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

# The shortest path before a ``:line`` that ends the text or is followed by `` (function)``.
_LOCATION = re.compile(r"(?P<path>.+?):(?P<line>[0-9]+)(?: \((?P<function>.*)\))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Location:
    """A parsed ``path:line`` location, with the function of a ``path:line (function)`` call
    site."""

    path: str
    line: int
    function: str | None = None


@functools.lru_cache(maxsize=4096)  # a run names a few hundred locations, again and again
def parse(text: str | None) -> Location | None:
    """The parts of ``path:line`` or ``path:line (function)``; None for anything else."""
    match = _LOCATION.fullmatch(text) if text else None
    if match is None:
        return None
    return Location(match["path"], int(match["line"]), match["function"])


def is_location(text: str) -> bool:
    """``path:line``: a file path and a line number (a call site's function not allowed)."""
    found = parse(text)
    return found is not None and found.function is None


def path_of(location: str | None) -> str | None:
    """The file part of a ``file:line`` location (the text itself when it has no line)."""
    found = parse(location)
    return found.path if found is not None and found.function is None else location


def relative(location: str | None) -> str | None:
    """A location as people read it: relative to the current folder when below it, a notebook
    cell's as IPython names it (``In[2], line 4 (<module>)``)."""
    if not location:
        return location
    cwd = os.getcwd() + os.sep
    return cells(location[len(cwd):] if location.startswith(cwd) else location)


def relative_in(text: str) -> str:
    """A sentence with every path below the current folder shown relative to it, and notebook
    cells named as IPython names them (advice, warnings and messages that name files)."""
    cwd = os.getcwd().rstrip(os.sep) + os.sep
    if len(cwd) > 1 and cwd in text:
        text = re.sub(r"(?<![\w.~/\\-])" + re.escape(cwd), "", text)  # where a path starts
    return cells(text)


# The code of a notebook cell, as IPython compiles it: a kernel's temporary file
# (``.../ipykernel_123/4567.py``) or a terminal's ``<ipython-input-2-0123456789ab>``.
_CELL = re.compile(r"(?P<file>[^\s()'\"]*ipykernel_\d+[/\\]\d+\.py|<ipython-input-\d+-[0-9a-f]+>)"
                   r"(?::(?P<line>\d+))?")
_CELL_MARKS = ("ipykernel_", "<ipython-input-")


def cells(text: str) -> str:
    """``text`` with the files of notebook cells written as IPython's tracebacks write them,
    ``In[3]`` (``In[3], line 2`` for ``file:line``); the same text outside IPython, or for a
    file the running shell does not know."""
    if not any(mark in text for mark in _CELL_MARKS):
        return text
    name_of = getattr(getattr(_shell(), "compile", None), "format_code_name", None)
    if name_of is None:
        return text

    def cell(match: re.Match[str]) -> str:
        try:
            named = name_of(match["file"])
        except Exception:
            named = None
        if not named:
            return match.group(0)
        return str(named[1]) + (f", line {match['line']}" if match["line"] else "")

    return _CELL.sub(cell, text)


def _shell() -> Any:
    """The running IPython shell, if any (IPython is never imported here)."""
    ipython = sys.modules.get("IPython")
    try:
        return None if ipython is None else ipython.get_ipython()
    except Exception:
        return None


def display(where: object) -> str:
    """A location as reports show it: relative to the current folder, ``""`` when unknown
    (``None``, or any value that is not text)."""
    return (relative(where) or "") if isinstance(where, str) else ""
