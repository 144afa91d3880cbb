"""Every file a command reads and writes, checked against each other before anything runs: two
outputs on one file, or an output that is an input (the script, a spec, a session, a baseline, a
plan), is a ``RecompileError`` (exit 2) naming both uses, so nothing is run and nothing replaced.
Files are the same when they are one file once links, ``/dev/stdout`` and ``/proc/self/fd/N``
are followed (device and inode), or, not yet made, one path; a character device (``/dev/null``,
a terminal) takes any number of outputs. An output that is this process's
stdout is allowed once: the caller writes it through stdout and prints the report elsewhere.
Never writes anything.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from recompile_cli.errors import RecompileError

STDOUT = "stdout"  # the use of the report printed on stdout (``-f json`` without ``--output``)


@dataclass(frozen=True, slots=True)
class Use:
    """One file a command names: the option (or argument) that names it, and whether it is
    written."""

    option: str
    path: Path | None
    writes: bool = True


def identity(path: Path) -> tuple[object, ...]:
    """What makes two paths one file: its device and inode once links are followed, else (it
    does not exist yet) its real path."""
    try:
        found = os.stat(path)
        return (found.st_dev, found.st_ino)
    except OSError:
        return (os.path.realpath(path),)


def _shareable(path: Path) -> bool:
    """A character device (``/dev/null``, a terminal): any number of outputs may go there."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def stdout_identity() -> tuple[object, ...] | None:
    """The file this process's stdout is (None when it has none)."""
    try:
        found = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return (found.st_dev, found.st_ino)


def check(uses: Iterable[Use], report_on_stdout: bool = False) -> str | None:
    """Refuse two uses of one file where either writes it, and an output on stdout when the
    report is printed there in a format for tools (``report_on_stdout``); return the option
    of the output that is stdout, if any (the caller writes it through stdout)."""
    stdout = stdout_identity()
    seen: dict[tuple[object, ...], Use] = {}
    on_stdout = None
    for use in uses:
        if use.path is None:
            continue
        key = identity(use.path)
        other = seen.get(key)
        if other is not None and (use.writes or other.writes) and not _shareable(use.path):
            raise RecompileError(_same(use, other))
        seen.setdefault(key, use)
        if use.writes and key == stdout:
            if report_on_stdout:
                raise RecompileError(
                    f"{use.option} {use.path} is this command's stdout, where the report is "
                    "printed too (--format without --output): the two would mix in one file. "
                    "Write the report with --output FILE, or the other to a file of its own.")
            on_stdout = use.option
    return on_stdout


def target_file(target: str) -> Use:
    """TARGET's file, when it names one (``path/file.py:function``), as a file the run reads."""
    path = target.rpartition(":")[0]
    return Use("TARGET", Path(path) if path.endswith(".py") else None, writes=False)


def _same(use: Use, other: Use) -> str:
    first, second = (other, use) if other.writes else (use, other)
    if not second.writes:
        return (f"{first.option} {first.path} is {second.option} {second.path}, which this "
                "command reads: writing it would replace it. Write to another file.")
    return (f"{first.option} {first.path} and {second.option} {second.path} are the same file: "
            "one would overwrite the other. Give each its own file.")
