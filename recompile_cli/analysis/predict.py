"""Predicted compile counts: how many distinct signatures a run would have had under a fix.

Pure functions over recorded ``Signature``s. A fix is a transformation of signatures (pad a
dimension to buckets, make a scalar strongly typed, drop a static argument, reuse one function
object); the prediction is the number of distinct signatures after it, i.e. the traces and
compiles the same run would have needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace

from recompile_cli.session.model import Leaf, Signature

Transform = Callable[[Signature], Signature]


def signature_key(sig: Signature) -> tuple[Hashable, ...]:
    """A hashable identity of everything a jit cache keys on."""
    return (tuple(sorted(sig.leaves.items())), tuple(sorted(sig.static.items())),
            tuple(sorted(sig.structure.items())), sig.positional, sig.keywords,
            tuple(sorted(sig.context.items())), sig.function_id)


def distinct(signatures: Iterable[Signature]) -> dict[tuple[Hashable, ...], Signature]:
    """Each distinct ``signature_key`` -> its first signature, in order of first appearance.

    Every transform is a function of what the key holds, so predicting over these gives the
    same counts as over all the signatures, with one transform per distinct signature.
    """
    seen: dict[tuple[Hashable, ...], Signature] = {}
    for sig in signatures:
        seen.setdefault(signature_key(sig), sig)
    return seen


def leaf_compiles_after(keys: Iterable[tuple[Hashable, ...]],
                        change: Callable[[str, Leaf], Leaf]) -> int:
    """``compiles_after`` for a transform that only changes leaves, ``change(path, leaf)``,
    straight on ``signature_key``s: each (path, leaf) is changed once."""
    done: dict[tuple[str, Leaf], Leaf] = {}
    out: set[tuple[Hashable, ...]] = set()
    for key in keys:
        leaves = []
        for item in key[0]:  # type: ignore[attr-defined]
            new = done.get(item)
            if new is None:
                new = done[item] = change(*item)
            leaves.append((item[0], new))
        out.add((tuple(leaves), *key[1:]))
    return len(out)


def dim_change(axis: Iterable[tuple[str, int]], bucket: Callable[[int], int]
               ) -> Callable[[str, Leaf], Leaf]:
    """The leaf change of ``map_dim`` for every (path, dim) of ``axis``, in order."""
    dims: dict[str, list[int]] = {}
    for path, dim in axis:
        dims.setdefault(path, []).append(dim)

    def change(path: str, leaf: Leaf) -> Leaf:
        for dim in dims.get(path, ()):
            if dim < len(leaf.shape):
                shape = list(leaf.shape)
                shape[dim] = bucket(shape[dim])
                leaf = replace(leaf, shape=tuple(shape))
        return leaf

    return change


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


def one_dtype(path: str, dtype: str) -> Transform:
    return map_leaf(path, lambda leaf: replace(leaf, dtype=dtype, weak_type=False))


def without_static(name: str) -> Transform:
    def transform(sig: Signature) -> Signature:
        return replace(sig, static={k: v for k, v in sig.static.items() if k != name})

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
    if len({len(shape) for shape in shapes}) != 1:
        return {}
    seen: dict[int, dict[int, None]] = {}
    for shape in shapes:
        for dim, size in enumerate(shape):
            seen.setdefault(dim, {})[size] = None
    return {dim: list(values) for dim, values in seen.items() if len(values) > 1}


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def multiple_for(values: list[int], buckets: int = 8) -> int:
    """A bucket width from the observed sizes: a power of two giving about ``buckets`` buckets."""
    return next_power_of_two(max(1, math.ceil(max(values) / buckets)))


def round_up(width: int) -> Callable[[int], int]:
    return lambda n: max(width, math.ceil(n / width) * width)


def padding_overhead(sizes: list[int], bucket: Callable[[int], int]) -> int:
    """Average extra work of padding each size to its bucket, in percent of the size."""
    extra = [(bucket(n) - n) / n for n in sizes if n > 0]
    return round(100 * sum(extra) / len(extra)) if extra else 0
