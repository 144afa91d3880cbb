"""Checking and building many decoded events at once, column by column (the fast reader's core).

``EventColumns.events`` turns a batch of decoded event dictionaries into ``Event`` objects. The
objects of a batch that share a layout (the same field names in the same order: all of them, in
a saved session) are transposed into one column per field; then each column is checked against
the schema in one pass in C (``set(map(type, column))``, with the exact types of
``schema.value_types``), shared through a dictionary in one pass (``map(memo.setdefault, ...)``)
and built a column at a time: a slotted model class without ``__post_init__`` has each slot
filled through its descriptor for the whole column, any other class gets one constructor call
per object (``map(cls, *columns)``). The nested records (signatures, their leaves, lowering
changes, errors) are gathered from every event of the batch and built the same way. So no Python
code of ours runs per event.

Anything that the schema would refuse raises ``Reject``; the caller then reads the document with
the reference reader (``decode.session_from_dict``), which names the field. What repeats is
shared: equal texts, leaves, text maps and keyword lists are one object each.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, fields
from itertools import chain, islice, repeat
from types import MemberDescriptorType
from typing import Any, TypeVar

from recompile_cli.session import schema
from recompile_cli.session.model import Change, Event, Leaf, Signature, TraceError

T = TypeVar("T")
Build = Callable[[tuple[str, ...], list[tuple[Any, ...]], int], list[T]]


class Reject(Exception):
    """The batch holds something that the schema refuses (or that this reader does not take)."""


class _Kind:
    """One model class and the schema of its saved form."""

    def __init__(self, cls: type, record: Any) -> None:
        self.cls = cls
        self.types = schema.field_types(record)
        self.required = frozenset(record.required)
        self.fields = [(f.name, f.default, f.default_factory) for f in fields(cls)]
        slots: list[Any] = [vars(cls).get(name) for name, _, _ in self.fields]
        fillable = not hasattr(cls, "__post_init__") and all(
            isinstance(slot, MemberDescriptorType) for slot in slots)
        self.setters = [slot.__set__ for slot in slots] if fillable else None

    def checked(self, names: tuple[str, ...], columns: list[tuple[Any, ...]]
                ) -> dict[str, Sequence[Any]]:
        """The columns by field name, once every field is known and every value of the right
        type (what lists and objects hold is checked by the caller)."""
        if not self.required.issubset(names):
            raise Reject
        checked: dict[str, Sequence[Any]] = {}
        for name, column in zip(names, columns, strict=True):
            if name not in self.types:
                raise Reject
            allowed = self.types[name]
            if allowed is not None and not allowed.issuperset(map(type, column)):
                raise Reject
            checked[name] = column
        return checked

    def arguments(self, columns: dict[str, Sequence[Any]], count: int) -> list[Iterable[Any]]:
        """The positional arguments of ``count`` objects, column by column, with the defaults
        of the fields that are not saved; the saved fields that the class lacks are left out."""
        out: list[Iterable[Any]] = []
        for name, default, factory in self.fields:
            if name in columns:
                out.append(columns[name])
            elif factory is not MISSING:
                out.append([factory() for _ in range(count)])
            else:
                out.append(repeat(default, count))
        return out

    def build(self, columns: dict[str, Sequence[Any]], count: int) -> list[Any]:
        """``count`` objects from their columns. A dataclass with slots and no
        ``__post_init__`` (the model's) is filled slot by slot, a column at a time, as its
        ``__init__`` would (``object.__setattr__`` of each field), for a third of the cost."""
        arguments = self.arguments(columns, count)
        if self.setters is None:
            return list(map(self.cls, *arguments))
        objects: list[Any] = list(map(object.__new__, repeat(self.cls, count)))
        for setter, column in zip(self.setters, arguments, strict=True):
            deque(map(setter, objects, column), maxlen=0)
        return objects


_EVENT = _Kind(Event, schema.EVENT)
_SIGNATURE = _Kind(Signature, schema.SIGNATURE)
_LEAF = _Kind(Leaf, schema.LEAF)
_CHANGE = _Kind(Change, schema.CHANGE)
_TRACE_ERROR = _Kind(TraceError, schema.TRACE_ERROR)
_SHARED_TEXT = ("function", "defined_at", "owner", "call_site", "call_of", "persistent_cache")
_TEXT_MAPS = ("static", "structure", "context")


def _all_of(values: Iterable[Any], kind: type) -> None:
    """``Reject`` unless every value is exactly of type ``kind``."""
    if not {kind}.issuperset(map(type, values)):
        raise Reject


def by_layout(objects: list[dict[str, Any]], build: Build[T]) -> list[T]:
    """``build(names, columns, count)`` for each group of ``objects`` that share their field
    names in order, the results put back in the order of ``objects``."""
    if not objects:
        return []
    layouts = list(map(tuple, objects))
    first = layouts[0]
    if layouts.count(first) == len(layouts):  # the usual case: one layout
        return build(first, list(zip(*map(dict.values, objects), strict=True)), len(objects))
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, names in enumerate(layouts):
        groups.setdefault(names, []).append(index)
    out: list[Any] = [None] * len(objects)
    for names, indices in groups.items():
        columns = list(zip(*(objects[i].values() for i in indices), strict=True))
        for index, item in zip(indices, build(names, columns, len(indices)), strict=True):
            out[index] = item
    return out


def _optional(column: Sequence[Any], build: Callable[[list[Any]], list[Any]]) -> Sequence[Any]:
    """``column`` with each value that is not None replaced by what ``build`` makes of it."""
    missing = column.count(None)
    if missing == len(column):
        return column
    if not missing:
        return build(list(column))
    present = [value for value in column if value is not None]
    built = iter(build(present))
    return [None if value is None else next(built) for value in column]


def _regroup(items: Iterable[Any], counts: list[int], make: Callable[[Iterable[Any]], T]
             ) -> list[T]:
    """``items`` cut into consecutive groups of ``counts``, each made into one value."""
    it = iter(items)
    return [make(islice(it, count)) for count in counts]


class EventColumns:
    """Builds the events of a document batch by batch, sharing what repeats across batches."""

    def __init__(self) -> None:
        self.seqs: list[int] = []  # every event's seq, checked once all are read
        self.texts: dict[str | None, str | None] = {}
        self.leaves: dict[tuple[Any, ...], Leaf] = {}
        self.maps: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        self.keywords: dict[tuple[str, ...], tuple[str, ...]] = {}

    def events(self, batch: list[Any]) -> list[Event]:
        _all_of(batch, dict)
        return by_layout(batch, self._events)

    def _events(self, names: tuple[str, ...], columns: list[tuple[Any, ...]], count: int
                ) -> list[Event]:
        saved = _EVENT.checked(names, columns)
        self.seqs.extend(saved["seq"])
        for name in _SHARED_TEXT:
            if name in saved:
                saved[name] = self._shared(saved[name])
        if "signature" in saved:
            saved["signature"] = _optional(saved["signature"], self._signatures)
        if "lowering_changes" in saved:
            saved["lowering_changes"] = _optional(saved["lowering_changes"], self._changes)
        if "error" in saved:
            saved["error"] = _optional(saved["error"], _records(_TRACE_ERROR))
        return _EVENT.build(saved, count)

    def _shared(self, texts: Sequence[Any]) -> list[Any]:
        return list(map(self.texts.setdefault, texts, texts))

    def _signatures(self, raw: list[dict[str, Any]]) -> list[Signature]:
        return by_layout(raw, self._signature_group)

    def _signature_group(self, names: tuple[str, ...], columns: list[tuple[Any, ...]],
                         count: int) -> list[Signature]:
        saved = _SIGNATURE.checked(names, columns)
        if "leaves" in saved:
            saved["leaves"] = self._leaves(saved["leaves"])
        for name in _TEXT_MAPS:
            if name in saved:
                saved[name] = self._text_maps(saved[name])
        if "keywords" in saved:
            _all_of(chain.from_iterable(saved["keywords"]), str)
            words = list(map(tuple, saved["keywords"]))
            saved["keywords"] = list(map(self.keywords.setdefault, words, words))
        if "function_kind" in saved:
            saved["function_kind"] = self._shared(saved["function_kind"])
        return _SIGNATURE.build(saved, count)

    def _text_maps(self, maps: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
        """One shared dictionary for equal maps of texts (a text equals only a text)."""
        _all_of(chain.from_iterable(map(dict.values, maps)), str)
        return list(map(self.maps.setdefault, map(tuple, map(dict.items, maps)), maps))

    def _leaves(self, column: Sequence[dict[str, Any]]) -> list[dict[str, Leaf]]:
        _all_of(chain.from_iterable(map(dict.values, column)), dict)
        return by_layout(list(column), self._leaf_sets)

    def _leaf_sets(self, paths: tuple[str, ...], columns: list[tuple[Any, ...]], count: int
                   ) -> list[dict[str, Leaf]]:
        """The leaves of ``count`` signatures that have the same argument paths: one column of
        leaves per path, built together, then one dictionary per signature."""
        if not paths:
            return [{} for _ in range(count)]
        paths = tuple(self._shared(paths))
        built = by_layout(list(chain.from_iterable(columns)), self._leaf_group)
        per_path = [built[i:i + count] for i in range(0, len(built), count)]
        return list(map(dict, map(zip, repeat(paths), zip(*per_path, strict=True))))

    def _leaf_group(self, names: tuple[str, ...], columns: list[tuple[Any, ...]], count: int
                    ) -> list[Leaf]:
        """One shared ``Leaf`` for equal leaves (their values' types are checked first, so that
        ``1.0`` or ``true`` in a shape is not taken for ``1``)."""
        saved = _LEAF.checked(names, columns)
        _all_of(chain.from_iterable(saved["shape"]), int)
        saved["shape"] = list(map(tuple, saved["shape"]))
        keys = list(zip(*_LEAF.arguments(saved, count), strict=True))
        memo = self.leaves
        for key in set(keys).difference(memo):
            memo[key] = Leaf(*key)
        return list(map(memo.__getitem__, keys))

    def _changes(self, column: list[list[Any]]) -> list[tuple[Change, ...]]:
        raw = list(chain.from_iterable(column))
        return _regroup(_records(_CHANGE)(raw), list(map(len, column)), tuple)


def _records(kind: _Kind) -> Callable[[list[Any]], list[Any]]:
    """Builds objects of ``kind`` whose saved fields are all plain values."""
    def build(raw: list[Any]) -> list[Any]:
        _all_of(raw, dict)
        return by_layout(raw, lambda names, columns, count:
                         kind.build(kind.checked(names, columns), count))
    return build
