"""Predicted compile counts: how many distinct signatures a run would have had under a fix.

Pure functions over recorded ``Signature``s. A fix is a transformation of signatures (pad a
dimension to buckets, make a scalar strongly typed, drop a static argument, reuse one function
object); the prediction is the number of distinct signatures after it, i.e. the traces and
compiles the same run would have needed. ``Distinct`` holds one function's distinct signatures
as rows of interned ids, so that a leaf fix (``dim_change``) is predicted without building new
``Signature``s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from operator import itemgetter
from typing import Any, cast

from msgspec.structs import replace

from recompile_cli.session.model import Leaf, Signature

Transform = Callable[[Signature], Signature]


def signature_key(sig: Signature) -> tuple[Hashable, ...]:
    """A hashable identity of everything a jit cache keys on."""
    return (tuple(sorted(sig.leaves.items())), *_rest_key(sig))


def _rest_key(sig: Signature) -> tuple[Hashable, ...]:
    """``signature_key`` but the leaves: statics (with their equality classes, where known),
    structure, passing, context and function object."""
    return (tuple(sorted(sig.static.items())),
            tuple(sorted((k, c.number) for k, c in sig.static_classes.items())),
            tuple(sorted(sig.structure.items())), sig.positional, sig.keywords,
            tuple(sorted(sig.context.items())), sig.function_id)


LeafValue = tuple[tuple[int, ...], str, bool, str | None]
"""A ``Leaf`` as predictions see it: (shape, dtype, weak_type, sharding)."""


def _all_values(leaves: dict[str, Leaf]) -> tuple[Leaf, ...]:
    return tuple(leaves.values())


class Distinct:
    """The distinct signatures of one function, as plain tuples for fast predictions.

    Two signatures are the same when their ``signature_key``s are equal. A distinct signature is
    a row: an id for all but its leaves (statics, structure, passing, context, function id),
    its leaf paths sorted (its layout) and a ``LeafValue`` per path. Signatures are added one
    at a time, so that a session's can be read in one pass, in the order recorded.
    """

    def __init__(self, signatures: Iterable[Signature] = ()) -> None:
        self.signatures: list[Signature] = []  # the first of each distinct one, in order
        self.rests: list[int] = []  # per row
        self.layouts: list[tuple[str, ...]] = []  # per row
        self.values: list[tuple[LeafValue, ...]] = []  # per row, in the order of its layout
        self.index: list[int] = []  # the row of each signature added
        self.all_layouts: dict[tuple[str, ...], None] = {}  # each layout once
        self._leaves: dict[str, list[LeafValue | None]] = {}
        self._varying: dict[str, dict[int, list[int]]] = {}
        self._rests: dict[tuple[Hashable, ...], int] = {}  # as signature_key has them
        self._seen: dict[tuple[Hashable, ...], int] = {}  # row -> its index
        # the previous signature's paths, layout and rest: the next one's, usually
        self._paths: Any = None
        self._layout: tuple[str, ...] = ()
        self._sort: Callable[[dict[str, Leaf]], Any] = _all_values
        self._previous: Signature | None = None
        self._rest = 0
        for sig in signatures:
            self.add(sig)

    def add(self, sig: Signature) -> None:
        """One more signature: a new row unless an earlier one is the same."""
        leaves = sig.leaves
        if leaves.keys() != self._paths:
            self._paths = leaves.keys()
            self._layout = tuple(sorted(leaves))
            self.all_layouts[self._layout] = None
            self._sort = itemgetter(*self._layout) if len(leaves) > 1 else _all_values
        values = tuple([(leaf.shape, leaf.dtype, leaf.weak_type, leaf.sharding)
                        for leaf in self._sort(leaves)])  # in the order of the layout
        previous = self._previous
        if (previous is None or sig.static != previous.static
                or sig.structure != previous.structure or sig.context != previous.context
                or sig.positional != previous.positional or sig.keywords != previous.keywords
                or sig.function_id != previous.function_id
                or sig.static_classes != previous.static_classes):
            self._rest = self._rests.setdefault(_rest_key(sig), len(self._rests))
        self._previous = sig
        row = self._seen.setdefault((self._rest, self._layout, values), len(self.rests))
        self.index.append(row)
        if row == len(self.rests):  # a new one
            self.signatures.append(sig)
            self.rests.append(self._rest)
            self.layouts.append(self._layout)
            self.values.append(values)

    @property
    def paths(self) -> list[str]:
        """Every leaf path, sorted."""
        return sorted({path for layout in self.all_layouts for path in layout})

    def leaves(self, path: str) -> list[LeafValue | None]:
        """The leaf at ``path`` of each row, ``None`` where it has none."""
        if path not in self._leaves:
            if len(self.all_layouts) == 1:  # the usual case: every row has the same paths
                (layout,) = self.all_layouts
                self._leaves[path] = (list(map(itemgetter(layout.index(path)), self.values))
                                      if path in layout else [None] * len(self.values))
            else:
                self._leaves[path] = [
                    values[layout.index(path)] if path in layout else None
                    for layout, values in zip(self.layouts, self.values, strict=True)]
        return self._leaves[path]

    def each_signature(self, column: list[int | None]) -> list[int]:
        """A column of one value per row, as one per signature given, ``None``s left out."""
        values = list(map(column.__getitem__, self.index))
        if None in column:
            return [v for v in values if v is not None]
        return cast(list[int], values)

    def varying_dims(self, path: str) -> dict[int, list[int]]:
        """``varying_dims(self.signatures, path)``."""
        if path not in self._varying:
            shapes = dict.fromkeys(map(itemgetter(0), filter(None, self.leaves(path))))
            self._varying[path] = _varying(shapes)
        return self._varying[path]


class Axis:
    """The rows of a ``Distinct`` split for a fix that pads the distinct (path, dim)s of
    ``axis``: per row, a key of all the fix leaves alone, and a column of sizes per (path, dim)
    (``None`` where a row has no such dim)."""

    def __init__(self, table: Distinct, axis: Iterable[tuple[str, int]]) -> None:
        self.pairs = list(axis)
        split = _split_columns(table, self.pairs) or _split_rows(table, self.pairs)
        rows, self.columns = split
        ids = {row: i for i, row in enumerate(dict.fromkeys(rows))}
        self.rows = list(map(ids.__getitem__, rows))  # a small int per distinct key

    def column(self, path: str, dim: int) -> list[int | None]:
        """The sizes of ``path`` dim ``dim``, one of the axis, per row."""
        return self.columns[self.pairs.index((path, dim))]

    def compiles_after(self, bucket: dict[int, int] | list[dict[int, int]]) -> int:
        """The distinct rows once every size is mapped through ``bucket`` (which has them all),
        or each (path, dim)'s sizes through its own map (a list, in the order of the axis):
        ``compiles_after`` of ``map_dim`` for each (path, dim)."""
        maps = bucket if isinstance(bucket, list) else [bucket] * len(self.columns)
        bucketed = []
        for one, column in zip(maps, self.columns, strict=True):
            sizes: dict[Any, int | None] = {None: None}  # None: a row without that dim
            sizes.update(one)
            bucketed.append(map(sizes.__getitem__, column))
        return len(set(zip(self.rows, *bucketed, strict=True)))


_Split = tuple[list[Hashable], list[list[int | None]]]


def _split_columns(table: Distinct, pairs: list[tuple[str, int]]) -> _Split | None:
    """``Axis``'s split a column at a time, for the usual table: every row has the same paths,
    each padded path one rank. ``None`` for other tables."""
    dims: dict[str, list[int]] = {}
    for path, dim in pairs:
        dims.setdefault(path, []).append(dim)
    if len(table.all_layouts) != 1 or not dims.keys() <= set(next(iter(table.all_layouts))):
        return None
    (layout,) = table.all_layouts
    kept: list[Iterable[Hashable]] = [table.rests]  # what the fix leaves alone
    padded: dict[tuple[str, int], list[int | None]] = {}
    for path in layout:
        leaves = cast(list[LeafValue], table.leaves(path))  # every row has ``path``
        if path not in dims:
            kept.append(leaves)
            continue
        shapes = list(map(itemgetter(0), leaves))
        ranks = set(map(len, shapes))
        if len(ranks) != 1 or max(dims[path]) >= min(ranks):
            return None
        kept.append(map(itemgetter(1, 2, 3), leaves))  # dtype, weak_type, sharding
        for dim in range(min(ranks)):
            column = list(map(itemgetter(dim), shapes))
            if dim in dims[path]:
                padded[path, dim] = cast(list[int | None], column)
            else:
                kept.append(column)
    return list(zip(*kept, strict=True)), [padded[pair] for pair in pairs]


def _split_rows(table: Distinct, pairs: list[tuple[str, int]]) -> _Split:
    """``Axis``'s split a row at a time, for any table."""
    rows: list[Hashable] = []
    columns: list[list[int | None]] = [[] for _ in pairs]
    for rest, layout, values in zip(table.rests, table.layouts, table.values, strict=True):
        leaves: list[tuple[Any, ...]] = list(values)
        for column, (path, dim) in zip(columns, pairs, strict=True):
            size = None
            if path in layout:
                i = layout.index(path)
                shape, *rest_of_leaf = leaves[i]
                if dim < len(shape):
                    size = shape[dim]
                    leaves[i] = ((*shape[:dim], None, *shape[dim + 1:]), *rest_of_leaf)
            column.append(size)
        rows.append((rest, layout, tuple(leaves)))
    return rows, columns


def compiles_after(signatures: Iterable[Signature], transform: Transform) -> int:
    return len({signature_key(transform(s)) for s in signatures})


def map_leaf(path: str, change: Callable[[Leaf], Leaf]) -> Transform:
    def transform(sig: Signature) -> Signature:
        if path not in sig.leaves:
            return sig
        leaves = dict(sig.leaves)
        leaves[path] = change(leaves[path])
        return replace(sig, leaves=leaves)

    return transform


def map_dim(path: str, dim: int, bucket: Callable[[int], int]) -> Transform:
    def change(leaf: Leaf) -> Leaf:
        if dim >= len(leaf.shape):
            return leaf
        shape = list(leaf.shape)
        shape[dim] = bucket(shape[dim])
        return replace(leaf, shape=tuple(shape))

    return map_leaf(path, change)


def strong_type(path: str) -> Transform:
    return map_leaf(path, lambda leaf: replace(leaf, weak_type=False))


def strong_types(paths: Iterable[str]) -> Transform:
    """Every leaf of ``paths`` strongly typed: each given a dtype where it is created."""
    wanted = frozenset(paths)

    def transform(sig: Signature) -> Signature:
        leaves = {path: replace(leaf, weak_type=False) if path in wanted else leaf
                  for path, leaf in sig.leaves.items()}
        return replace(sig, leaves=leaves)

    return transform


def typed_keys(paths: Iterable[str], impl: str, words: int) -> Transform:
    """Raw uint32 keys (``jax.random.PRNGKey``: ``u32[..., words]``) of ``paths`` as typed keys
    of ``impl`` (``jax.random.key``: ``key<impl>[...]``)."""
    wanted = frozenset(paths)

    def typed(leaf: Leaf) -> Leaf:
        if leaf.dtype != "uint32" or not leaf.shape or leaf.shape[-1] != words:
            return leaf
        return replace(leaf, shape=leaf.shape[:-1], dtype=f"key<{impl}>", weak_type=False)

    def transform(sig: Signature) -> Signature:
        leaves = {path: typed(leaf) if path in wanted else leaf
                  for path, leaf in sig.leaves.items()}
        return replace(sig, leaves=leaves)

    return transform


def one_dtype(path: str, dtype: str) -> Transform:
    return map_leaf(path, lambda leaf: replace(leaf, dtype=dtype, weak_type=False))


def without_static(name: str) -> Transform:
    def transform(sig: Signature) -> Signature:
        return replace(sig, static={k: v for k, v in sig.static.items() if k != name},
                       static_classes={k: c for k, c in sig.static_classes.items()
                                       if k != name})

    return transform


def static_as(name: str, change: Callable[[str], str]) -> Transform:
    """Static argument ``name`` compared by its text mapped through ``change``: values with the
    same text are then equal (one object kept instead of a new one per call, or a class given
    value equality; ``change`` may blank memory addresses)."""
    def transform(sig: Signature) -> Signature:
        if name not in sig.static:
            return sig
        return replace(sig, static={**sig.static, name: change(sig.static[name])},
                       static_classes={k: c for k, c in sig.static_classes.items()
                                       if k != name})

    return transform


def static_classes_as(name: str, merged: dict[int, tuple[int, str]]) -> Transform:
    """Static argument ``name``'s values of the equality classes in ``merged`` as the value
    of the class each joins (class -> (that class, its stored text)): equal values of
    different types given one type."""
    def transform(sig: Signature) -> Signature:
        klass = sig.static_classes.get(name)
        if klass is None or klass.number not in merged:
            return sig
        number, text = merged[klass.number]
        return replace(sig, static={**sig.static, name: text}, static_classes={
            **sig.static_classes, name: replace(klass, number=number)})

    return transform


def structure_as(name: str, change: Callable[[str], str]) -> Transform:
    """The structure text of argument ``name`` mapped through ``change``."""
    def transform(sig: Signature) -> Signature:
        if name not in sig.structure:
            return sig
        return replace(sig, structure={**sig.structure, name: change(sig.structure[name])})

    return transform


def same_function(sig: Signature) -> Signature:
    return replace(sig, function_id=0)


def same_passing(sig: Signature) -> Signature:
    return replace(sig, positional=0, keywords=())


def varying_dims(signatures: list[Signature], path: str) -> dict[int, list[int]]:
    """Dimension -> values in order of first appearance, for dims of ``path`` that vary."""
    shapes: dict[tuple[int, ...], None] = {}  # each distinct shape once, in order seen
    for sig in signatures:
        leaf = sig.leaves.get(path)
        if leaf is not None:
            shapes.setdefault(leaf.shape, None)
    return _varying(shapes)


def _varying(shapes: dict[tuple[int, ...], None]) -> dict[int, list[int]]:
    """``varying_dims`` of distinct shapes in order of first appearance."""
    if len(set(map(len, shapes))) != 1:
        return {}
    columns = (dict.fromkeys(sizes) for sizes in zip(*shapes, strict=True))  # in order seen
    # a symbolic dimension (SYMBOLIC_DIM, jax.export) has no size to pad to: never padded
    return {dim: list(values) for dim, values in enumerate(columns)
            if len(values) > 1 and min(values) >= 0}


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def multiple_for(values: list[int], buckets: int = 8) -> int:
    """A bucket width from the observed sizes: a power of two giving about ``buckets`` buckets."""
    return next_power_of_two(max(1, math.ceil(max(values) / buckets)))


def round_up(width: int) -> Callable[[int], int]:
    return lambda n: max(width, math.ceil(n / width) * width)


def powers_of_two(sizes: Iterable[int]) -> dict[int, int]:
    """Each size -> ``next_power_of_two`` of it (inlined: called for every size seen)."""
    return {n: 1 << (n - 1).bit_length() if n > 1 else 1 for n in sizes}


def multiples_of(width: int, sizes: Iterable[int]) -> dict[int, int]:
    """Each size -> ``round_up(width)`` of it (inlined: called for every size seen)."""
    return {n: max(width, math.ceil(n / width) * width) for n in sizes}
