"""Attributing a compiled program's equations to lines of the user's code, without JAX.

``capture.jax.programs.cost`` walks the jaxpr and hands over one ``(file:line, primitive, in a
body)`` record per equation; this module turns them into the ``LineCost`` rows of a ``CompileCost``:
equations per line, most first, and whether a line's equations repeat one group of primitives
(a Python loop unrolled while tracing). It also finds where a variable holding a captured
constant is assigned (``assignment_line``), by reading the source file.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from recompile_cli.session.locations import path_of
from recompile_cli.session.model import NO_USER_FRAME, LineCost

UNKNOWN = NO_USER_FRAME
MAX_LINES = 6  # lines kept per compile (the session stays small: ~1 KB per compile)
MAX_CONSTANTS = 5
LARGE_CONSTANT_BYTES = 1 << 20  # constants from 1 MiB are named one by one
MAX_GROUP = 64  # the longest group of primitives looked for in one line's equations
MIN_REPEATS = 4


def line_costs(records: Iterable[tuple[str, str, bool]], limit: int = MAX_LINES
               ) -> tuple[LineCost, ...]:
    """Equations per line, most first (ties in order of first appearance), at most ``limit``."""
    primitives: dict[str, list[str]] = {}
    bodies: dict[str, int] = {}
    for where, primitive, in_body in records:
        found = primitives.get(where)
        if found is None:
            found = primitives[where] = []
            bodies[where] = 0
        found.append(primitive)
        bodies[where] += in_body
    ranked = sorted(primitives.items(), key=lambda kv: -len(kv[1]))[:limit]
    out = []
    for where, sequence in ranked:
        group = repeated_group(sequence)
        repeats = len(sequence) // group if group else 0
        out.append(LineCost(where, len(sequence), bodies[where], group, repeats))
    return tuple(out)


def repeated_group(sequence: list[str], longest: int = MAX_GROUP,
                   least: int = MIN_REPEATS) -> int:
    """The length of the shortest group of primitives that ``sequence`` repeats at least
    ``least`` times (its first group may differ: a loop's first step often converts a value),
    0 when there is none. Each try is one list comparison, so this stays fast on long lines."""
    n = len(sequence)
    for size in range(1, min(longest, n // least) + 1):
        if sequence[size:] == sequence[:-size]:
            return size
        if n // size > least and sequence[2 * size:] == sequence[size:-size]:
            return size
    return 0


def path_part(location: str) -> str:
    """The file of a ``file:line`` text."""
    return path_of(location) or location


def assignment_line(path: str, name: str, used_at: str | None) -> int | None:
    """The line assigning ``name`` in ``path``: the last assignment above ``used_at``'s line
    (``file:line``), else the first one; None when the file cannot be read or has none."""
    lines = _assignments(path).get(name)
    if not lines:
        return None
    limit = None
    if used_at and path_part(used_at) == path:
        try:
            limit = int(used_at.rsplit(":", 1)[1])
        except ValueError:
            limit = None
    before = [line for line in lines if limit is None or line <= limit]
    return before[-1] if before else lines[0]


@functools.lru_cache(maxsize=64)
def _assignments(path: str) -> dict[str, list[int]]:
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, line = list(node.targets), node.lineno
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets, line = [node.target], node.lineno
        else:
            continue
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    found.setdefault(leaf.id, []).append(line)
    for lines in found.values():
        lines.sort()
    return found
