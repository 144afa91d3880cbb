"""``file:line`` locations: the one place they are parsed and shown.

A location is ``path:line`` (where a function is defined: ``Event.defined_at``, the
``defined_at`` of a ``FunctionKey``); a call site adds the calling function,
``path:line (function)`` (``Event.call_site``). Capture writes them; every later layer reads
them through here. Pure text functions, apart from the current folder that ``relative`` and
``display`` show locations against.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

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
    """A location shown relative to the current folder when below it."""
    if not location:
        return location
    cwd = os.getcwd() + os.sep
    return location[len(cwd):] if location.startswith(cwd) else location


def relative_in(text: str) -> str:
    """A sentence with every path below the current folder shown relative to it (advice,
    warnings and messages that name files)."""
    cwd = os.getcwd().rstrip(os.sep) + os.sep
    if len(cwd) <= 1 or cwd not in text:
        return text
    return re.sub(r"(?<![\w.~/\\-])" + re.escape(cwd), "", text)  # where a path starts


def display(where: object) -> str:
    """A location as reports show it: relative to the current folder, ``""`` when unknown
    (``None``, or any value that is not text)."""
    return (relative(where) or "") if isinstance(where, str) else ""
