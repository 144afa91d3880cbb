"""The closest earlier signature of a function, found through an index instead of diffing
every earlier one: ``SignatureIndex.nearest`` gives the signature that ``causes.diff_signatures``
finds closest (fewest differences, ties to the most recent). Pure: no JAX.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Iterator
from operator import attrgetter
from typing import Generic, TypeVar

from recompile_cli.analysis.shorten import structure_cost
from recompile_cli.session.model import Leaf, Signature


def static_keys(sig: Signature) -> dict[str, Hashable]:
    """Each static argument's value as JAX compares it (type, ``__hash__``, ``__eq__``): its
    equality class where the recording has one (``Signature.static_classes``), else its text.
    Two signatures' statics differ exactly where these keys do."""
    classes = sig.static_classes
    if not classes:
        return sig.static  # type: ignore[return-value]
    return {name: classes[name].number if name in classes else text
            for name, text in sig.static.items()}


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
#   and ``tree_structure`` (one per differing part of a node map, ``shorten.structure_cost``;
#   it also decides the leaves that are skipped);
# - a *group* part, within a class: how many of the static values (as JAX compares them:
#   ``static_keys``), context values, function id
#   and (with the same arguments) the way they were passed differ;
# - a *leaf* part, within a group: how many leaves at the paths both have (not skipped) differ.
# Classes and groups are searched in the order of a lower bound on the number of differences
# (values that no signature of a class has count as differences for all of them), and the search
# stops as soon as nothing left can beat the best found; ties go to the most recent signature.
# Within a class (groups) and a group (signatures), ``Hamming`` (below) counts differing
# features from the shorter of two lists per feature: the items with the query's value, or those
# without it.
#
# Leaves are compared as plain tuples (``_leaf_key``): equal exactly when the ``Leaf``s are, and
# hashed without a Python-level ``__hash__``. A signature is prepared once (``_Prepared``) for
# its search and reused when the same signature is added right after, as ``explain_events`` does.

_Key = tuple[int, int]  # (differences, -index): smaller is closer, ties to the most recent
_LeafKey = tuple[tuple[int, ...], str, bool, str | None]


# a ``Leaf``'s fields as a tuple: equal exactly when the leaves are equal
_leaf_key = attrgetter(*Leaf.__struct_fields__)


class _Group:
    """Signatures of one class with the same statics, context, function id and passing."""

    __slots__ = ("features", "latest", "leaves", "members")

    def __init__(self, features: tuple[Feature, ...]) -> None:
        self.features = features
        self.members: list[int] = []
        self.leaves: Hamming[int] = Hamming()
        self.latest = -1

    def nearest(self, query: list[tuple[str, _LeafKey]]) -> _Key:
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


class _Prepared:
    """What a search and an ``add`` need of one signature, computed once."""

    __slots__ = ("leaves", "parts_key", "paths", "set_context", "shape", "sig", "static",
                 "values")

    def __init__(self, sig: Signature, base_context: dict[str, str]) -> None:
        self.sig = sig
        leaves = sig.leaves  # (path, _leaf_key(leaf)) pairs (a dict's keys and values):
        self.leaves: list[tuple[str, _LeafKey]] = list(zip(leaves, map(_leaf_key, leaves.values()),
                                                          strict=False))
        # context names set to a non-base value
        self.set_context = tuple(sorted(
            name for name, value in sig.context.items() if value != base_context.get(name)
        )) if sig.context else ()
        # what the class parts depend on, what decides the group within a class, and the
        # class and group (a dict's order only splits the caches keyed on them)
        structure = tuple(sig.structure.items())
        self.static = static_keys(sig)
        self.parts_key = (structure, tuple(sig.static), self.set_context)
        self.values = (tuple(self.static.items()), tuple(sig.context.items()) if sig.context
                       else (), sig.function_id, sig.positional, sig.keywords)
        self.paths = tuple(leaves)
        self.shape = (structure, self.values, self.paths)


_GroupCounts = tuple[int, int, dict[_Group, int]]  # (group floor, base, extra)


class _Class:
    """Signatures with the same structures, static names, leaf paths, context names and
    function-id-or-not; split into groups by their other values."""

    __slots__ = (
        "args",
        "context_features",
        "context_set",
        "group_index",
        "groups",
        "has_id",
        "last_counts",
        "latest",
        "leaf_values",
        "newest",
        "path_order",
        "paths",
        "recency",
        "static_features",
        "static_names",
        "structure",
    )

    def __init__(self, sig: Signature) -> None:
        self.structure = dict(sig.structure)
        self.static_names = frozenset(sig.static)
        self.paths = frozenset(sig.leaves)
        self.path_order = tuple(sig.leaves)  # the first signature's (a query's may be the same)
        self.context_set = frozenset(sig.context)
        self.static_features = tuple((name, ("s", name)) for name in sorted(sig.static))
        self.context_features = tuple((name, ("c", name)) for name in sorted(sig.context))
        self.has_id = bool(sig.function_id)
        self.args = frozenset(sig.structure) | self.static_names
        self.groups: dict[tuple[Feature, ...], _Group] = {}
        self.recency: dict[_Group, None] = {}  # least recently extended first
        self.newest: _Group | None = None  # the last of ``recency``
        self.group_index: Hamming[_Group] = Hamming()
        self.leaf_values: dict[str, set[_LeafKey]] = {path: set() for path in sig.leaves}
        self.latest = -1
        # the group counts of the last query: (its values, same arguments, groups then, counts)
        self.last_counts: tuple[Hashable, bool, int, _GroupCounts] | None = None

    def group(self, new: _Prepared) -> _Group:
        """The group of a signature of this class (a new one if it is the first)."""
        sig, static = new.sig, new.static
        features = tuple([(feature, static[name]) for name, feature in self.static_features]
                         + [(feature, sig.context[name]) for name, feature in self.context_features]
                         + ([(("f",), sig.function_id)] if self.has_id else [])
                         + [(("p",), (sig.positional, sig.keywords))])
        group = self.groups.get(features)
        if group is None:
            group = self.groups[features] = _Group(features)
            self.group_index.add(group, features)
        return group

    def add(self, index: int, group: _Group, leaves: list[tuple[str, _LeafKey]]) -> None:
        group.members.append(index)
        group.leaves.add(index, leaves)
        group.latest = self.latest = index
        if group is not self.newest:
            self.recency.pop(group, None)
            self.recency[group] = None
            self.newest = group
        leaf_values = self.leaf_values
        for path, key in leaves:
            leaf_values[path].add(key)

    def part(self, new_args: frozenset[str], set_context: tuple[str, ...],
             structure: dict[str, str]) -> tuple[int, bool, frozenset[str]]:
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
        part += sum(structure_cost(self.structure[name], structure[name]) for name in restructured)
        return part, same_args, restructured | (new_args ^ self.args)

    def group_counts(self, new: _Prepared, base_context: dict[str, str], same_args: bool
                     ) -> _GroupCounts:
        """(group floor, base, extra): the query's static values, context values, function id
        and (with the same arguments) passing differ from those of a group in ``base +
        extra.get(group, 0)``, and from those of every group in at least the floor: the values
        no group has. The counts change only with a new group: the last ones are kept."""
        last = self.last_counts
        if (last is not None and last[0] == new.values and last[1] == same_args
                and last[2] == len(self.groups)):
            return last[3]
        sig = new.sig
        static, context = new.static, sig.context
        query: list[Feature] = [(feature, static[name])
                                 for name, feature in self.static_features if name in static]
        for name, feature in self.context_features:
            query.append((feature, context.get(name, base_context.get(name))))
        if self.has_id and sig.function_id:
            query.append((("f",), sig.function_id))
        if same_args:
            query.append((("p",), (sig.positional, sig.keywords)))
        postings = self.group_index.postings
        floor = sum(1 for feature_key, value in query if value not in postings[feature_key])
        counts = (floor, *self.group_index.differences(query))
        self.last_counts = (new.values, same_args, len(self.groups), counts)
        return counts

    def leaf_floor(self, leaf_query: list[tuple[str, _LeafKey]]) -> int:
        """How many of the query's leaves no signature of this class has."""
        leaf_values = self.leaf_values
        floor = 0
        for path, key in leaf_query:
            if key not in leaf_values[path]:
                floor += 1
        return floor

    def search(self, new: _Prepared, base_context: dict[str, str],
               part: tuple[int, bool, frozenset[str]], best: _Key | None) -> _Key | None:
        """The closer of ``best`` and the closest signature of this class, whose class part
        of the differences is ``part``; floors are counted only once there is a best."""
        differences, same_args, skipped = part
        group_floor, base, extra = self.group_counts(new, base_context, same_args)
        paths = self.paths
        if skipped:
            leaf_query = [(path, key) for path, key in new.leaves
                          if path in paths and top_name(path) not in skipped]
        elif new.paths == self.path_order:
            leaf_query = new.leaves
        else:
            leaf_query = [(path, key) for path, key in new.leaves if path in paths]
        leaf_floor = -1
        if best is not None:
            leaf_floor = self.leaf_floor(leaf_query)
            if (differences + group_floor + leaf_floor, -self.latest) >= best:
                return best
        untouched = ((base, -group.latest, group) for group in reversed(self.recency)
                     if group not in extra)
        ordered: Iterator[tuple[int, int, _Group]] = untouched
        if extra:
            touched = sorted(((base + more, -group.latest, group)
                              for group, more in extra.items()), key=_first_two)
            ordered = heapq.merge(touched, untouched, key=_first_two)
        for group_differences, recency, group in ordered:
            if best is not None:
                if leaf_floor < 0:
                    leaf_floor = self.leaf_floor(leaf_query)
                if (differences + group_differences + leaf_floor, recency) >= best:
                    break  # groups come in order: none of the rest can do better
            leaves, index = group.nearest(leaf_query)
            key = (differences + group_differences + leaves, index)
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
    _CACHED_PLACES = 1 << 16  # at most this many shapes with their class and group (the same)

    def __init__(self, base_context: dict[str, str]) -> None:
        self.base_context = base_context
        self.signatures: list[Signature] = []
        self._classes: dict[tuple[Hashable, ...], _Class] = {}
        # the class and group of a signature by its ``_Prepared.shape``
        self._places: dict[tuple[Hashable, ...], tuple[_Class, _Group]] = {}
        self._class_list: list[_Class] = []
        # class parts by the new signature's structures, static names and non-base context
        # names: a list aligned with ``_class_list``, extended as classes appear
        self._parts: dict[tuple[Hashable, ...], list[tuple[int, bool, frozenset[str]]]] = {}
        self._cached = 0
        self._last: _Prepared | None = None  # the signature searched for last

    def __len__(self) -> int:
        return len(self.signatures)

    def add(self, sig: Signature) -> None:
        prepared = self._last
        if prepared is None or prepared.sig is not sig:
            prepared = _Prepared(sig, self.base_context)
        index = len(self.signatures)
        self.signatures.append(sig)
        place = self._places.get(prepared.shape)
        if place is None:
            if len(self._places) >= self._CACHED_PLACES:
                self._places.clear()
            key = (frozenset(sig.structure.items()), frozenset(sig.static),
                   frozenset(sig.leaves), frozenset(sig.context), bool(sig.function_id))
            found = self._classes.get(key)
            if found is None:
                found = self._classes[key] = _Class(sig)
                self._class_list.append(found)
            place = self._places[prepared.shape] = (found, found.group(prepared))
        place[0].add(index, place[1], prepared.leaves)

    def _class_parts(self, new: _Prepared) -> list[tuple[int, bool, frozenset[str]]]:
        parts = self._parts.get(new.parts_key)
        if parts is None:
            if self._cached > self._CACHED_PARTS:
                self._parts.clear()
                self._cached = 0
            parts = self._parts[new.parts_key] = []
        known = len(parts)
        if known < len(self._class_list):
            sig = new.sig
            new_args = frozenset(sig.structure) | frozenset(sig.static)
            parts.extend(cls.part(new_args, new.set_context, sig.structure)
                         for cls in self._class_list[known:])
            self._cached += len(parts) - known
        return parts

    def nearest(self, new: Signature) -> int:
        """The index of the closest earlier signature (there must be one)."""
        prepared = self._last = _Prepared(new, self.base_context)  # for an add that follows
        classes = self._class_list
        parts = self._class_parts(prepared)
        if len(classes) == 1:  # the usual case: one set of argument names and structures
            found = classes[0].search(prepared, self.base_context, parts[0], None)
            assert found is not None
            return -found[1]
        heap = [(part[0], -cls.latest, i)
                for i, (part, cls) in enumerate(zip(parts, classes, strict=True))]
        heapq.heapify(heap)
        best: _Key | None = None
        while heap:
            bound, recency, i = heapq.heappop(heap)
            if best is not None and (bound, recency) >= best:
                break  # classes come in order of this bound: none of the rest can do better
            best = classes[i].search(prepared, self.base_context, parts[i], best)
        if best is None:
            raise ValueError("no signature to compare with")
        return -best[1]


# -- counting differing features ---------------------------------------------------------------
# Counting differing features without comparing with every item: ``Hamming`` keeps, per
# feature, the items that have each value (posting lists), and counts the features in which each
# item differs from a query from the shorter of two lists per feature: the items with the query's
# value, or those without it. Used by ``nearest`` for signatures' groups and leaves. Pure: no JAX.
Feature = tuple[Hashable, Hashable]  # (feature, value)
_Item = TypeVar("_Item", bound=Hashable)


class Hamming(Generic[_Item]):
    """Items that all have the same features; counts how many features differ from a query."""

    __slots__ = ("postings", "size")

    def __init__(self) -> None:
        self.postings: dict[Hashable, dict[Hashable, list[_Item]]] = {}
        self.size = 0

    def add(self, item: _Item, features: Iterable[Feature]) -> None:
        self.size += 1
        postings = self.postings
        for feature, value in features:
            values = postings.get(feature)
            if values is None:
                values = postings[feature] = {}
            items = values.get(value)
            if items is None:
                values[value] = [item]
            else:
                items.append(item)

    def seen(self, feature: Hashable, value: Hashable) -> bool:
        return value in self.postings.get(feature, {})

    def differences(self, query: Iterable[Feature]) -> tuple[int, dict[_Item, int]]:
        """(base, extra): an item differs in ``base + extra.get(item, 0)`` query features."""
        base = 0
        extra: dict[_Item, int] = {}
        half = self.size
        for feature, value in query:
            values = self.postings[feature]
            same = values.get(value, ())
            if 2 * len(same) <= half:  # count the matches
                base += 1
                for item in same:
                    extra[item] = extra.get(item, 0) - 1
            elif len(same) < half:  # count the mismatches
                for other, items in values.items():
                    if other != value:
                        for item in items:
                            extra[item] = extra.get(item, 0) + 1
        return base, extra
