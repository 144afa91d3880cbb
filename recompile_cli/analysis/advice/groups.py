"""What one piece of advice is about, and the kinds of value it can be about.

Owns ``Group`` (one user function's re-compilations with one primary cause code and argument,
with the function's distinct signatures that predictions run over) and ``Advice`` (a message
and the compiles it predicts), plus the value kinds that the rules in ``rules`` check before
they advise: numeric dtypes and PRNG key dtypes of leaves, number literals, function objects
and objects that differ only by their memory address in the texts of static values. Pure: no
JAX.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from recompile_cli.analysis.advice import predict
from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.nearest import top_name
from recompile_cli.session.model import CauseCode, Event, Leaf, Signature
from recompile_cli.session.structures import (
    Note,
    node_map,
    node_map_text,
    split_note,
    treedef_text,
    with_note,
)


@dataclass(frozen=True, slots=True)
class Advice:
    """A suggestion's text and the compiles its fix would have given this run (None: not
    predicted)."""

    message: str
    predicted_compiles: int | None = None


@dataclass(frozen=True)
class Group:
    """One user function's re-compilations that share a primary cause code and argument
    (``argument`` is None for advice about the whole function, such as weak types)."""

    name: str
    key: str  # the function's ``name@file:line``
    code: CauseCode
    argument: str | None
    events: list[Event]
    causes: list[Cause]  # the primary cause of each of ``events``
    table: predict.Distinct  # the distinct signatures of ``traces``: what predictions run over
    traces: list[Event]  # every successful top-level trace of the function, in order
    # the other changes of the same events that no group of the function is about: (code,
    # argument) -> its text, for "Together with"
    others: dict[tuple[CauseCode, str | None], str] = field(default_factory=dict)
    calls: int | None = None  # the function's calls, where they were counted
    # every change of each of ``events`` (its causes, the primary first), in order
    changes: list[tuple[Cause, ...]] = field(default_factory=list)

    @property
    def distinct(self) -> list[Signature]:
        return self.table.signatures

    @property
    def compiles(self) -> int:
        return len(self.table.signatures)

    @cached_property
    def leaves(self) -> list[Leaf]:
        """The distinct leaves at ``argument`` over the function's signatures, in order."""
        found: dict[Leaf, None] = {}
        for sig in self.distinct:
            leaf = sig.leaves.get(self.argument or "")
            if leaf is not None:
                found.setdefault(leaf)
        return list(found)

    def values(self) -> list[str]:
        """The before and after texts of the causes, each once, in order."""
        seen: dict[str, None] = {}
        for cause in self.causes:
            for value in (cause.before, cause.after):
                if value is not None:
                    seen.setdefault(value)
        return list(seen)

    def statics(self) -> list[str]:
        """The texts the static argument ``argument`` had, each once, in order; for a part of
        one (``cfg.steps``, a field a library's wrapper keeps static), the causes' texts."""
        found = list(dict.fromkeys(sig.static[self.argument] for sig in self.distinct
                                   if self.argument in sig.static))
        return found or self.values()

    def lines(self, path: str | None = None) -> list[str]:
        """The node map description of ``path`` (default: ``argument``) in each of the
        function's distinct signatures that has one, in order: a structure's part (its paths
        follow the argument's name) or a static value's (full paths)."""
        path = self.argument or "" if path is None else path
        top = top_name(path)
        found = []
        for sig in self.distinct:
            maps = [(text, path) for text in sig.static.values()]
            if top in sig.structure:
                maps.append((sig.structure[top], path[len(top):]))
            for text, key in maps:
                description = (node_map(text) or {}).get(key)
                if description is not None:
                    found.append(description)
        return found

    def functions(self) -> list[bool]:
        """For each value at ``argument`` (each distinct signature's), whether it is or holds
        a function: marked so by the recording (``StaticClass.function``, ``Note.function``),
        or a function's ``repr`` in its text (a value holding functions, such as an optimizer;
        a session recorded before functions were named)."""
        name = self.argument or ""
        found = []
        for sig in self.distinct:
            if name in sig.static:
                klass = sig.static_classes.get(name)
                found.append((klass is not None and klass.function)
                             or callable_text(sig.static[name]))
        if found:
            return found
        for line in self.lines():
            text, note = split_note(line)
            found.append((note is not None and note.function) or callable_text(text))
        return found or [callable_text(value) for value in self.values()]

    def notes(self) -> list[Note]:
        """The note of each line of static data at ``argument`` (``lines``)."""
        return [note for line in self.lines() if (note := split_note(line)[1]) is not None]

    @property
    def whole_static(self) -> bool:
        """``argument`` is a whole static argument, not a part of one."""
        return any(self.argument in sig.static for sig in self.distinct)

    @cached_property
    def in_model(self) -> bool:
        """``argument`` is (in) a model's parameters or an optimizer's state, not data: a Flax
        NNX module, an equinox Module partitioned by ``filter_jit``, an optax state."""
        return in_model(self.distinct, self.argument or "")

    def covered(self, cause: Cause, fixed: Iterable[tuple[CauseCode, str | None]] = ()) -> bool:
        """The advice's fix removes ``cause``: a change of the group's own code and argument
        (of any argument, for advice about the whole function), or one of ``fixed``."""
        if cause.code == self.code and (self.argument is None
                                        or cause.argument == self.argument):
            return True
        return (cause.code, cause.argument) in set(fixed)

    def remaining(self, fixed: Iterable[tuple[CauseCode, str | None]] = ()) -> list[str]:
        """The changes the fix leaves where every one of the group's compiles had one: then
        the fix alone removes none of them (a compile that also changed a static function
        compiles again, whatever its containers). Empty where some compile had no other
        change, or where the changes of the compiles are not known."""
        fixed = list(fixed)
        left: dict[tuple[CauseCode, str | None], str] = {}
        if not self.changes:
            return []
        for causes in self.changes:
            others = [c for c in causes if not self.covered(c, fixed)]
            if not others:
                return []
            for cause in others:
                left.setdefault((cause.code, cause.argument), change_text(cause))
        return list(left.values())

    def also(self, fixed: Iterable[tuple[CauseCode, str | None]] = (),
             saves: bool = False) -> str:
        """`` Together with: ...`` naming the other changes of the same events that the fix
        (its own change and ``fixed``) leaves, if any; where every compile had such a change,
        `` That alone would not remove these compiles: ... changed in the same calls.``,
        unless the advice predicts that its fix ``saves`` compiles (the distinct signatures
        then say more than the changes of each compile)."""
        fixed = list(fixed)
        left = [] if saves else self.remaining(fixed)
        if left:
            return (" That alone would not remove these compiles: " + _some(left)
                    + (" changed" if len(left) == 1 else " changed too")
                    + " in the same calls.")
        others = [text for key, text in self.others.items() if key not in set(fixed)]
        if not others:
            return ""
        return " Together with: " + _some(others) + "."

    def fix(self, after: int | None) -> tuple[str, int | None]:
        """``: N compiles -> M`` and M, for a prediction that saves compiles; ``("", None)``
        otherwise: a prediction that saves nothing is left out, never printed."""
        if after is None or after >= self.compiles:
            return "", None
        return f": {self.compiles} compiles -> {after}", after


def _some(texts: list[str], limit: int = 3) -> str:
    """``a; b; c (5 in all)``."""
    return "; ".join(texts[:limit]) + (f" ({len(texts)} in all)" if len(texts) > limit else "")


def change_text(cause: Cause) -> str:
    """``shape of `x` (f32[3] -> f32[4])``: one change, as advice names it."""
    what = f"{cause.code} of `{cause.argument}`" if cause.argument else str(cause.code)
    if cause.before is not None and cause.after is not None:
        what += f" ({_short(cause.before)} -> {_short(cause.after)})"
    return what


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def in_model(distinct: list[Signature], path: str) -> bool:
    """``path`` is (in) a model's parameters or an optimizer's state, not data: a Flax NNX
    module, an equinox Module partitioned by ``filter_jit``, an optax state."""
    top = top_name(path)
    for sig in distinct:
        text = sig.structure.get(top)
        if text is not None:
            if _MODEL_STRUCTURE.search(text):
                return True
            continue
        for static in sig.static.values():  # equinox: the module's class, in the static part
            nodes = node_map(static) or {}
            if _CLASS.match(nodes.get(top, "")):
                return True
    return False


# A Flax NNX module (its GraphDef and states) or an optax state (namedtuples named ``...State``)
_MODEL_STRUCTURE = re.compile(r"CustomNode\(NodeStates\[|namedtuple\[\w*State\]")
_CLASS = re.compile(r"(?!(None|True|False)$)[A-Za-z_][\w.]*$")


# -- kinds of value -----------------------------------------------------------------------------
_NUMERIC = re.compile(r"(bool|u?int\d+|float\d+|bfloat16|complex\d+|float8_\w+|u?int4)$")
_KEY = re.compile(r"key<(\w+)>$")
KEY_WORDS = {"fry": 2, "rbg": 4, "unsafe_rbg": 4}  # uint32 words of one raw key, per impl


def numeric_dtype(dtype: str) -> bool:
    """The dtype of an array of numbers or booleans (not a PRNG key, not an opaque dtype)."""
    return _NUMERIC.match(dtype) is not None


def key_impl(leaf: Leaf) -> str | None:
    """``fry`` for a typed PRNG key of dtype ``key<fry>``, None for any other leaf."""
    match = _KEY.match(leaf.dtype)
    return match.group(1) if match else None


def raw_key(leaf: Leaf) -> bool:
    """A uint32 array whose last axis could hold raw keys (``jax.random.PRNGKey``)."""
    return leaf.dtype == "uint32" and bool(leaf.shape) and leaf.shape[-1] in (2, 4)


_NUMBER = re.compile(r"-?(\d+(\.\d*)?([eE][-+]?\d+)?|inf|nan)$|True$|False$")
_CALLABLE = re.compile(r"<(function|bound method|built-in function|cyfunction|PjitFunction)\b"
                       r"|functools\.partial\(|<jax\._src\.\w+\.\w+ object")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def number(text: str) -> bool:
    """The text of a Python number or boolean: ``3``, ``0.1``, ``-1e-05``, ``True``."""
    return _NUMBER.match(text) is not None


def callable_text(text: str) -> bool:
    """The ``repr`` of a function object (a function, lambda, bound method or partial), or of a
    value that holds one."""
    return _CALLABLE.search(text) is not None


def without_address(text: str) -> str:
    """``text`` with memory addresses blanked: ``<function <lambda> at 0x7f..>`` ->
    ``<function <lambda> at 0x?>``; two objects re-created with the same contents read the
    same."""
    return _ADDRESS.sub("0x?", text)


def recreated(texts: list[str]) -> bool:
    """Some of ``texts`` differ only by memory addresses, or (node maps) by notes that tell
    values apart that print the same: objects re-created with the same contents (a lambda, a
    partial, an object without value equality)."""
    return len({compared_by_text(t) for t in texts}) < len(set(texts))


def compared_by_text(structure: str) -> str:
    """A stored value or structure compared by its text without memory addresses, and
    without the notes that tell values apart that print the same: what it would be with one
    object kept, or value equality."""
    nodes = node_map(structure)
    if nodes is None:
        return without_address(structure)
    kept = []
    for path, description in nodes.items():
        text, note = split_note(description)
        text = without_address(text)
        kept.append((path, text if note is None else with_note(text, Note(note.kind))))
    return node_map_text(kept, without_address(treedef_text(structure)))


# A node map's description of a container, not of a static value: a path absent on one side,
# a list or tuple of n items, a dict's keys, or a node named by its type alone (a module, an
# NNX variable ``Param`` or ``Param {...}``, a reference). A static value is its ``repr``:
# quoted, a number, ``True``/``False``/``None``, or with parentheses or brackets.
_STRUCTURAL = re.compile(r"\(absent\)$|(list|tuple)\[\d+\]$|dict\["
                         r"|(?!(True|False|None)\b)[A-Z][\w.]*( \{.*)?$")


def structural(text: str) -> bool:
    """A node map description of a container or variable (``list[2]``, ``(absent)``), not a
    static value."""
    return _STRUCTURAL.match(text) is not None


def listed(values: list[str], limit: int = 5) -> str:
    """``a, b, c`` with at most ``limit`` values shown, and how many there are."""
    shown = ", ".join(values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")
