"""The closest earlier signature of a function, found through an index instead of diffing
every earlier one: ``SignatureIndex.nearest`` gives the signature that ``causes.diff_signatures``
finds closest (fewest differences, ties to the most recent). Pure: no JAX.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from recompile_cli.session.model import Leaf, Signature


def top_name(path: str) -> str:
    """The argument a leaf path belongs to: ``batch`` for ``batch['x']``."""
    for i, ch in enumerate(path):
        if ch in "[.":
            return path[:i]
    return path


# The closest earlier signature, without comparing with every one.
#
# The number of differences ``len(list(diff_signatures(new, old)))`` splits into three parts:
# - a *class* part, the same for every old signature with the same pytree structures, set of
#   static names, set of leaf paths, set of context names and whether a function id is set: the
#   new function object, context names the class does not set, a different set of arguments,
#   and ``tree_structure`` (which also decides the leaves that are skipped);
# - a *group* part, within a class: how many of the static values, context values, function id
#   and (with the same arguments) the way they were passed differ;
# - a *leaf* part, within a group: how many leaves at the paths both have (not skipped) differ.
# Classes and groups are searched in the order of a lower bound on the number of differences
# (values that no signature of a class has count as differences for all of them), and the search
# stops as soon as nothing left can beat the best found; ties go to the most recent signature.
# Within a class (groups) and a group (signatures), ``_Hamming`` counts differing features from
# the shorter of two lists per feature: the items with the query's value, or those without it.

_Key = tuple[int, int]  # (differences, -index): smaller is closer, ties to the most recent
_Feature = tuple[Hashable, Hashable]  # (feature, value)
_Item = TypeVar("_Item", bound=Hashable)


class _Hamming(Generic[_Item]):
    """Items that all have the same features; counts how many features differ from a query."""

    __slots__ = ("postings", "size")

    def __init__(self) -> None:
        self.postings: dict[Hashable, dict[Hashable, list[_Item]]] = {}
        self.size = 0

    def add(self, item: _Item, features: Iterable[_Feature]) -> None:
        self.size += 1
        for feature, value in features:
            self.postings.setdefault(feature, {}).setdefault(value, []).append(item)

    def seen(self, feature: Hashable, value: Hashable) -> bool:
        return value in self.postings.get(feature, {})

    def differences(self, query: Iterable[_Feature]) -> tuple[int, dict[_Item, int]]:
        """(base, extra): an item differs in ``base + extra.get(item, 0)`` query features."""
        base = 0
        extra: dict[_Item, int] = {}
        for feature, value in query:
            values = self.postings[feature]
            same = values.get(value, ())
            if 2 * len(same) <= self.size:  # count the matches
                base += 1
                for item in same:
                    extra[item] = extra.get(item, 0) - 1
            else:  # count the mismatches
                for other, items in values.items():
                    if other != value:
                        for item in items:
                            extra[item] = extra.get(item, 0) + 1
        return base, extra


class _Group:
    """Signatures of one class with the same statics, context, function id and passing."""

    __slots__ = ("features", "latest", "leaves", "members")

    def __init__(self, features: tuple[_Feature, ...]) -> None:
        self.features = features
        self.members: list[int] = []
        self.leaves: _Hamming[int] = _Hamming()
        self.latest = -1

    def nearest(self, query: list[tuple[str, Leaf]]) -> _Key:
        """The closest member by differing leaves at the query's paths."""
        base, extra = self.leaves.differences(query)
        best: _Key | None = None
        for index in reversed(self.members):  # the most recent member that no count touched
            if index not in extra:
                best = (base, -index)
                break
        for index, more in extra.items():
            key = (base + more, -index)
            if best is None or key < best:
                best = key
        assert best is not None
        return best


class _Class:
    """Signatures with the same structures, static names, leaf paths, context names and
    function-id-or-not; split into groups by their other values."""

    __slots__ = (
        "args",
        "context_names",
        "context_set",
        "group_index",
        "groups",
        "has_id",
        "latest",
        "leaf_values",
        "paths",
        "recency",
        "static_names",
        "structure",
    )

    def __init__(self, sig: Signature) -> None:
        self.structure = dict(sig.structure)
        self.static_names = frozenset(sig.static)
        self.paths = frozenset(sig.leaves)
        self.context_names = tuple(sorted(sig.context))
        self.context_set = frozenset(sig.context)
        self.has_id = bool(sig.function_id)
        self.args = frozenset(sig.structure) | self.static_names
        self.groups: dict[tuple[_Feature, ...], _Group] = {}
        self.recency: dict[_Group, None] = {}  # least recently extended first
        self.group_index: _Hamming[_Group] = _Hamming()
        self.leaf_values: dict[str, set[Leaf]] = {}
        self.latest = -1

    def add(self, index: int, sig: Signature) -> None:
        features = tuple([(("s", name), sig.static[name]) for name in sorted(self.static_names)]
                         + [(("c", name), sig.context[name]) for name in self.context_names]
                         + ([(("f",), sig.function_id)] if self.has_id else [])
                         + [(("p",), (sig.positional, sig.keywords))])
        group = self.groups.get(features)
        if group is None:
            group = self.groups[features] = _Group(features)
            self.group_index.add(group, features)
        group.members.append(index)
        group.leaves.add(index, sig.leaves.items())
        group.latest = self.latest = index
        self.recency.pop(group, None)
        self.recency[group] = None
        for path, leaf in sig.leaves.items():
            self.leaf_values.setdefault(path, set()).add(leaf)

    def part(self, new_args: frozenset[str], set_context: list[str], structure: dict[str, str]
             ) -> tuple[int, bool, frozenset[str]]:
        """(class part of the differences, same set of arguments, skipped argument names) for a
        signature with these arguments, context names set to a non-base value, structures."""
        part = 0
        for name in set_context:
            if name not in self.context_set:
                part += 1
        same_args = new_args == self.args
        if same_args and structure == self.structure:
            return part, True, frozenset()
        if not same_args:
            part += 1
        restructured = frozenset(name for name, text in structure.items()
                                 if name in self.structure and self.structure[name] != text)
        return part + len(restructured), same_args, restructured | (new_args ^ self.args)

    def queries(self, new: Signature, base_context: dict[str, str], same_args: bool,
                skipped: frozenset[str]
                ) -> tuple[list[_Feature], list[tuple[str, Leaf]], int, int]:
        """(group query, leaf query, group floor, leaf floor): the floors count the query's
        values that no signature of this class has."""
        group_query: list[_Feature] = (
            [(("s", name), value) for name, value in new.static.items()
             if name in self.static_names]
            + [(("c", name), new.context.get(name, base_context.get(name)))
               for name in self.context_names]
            + ([(("f",), new.function_id)] if self.has_id and new.function_id else [])
            + ([(("p",), (new.positional, new.keywords))] if same_args else []))
        leaf_query = [(path, leaf) for path, leaf in new.leaves.items()
                      if path in self.paths and top_name(path) not in skipped]
        leaf_floor = sum(1 for path, leaf in leaf_query if leaf not in self.leaf_values[path])
        group_floor = sum(1 for feature, value in group_query
                          if not self.group_index.seen(feature, value))
        return group_query, leaf_query, group_floor, leaf_floor

    def search(self, part: int, group_query: list[_Feature], leaf_query: list[tuple[str, Leaf]],
               leaf_floor: int, best: _Key | None) -> _Key | None:
        base, extra = self.group_index.differences(group_query)
        touched = sorted(((base + more, -group.latest, group) for group, more in extra.items()),
                         key=_first_two)
        untouched = ((base, -group.latest, group) for group in reversed(self.recency)
                     if group not in extra)
        for differences, recency, group in heapq.merge(touched, untouched, key=_first_two):
            if best is not None and (part + differences + leaf_floor, recency) >= best:
                break  # groups come in order: none of the rest can do better
            leaves, index = group.nearest(leaf_query)
            key = (part + differences + leaves, index)
            if best is None or key < best:
                best = key
        return best


def _first_two(item: tuple[int, int, _Group]) -> tuple[int, int]:
    return item[0], item[1]


class SignatureIndex:
    """The successfully traced signatures of one function, in order, indexed so that
    ``nearest`` finds the one ``diff_signatures`` says is closest (fewest differences, ties to
    the most recent) without diffing every one."""

    _CACHED_PARTS = 1 << 20  # at most this many cached class parts (then the cache restarts)

    def __init__(self, base_context: dict[str, str]) -> None:
        self.base_context = base_context
        self.signatures: list[Signature] = []
        self._classes: dict[tuple[Hashable, ...], _Class] = {}
        self._class_list: list[_Class] = []
        # class parts by the new signature's arguments, structures and non-base context names:
        # a list aligned with ``_class_list``, extended as classes appear
        self._parts: dict[tuple[Hashable, ...], list[tuple[int, bool, frozenset[str]]]] = {}
        self._cached = 0

    def __len__(self) -> int:
        return len(self.signatures)

    def add(self, sig: Signature) -> None:
        index = len(self.signatures)
        self.signatures.append(sig)
        key = (frozenset(sig.structure.items()), frozenset(sig.static), frozenset(sig.leaves),
               frozenset(sig.context), bool(sig.function_id))
        found = self._classes.get(key)
        if found is None:
            found = self._classes[key] = _Class(sig)
            self._class_list.append(found)
        found.add(index, sig)

    def _class_parts(self, new: Signature) -> list[tuple[int, bool, frozenset[str]]]:
        base_context = self.base_context
        new_args = frozenset(new.structure) | frozenset(new.static)
        set_context = sorted(name for name, value in new.context.items()
                             if value != base_context.get(name))
        key = (new_args, frozenset(new.structure.items()), tuple(set_context))
        parts = self._parts.get(key)
        if parts is None:
            if self._cached > self._CACHED_PARTS:
                self._parts.clear()
                self._cached = 0
            parts = self._parts[key] = []
        known = len(parts)
        parts.extend(cls.part(new_args, set_context, new.structure)
                     for cls in self._class_list[known:])
        self._cached += len(parts) - known
        return parts

    def nearest(self, new: Signature) -> int:
        """The index of the closest earlier signature (there must be one)."""
        classes = self._class_list
        parts = self._class_parts(new)
        heap = [(part[0], -cls.latest, i)
                for i, (part, cls) in enumerate(zip(parts, classes, strict=True))]
        heapq.heapify(heap)
        best: _Key | None = None
        while heap:
            bound, recency, i = heapq.heappop(heap)
            if best is not None and (bound, recency) >= best:
                break  # classes come in order of this bound: none of the rest can do better
            cls = classes[i]
            part, same_args, skipped = parts[i]
            group_query, leaf_query, group_floor, leaf_floor = cls.queries(
                new, self.base_context, same_args, skipped)
            if best is not None and (part + group_floor + leaf_floor, recency) >= best:
                continue
            best = cls.search(part, group_query, leaf_query, leaf_floor, best)
        if best is None:
            raise ValueError("no signature to compare with")
        return -best[1]
