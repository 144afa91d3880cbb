"""The causes of what JAX compares with ``==``: static argument values and pytree structures,
named down to the part that changed.

A static value is compared as JAX compares it (``nearest.static_keys``: its equality class where
the recording has one), so a value that prints the same as before but compares unequal is said
to be one (``Model.__eq__`` is identity), and the two are told apart (``told_apart``): by the
first of their parts that differs (the functions an optimizer closes over, a partial's
arguments, an object's attributes), else as two objects (``[object #1] -> [object #2]``).
A structure stored as a node map
(``session.structures``) is diffed path by path: a static field of a registered dataclass, a
flax ``struct`` or an equinox ``Module`` is named (``state.tx``) with that field's values only,
a custom node's aux data as ``batch.<aux>``, an entry added as ``batch['y']``. A static
container (``cfg.steps``) and a library wrapper's static tuple (equinox's, by the user's paths)
are stored as node maps and diffed the same way. Pure: no JAX.
"""

from __future__ import annotations

from collections.abc import Iterator

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.nearest import top_name
from recompile_cli.analysis.shorten import (
    LISTED_PARTS,
    changed_field,
    shown,
    shown_pair,
    structure_diff,
)
from recompile_cli.session.model import CauseCode, Signature, StaticClass
from recompile_cli.session.structures import (
    ATTR,
    FIELD,
    FUNCTION,
    LEAF,
    Note,
    node_map,
    split_note,
    treedef_text,
)

__all__ = ["AUX_DATA", "EQUAL_OTHER_TYPE", "NEW_OBJECT_SAME_TEXT", "PRINTS_SAME_UNEQUAL",
           "STATIC_FIELD", "static_cause", "structure_causes", "told_apart", "unequal_text"]

_ABSENT = "(absent)"
# descriptions of a node map part that are shapes, not values: added or removed, a leaf, a
# container (a line without a note otherwise holds a value: a Flax NNX attribute)
_SHAPES = {_ABSENT, "*", "None", "dict", "list", "tuple"}
# The words a cause's detail uses (advice keys on them): a value that prints the same as the
# earlier one but that JAX finds unequal; a named static field of a custom pytree node
# (``state.tx``); a custom node's aux data as a whole (``batch.<aux>``)
PRINTS_SAME_UNEQUAL = "prints the same but compares unequal"
NEW_OBJECT_SAME_TEXT = "a new object that " + PRINTS_SAME_UNEQUAL
STATIC_FIELD = "static field"
AUX_DATA = "aux data"
# a static value equal to the earlier one (``==``, same hash) but of another type
EQUAL_OTHER_TYPE = "an equal value of another type"


# -- static arguments ----------------------------------------------------------------------------
def static_cause(name: str, new: Signature, old: Signature) -> Cause:
    """The one cause of a static argument that JAX found new (one per argument, so that the
    number of differences stays what ``nearest`` counts): its first differing part where both
    values are node maps (a container by paths, a wrapper's static tuple by the user's paths)
    and not every value in it is new, else the whole."""
    before_text, after_text = old.static[name], new.static[name]
    diffs = structure_diff(before_text, after_text)
    if diffs and not _all_new(name, diffs, before_text) and not _other_type(name, new, old):
        return _static_part_cause(name, diffs, new, old)
    before, after = told_apart(treedef_text(before_text), treedef_text(after_text),
                               old.static_classes.get(name), new.static_classes.get(name))
    return Cause(CauseCode.STATIC_VALUE, argument=name, before=before, after=after,
                 detail=_static_detail(name, new, old))


def told_apart(before: str, after: str, was: StaticClass | None, now: StaticClass | None
               ) -> tuple[str, str]:
    """Two values for display (``shown_pair``); where they print alike, each followed by what
    tells it apart: the first of its parts that differs (``[.update.<transforms>[0]: function
    ...scale_by_adam...]``: the recording's ``telling``), else which object it is (``[object
    #1]``: the same parts, another object)."""
    if before != after or was is None or now is None:
        return shown_pair(before, after)
    part = _first_difference(was.telling, now.telling)
    if part is not None:
        path, b, a = part
        return _marked(before, f"{path}: {b}", f"{path}: {a}")
    if was.ordinal != now.ordinal:
        return _objects(before, was.ordinal, now.ordinal)
    return shown_pair(before, after)


def _objects(text: str, was: int, now: int) -> tuple[str, str]:
    """A value that prints alike on both sides, marked with which object each is (the
    0-based ``was`` and ``now``, shown from #1)."""
    return _marked(text, f"object #{was + 1}", f"object #{now + 1}")


def _marked(text: str, before: str, after: str) -> tuple[str, str]:
    head = shown(text, SHOWN_ALIKE)
    return f"{head} [{before}]", f"{head} [{after}]"


SHOWN_ALIKE = 48  # characters of a value shown before what tells it apart from another


def _first_difference(before: str, after: str) -> tuple[str, str, str] | None:
    """The first part (``path``, before, after) at which two ``telling`` texts differ, a part
    on one side only shown as ``(absent)``; None when they agree or either is unknown."""
    if not before or not after or before == after:
        return None
    old, new = _parts(before), _parts(after)
    for path in [*old, *(p for p in new if p not in old)]:
        if old.get(path) != new.get(path):
            return path, old.get(path, _ABSENT), new.get(path, _ABSENT)
    return None


def _parts(text: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for line in text.splitlines():
        path, _, description = line.partition("\t")
        parts.setdefault(path, description)
    return parts


def _all_new(name: str, diffs: list[tuple[str, str | None, str | None]], before: str) -> bool:
    """Whether every value of a static container is new (an optimizer rebuilt: all its
    functions): then the container is named, not its first part."""
    if len(diffs) < 2 or any(top_name(path) != name for path, _, _ in diffs):
        return False  # one part, or a wrapper's tuple (equinox's: its parts are the user's)
    values = {path for path, description in (node_map(before) or {}).items()
              if (split_note(description)[1] or Note("")).kind == LEAF}
    return bool(values) and values <= {path for path, _, _ in diffs}


def _static_detail(name: str, new: Signature, old: Signature) -> str:
    """Why JAX found a static value new: a new text, or the same text but unequal (type,
    ``__hash__``, ``__eq__``), or a new object of a type that compares by identity."""
    before, after = treedef_text(old.static[name]), treedef_text(new.static[name])
    now, was = new.static_classes.get(name), old.static_classes.get(name)
    if now is not None and was is not None:
        if _other_type(name, new, old):
            return (f"static argument {name}: {EQUAL_OTHER_TYPE} ({was.type} -> {now.type}): "
                    "JAX keys a static argument on its type as well as its value")
        if before == after:
            return f"static argument {name}: " + unequal_text(was, now) + _parts_text(was, now)
        if now.identity and now.type == was.type:
            return (f"static argument {name}: a new {now.type} object, compared by identity "
                    f"({now.type}.__eq__ is identity)")
    field = changed_field(before, after)
    return f"static argument {name} has a new value" + (
        f" (field `{field}` changed)" if field else "")


def _other_type(name: str, new: Signature, old: Signature) -> bool:
    """The static value is equal to the earlier one (``==``, same hash) but of another type."""
    now, was = new.static_classes.get(name), old.static_classes.get(name)
    return (now is not None and was is not None
            and (was.number in now.equal_to or now.number in was.equal_to))


def unequal_text(was: StaticClass, now: StaticClass) -> str:
    """A value that prints the same as the earlier one but is not equal to it for JAX."""
    if was.type and now.type and was.type != now.type:
        return (f"a value of another type that prints the same ({was.type} -> {now.type}; "
                "a module reloaded?): JAX compares static values by type, __hash__ and __eq__")
    kind = now.type or was.type or "its type"
    if now.identity or was.identity:
        return f"{NEW_OBJECT_SAME_TEXT} ({kind}.__eq__ is identity)"
    return f"a value that {PRINTS_SAME_UNEQUAL} ({kind}.__eq__ or __hash__ tells them apart)"


def _parts_text(was: StaticClass, now: StaticClass) -> str:
    """What tells apart two values that print alike, for a cause's detail: the part that
    differs, or that only the object does (the same parts: made again)."""
    part = _first_difference(was.telling, now.telling)
    if part is not None:
        return f"; they differ at {part[0]}: {part[1]} -> {part[2]}"
    if was.telling and was.telling == now.telling and was.ordinal != now.ordinal:
        return (f"; their parts are the same: another object (#{was.ordinal + 1} -> "
                f"#{now.ordinal + 1}), made again")
    return ""


def _static_part_cause(name: str, diffs: list[tuple[str, str | None, str | None]],
                       new: Signature, old: Signature) -> Cause:
    """The cause of the first differing part of a static container (``cfg.steps``) or of a
    wrapper's static tuple (equinox's, by the user's paths: ``model.act``, ``n``), the others
    named in its detail."""
    path, b, a = diffs[0]
    before, b_note = _part(old, path, b)
    after, a_note = _part(new, path, a)
    note = a_note or b_note
    others = "; ".join(f"{p}: {shown(_part(old, p, bb)[0], 60)} -> "
                       f"{shown(_part(new, p, aa)[0], 60)}" for p, bb, aa in diffs[1:4])
    also = (f"; also {others}" + (f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else "")
            if others else "")
    shown_before, shown_after = _alike(before, after, b_note, a_note)
    wrapper = top_name(path) != name  # a part of the user's arguments, not of the static
    if note is not None and note.kind == LEAF:
        if before == after:
            detail = f"static value {path}: " + unequal_text(_klass(b_note), _klass(a_note))
        elif path == FUNCTION:
            detail = ("the function the library's jit wrapper (equinox.filter_jit) was given is "
                      "a new object (a lambda or functools.partial re-created?)")
        elif wrapper:
            detail = (f"{path} is not an array, so the library's jit wrapper "
                      "(equinox.filter_jit) keys its cache on its value: each new value "
                      "compiles again")
        else:
            detail = f"static argument {name} has a new value at {path}"
        return Cause(CauseCode.STATIC_VALUE, argument=path, before=shown_before,
                     after=shown_after, detail=detail + also)
    if note is not None:
        detail = _static_data_detail(path, b_note, a_note, before == after, new.static[name])
    else:
        detail = f"the structure of static argument {name} changed at {path}"
    return Cause(CauseCode.TREE_STRUCTURE if wrapper else CauseCode.STATIC_VALUE, argument=path,
                 before=shown_before, after=shown_after, detail=detail + also)


def _alike(before: str, after: str, b_note: Note | None, a_note: Note | None
           ) -> tuple[str, str]:
    """Two parts of node maps for display (``shown_pair``); where they print alike but their
    notes count them as different values, which object each is (``[object #2]``)."""
    if (before == after and b_note is not None and a_note is not None
            and b_note.unequal != a_note.unequal):
        return _objects(before, b_note.unequal, a_note.unequal)
    return shown_pair(before, after)


def _part(sig: Signature, path: str, description: str | None) -> tuple[str, Note | None]:
    """A node map part as shown, and its note: a leaf as its abstract value (``f32[3]``) where
    the signature has it, an absent part as ``(absent)``."""
    if description is None:
        return _ABSENT, None
    text, note = split_note(description)
    if text == "*" and note is None:
        leaf = sig.leaves.get(path)
        return (leaf.short if leaf is not None else text), None
    return text, note


def _klass(note: Note | None) -> StaticClass:
    if note is None:
        return StaticClass(0)
    return StaticClass(note.unequal, note.type, note.identity)


# -- pytree structures ---------------------------------------------------------------------------
def structure_causes(name: str, new: Signature, old: Signature) -> Iterator[Cause]:
    """``tree_structure`` causes for one argument: the smallest differing parts of two node
    maps with their paths (``model.bn1.use_running_average``: ``False`` -> ``True``,
    ``state.tx``), or the two structures, shortened around their first difference, when there
    is no node map."""
    before_text, after_text = old.structure[name], new.structure[name]
    diffs = structure_diff(before_text, after_text)
    if not diffs:
        before, after = shown_pair(treedef_text(before_text), treedef_text(after_text))
        yield Cause(CauseCode.TREE_STRUCTURE, argument=name, before=before, after=after,
                    detail=_structure_detail(name, new, old))
        return
    parts = [(path, *_part(old, name + path, b), *_part(new, name + path, a),
              _kind(b, a)) for path, b, a in diffs]
    attributes = [(path, b, a) for path, b, _, a, _, note in parts
                  if note is not None and note.kind == ATTR]
    listed = "; ".join(f"{name}{path}: {shown(b, 60)} -> {shown(a, 60)}"
                       for path, b, a in attributes[:LISTED_PARTS])
    more = (f" (and {len(attributes) - LISTED_PARTS} more)"
            if len(attributes) > LISTED_PARTS else "")
    for path, b, b_note, a, a_note, note in parts[:LISTED_PARTS]:
        before, after = _alike(b, a, b_note, a_note)
        if note is None:  # a part added or removed, or of another kind (None -> an array)
            detail = "pytree structure changed: " + (
                f"{name}{path} added" if b == _ABSENT else f"{name}{path} removed"
                if a == _ABSENT else f"{name}{path} is {shown(a, 60)} (was {shown(b, 60)})")
        elif note.kind == ATTR:
            detail = ("pytree node data changed (a static field or attribute, e.g. a train/eval "
                      f"flag): {listed}{more}")
            if b == a:
                detail += "; " + unequal_text(_klass(b_note), _klass(a_note))
        else:
            detail = _static_data_detail(path, b_note, a_note, b == a, after_text)
        yield Cause(CauseCode.TREE_STRUCTURE, argument=name + path, before=before, after=after,
                    detail=detail)


def _kind(before: str | None, after: str | None) -> Note | None:
    """What a differing node map part holds: static data (its note), or None for the shape of
    the tree: a part added or removed, a leaf, a container, or static data on one side only.
    A part without a note on either side holding a value is a Flax NNX attribute (sessions
    saved before attributes had notes)."""
    (b, b_note), (a, a_note) = split_note(before or _ABSENT), split_note(after or _ABSENT)
    if _ABSENT in (b, a) and not (a_note or b_note):
        return None
    if _ABSENT not in (b, a) and (a_note is None) != (b_note is None):
        return None
    if not (a_note or b_note):
        return None if {b, a} & _SHAPES else Note(ATTR)
    return a_note or b_note


def _static_data_detail(path: str, b_note: Note | None, a_note: Note | None, same_text: bool,
                        structure: str) -> str:
    """The detail of a changed static field (``state.tx``) or aux data (``batch.<aux>``) of a
    custom pytree node, saying so when the value prints the same but compares unequal."""
    note = a_note or b_note
    assert note is not None
    parent, _, field = path.rpartition(".")
    owner = split_note((node_map(structure) or {}).get(parent, ""))[0] or "a custom node"
    if note.kind == FIELD:
        text = (f"{STATIC_FIELD} `{field}` of {owner} has a new value: a static field is part "
                "of the pytree structure JAX keys its cache on")
    else:
        text = (f"the {AUX_DATA} of the custom pytree node {owner} changed: what its flatten "
                "function returns besides the children is part of the pytree structure JAX "
                "keys its cache on")
    if same_text:  # the notes tell the values apart (one may have none: a Flax NNX attribute)
        text += "; " + unequal_text(_klass(b_note), _klass(a_note))
    return text


def _structure_detail(name: str, new: Signature, old: Signature) -> str:
    new_paths = {p for p in new.leaves if top_name(p) == name}
    old_paths = {p for p in old.leaves if top_name(p) == name}
    parts = []
    if new_paths - old_paths:
        parts.append("added " + ", ".join(sorted(new_paths - old_paths)[:5]))
    if old_paths - new_paths:
        parts.append("removed " + ", ".join(sorted(old_paths - new_paths)[:5]))
    return "pytree structure changed" + (": " + "; ".join(parts) if parts else "")
