"""Values as a user reads them: compared in full, shortened only for display.

Owns the display cap of every value a cause shows (``shown``, ``shown_pair``: the two values cut
around their first difference), the cut that fits a value into a terminal's column
(``middle``), naming the field where two ``repr`` texts first differ, and the
smallest differences between two pytree structures stored as node maps
(``session.structures``). Pure text functions: no JAX.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from recompile_cli.session.structures import node_map

SHOWN = 200  # the longest value a cause displays; full values stay in the session
_CONTEXT = 40  # characters kept before the first difference when a value is cut


def shown(text: str, limit: int = SHOWN) -> str:
    """``text`` cut to ``limit`` characters (renderers escape what it contains)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def middle(text: str, limit: int, end: float = 0.5) -> str:
    """``text`` cut to ``limit`` characters by taking out a part of its middle, shown as
    ``...``; ``end`` is the share of the kept characters taken from the end (1.0 keeps a
    location's file name and line: ``...train_loop.py:51``)."""
    if len(text) <= limit:
        return text
    if limit <= 3:
        return text[:limit]
    tail = round((limit - 3) * min(max(end, 0.0), 1.0))
    return text[: limit - 3 - tail] + "..." + (text[len(text) - tail:] if tail else "")


def shown_pair(before: str, after: str, limit: int = SHOWN) -> tuple[str, str]:
    """Two values for display: whole when both fit, else each cut to a window that starts a
    little before their first difference, so the difference is always visible."""
    if len(before) <= limit and len(after) <= limit:
        return before, after
    prefix = _common_prefix(before, after)
    start = max(0, prefix - _CONTEXT)
    return _window(before, start, limit), _window(after, start, limit)


def _window(text: str, start: int, limit: int) -> str:
    head = "..." if start else ""
    body = text[start:]
    if len(head) + len(body) <= limit:
        return head + body
    return head + body[: limit - len(head) - 3] + "..."


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*[^=:]*$")


def changed_field(before: str, after: str) -> str | None:
    """The ``name`` of the ``name=value`` (or ``'name': value``) where two reprs first differ,
    e.g. ``lr`` for ``Config(..., lr=0.1)`` vs ``Config(..., lr=0.2)``; None if there is none."""
    prefix = before[: _common_prefix(before, after)]
    depth = 0
    for i in range(len(prefix) - 1, -1, -1):  # back to the start of the enclosing item
        ch = prefix[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                prefix = prefix[i + 1:]
                break
            depth -= 1
        elif ch == "," and depth == 0:
            prefix = prefix[i + 1:]
            break
    match = _FIELD.search(prefix.replace("'", "").replace('"', ""))
    return match.group(1) if match else None


LISTED_PARTS = 5  # differing parts of one structure reported as causes


def structure_cost(before: str, after: str) -> int:
    """How many causes two different structures of one argument give: one per differing part
    of their node maps (at most ``LISTED_PARTS``), else one."""
    return min(len(structure_diff(before, after)), LISTED_PARTS) or 1


def structure_diff(before: str, after: str) -> list[tuple[str, str | None, str | None]]:
    """The smallest differing parts of two structures: (path, before, after), None where a path
    exists on one side only; a part inside a differing part is left out. Empty when either is
    not a node map, or when the maps agree (the difference is then in the treedef text)."""
    old, new = node_map(before), node_map(after)
    if old is None or new is None:
        return []
    found: list[tuple[str, str | None, str | None]] = []
    for path, description in new.items():
        if old.get(path) != description:
            found.append((path, old.get(path), description))
    found.extend((path, description, None) for path, description in old.items()
                 if path not in new)
    paths = [path for path, _, _ in found]
    return [item for item in found if not any(_inside(item[0], p) for p in paths)]


def _inside(path: str, parent: str) -> bool:
    return (len(path) > len(parent) and path.startswith(parent)
            and path[len(parent)] in ".[")


def counted(count: int, noun: str) -> str:
    """``1 compile``, ``2 compiles``: a count with its noun, singular for one."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def distinct(names: list[str], details: list[Callable[[int], str]]) -> list[str]:
    """``names`` told apart for display: each name given more than once gets the first of
    ``details`` (of its index in ``names``) appended, then the next, while some remain alike
    (``step`` twice: ``step (budget train_*)``, ``step (budget *)``)."""
    for detail in details:
        seen = Counter(names)
        names = [name + detail(i) if seen[name] > 1 else name for i, name in enumerate(names)]
    return names
