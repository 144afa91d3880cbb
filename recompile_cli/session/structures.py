"""The stored text of a pytree structure (``Signature.structure``): written by capture, read by
analysis.

A small structure is JAX's treedef text (``{'x': *, 'y': *}``). A large one (a whole model) is
a node map: ``NODES_MARK``, one ``path<TAB>description`` line per node, then ``TREEDEF_MARK``
and the full treedef text. Two structures are the same exactly when their texts are.
"""

from __future__ import annotations

from collections.abc import Iterable

NODES_MARK = "#pytree-nodes v1"
TREEDEF_MARK = "\n#treedef\n"


def node_map_text(nodes: Iterable[tuple[str, str]], treedef: str) -> str:
    """A structure stored as a node map: ``(path, one-line description)`` pairs, then the
    treedef text."""
    lines = [NODES_MARK, *(f"{path}\t{description}" for path, description in nodes)]
    return "\n".join(lines) + TREEDEF_MARK + treedef


def treedef_text(structure: str) -> str:
    """JAX's treedef text of a stored structure (node map or plain text)."""
    if structure.startswith(NODES_MARK):
        _, _, text = structure.partition(TREEDEF_MARK)
        return text
    return structure


def node_map(structure: str) -> dict[str, str] | None:
    """Path -> node description of a structure stored as a node map; None for plain text."""
    if not structure.startswith(NODES_MARK):
        return None
    lines, _, _ = structure.partition(TREEDEF_MARK)
    out: dict[str, str] = {}
    for line in lines.split("\n")[1:]:
        path, sep, description = line.partition("\t")
        if sep:
            out[path] = description
    return out or None
