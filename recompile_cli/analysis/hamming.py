"""Counting differing features without comparing with every item: ``Hamming`` keeps, per
feature, the items that have each value (posting lists), and counts the features in which each
item differs from a query from the shorter of two lists per feature: the items with the query's
value, or those without it. Used by ``nearest`` for signatures' groups and leaves. Pure: no JAX.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

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
