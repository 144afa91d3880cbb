"""The stored text of a pytree structure (``Signature.structure``, ``Signature.static``): written
by capture, read by analysis; two structures are the same exactly when their texts are.

A small structure is JAX's treedef text; a large one, or one with static data in a custom node,
is a node map (its format is noted at ``NODES_MARK``). Pure text, no JAX.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# A node map: ``NODES_MARK``, one ``path<TAB>description`` line per node, then ``TREEDEF_MARK``
# and the full treedef text. The static data of a custom node has lines of its own, one per
# named field (``state.tx``: a ``register_dataclass`` meta field, a flax ``struct`` field with
# ``pytree_node=False``, an equinox ``field(static=True)``) or one for the whole aux data
# (``batch.<aux>``); their description ends with a note after a second tab (``Note``): ``field``
# or ``aux`` (``attr`` for a Flax NNX static attribute or a variable's ``.<metadata>``), and, for
# a value that prints the same as an earlier one of that path but compares unequal to it, ``#n``
# with its type and ``identity`` when the type compares by identity. ``mode`` marks a library's
# mode switch, ``function`` a function value (shown by its name). A library wrapper's static
# tuple (equinox's, ``Signature.static``) is a node map as well: the user's function
# (``<function>``), and each parameter's static part by the user's paths.
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


AUX = "<aux>"  # the path part of a custom node's aux data as a whole: ``batch.<aux>``
FUNCTION = "<function>"  # the path of the user's function in a wrapper's static node map
# what a static data line holds (``Note.kind``): a named static field, a custom node's aux data
# as a whole, a static pytree's leaf that is not an array (equinox's static part of an argument),
# a Flax NNX static attribute or variable metadata
FIELD, WHOLE_AUX, LEAF, ATTR = "field", "aux", "leaf", "attr"


@dataclass(frozen=True, slots=True)
class Note:
    """What a node map line of static data says besides its value: ``kind`` (``field`` or
    ``aux``); ``unequal``: how many earlier values of the path print the same but compare
    unequal (0: none), with the value's ``type`` and whether it compares by ``identity``;
    ``mode``: the value is a Python bool that the library class holding it branches on in
    Python (a mode switch: ``capture.code.branches``); ``function``: the value is a function,
    shown by its name (``capture.code.function_names``)."""

    kind: str
    unequal: int = 0
    type: str = ""
    identity: bool = False
    mode: bool = False
    function: bool = False

    def __str__(self) -> str:
        text = self.kind
        if self.unequal:
            text += f" #{self.unequal} {self.type or '?'}" + (" identity" if self.identity
                                                              else "")
        return text + (" mode" if self.mode else "") + (" function" if self.function else "")

    @classmethod
    def parse(cls, text: str) -> Note:
        kind, *rest = text.split(" ")
        if len(rest) >= 2 and rest[0].startswith("#") and rest[0][1:].isdigit():
            flags = rest[2:]
            return cls(kind, int(rest[0][1:]), rest[1], "identity" in flags, "mode" in flags,
                       "function" in flags)
        return cls(kind, mode="mode" in rest, function="function" in rest)


def with_note(description: str, note: Note) -> str:
    """A node map description that carries a note (``description<TAB>note``)."""
    return f"{description}\t{note}"


def split_note(description: str) -> tuple[str, Note | None]:
    """(the value as shown, its note or None) of a node map description."""
    text, sep, note = description.partition("\t")
    return (text, Note.parse(note)) if sep else (description, None)
