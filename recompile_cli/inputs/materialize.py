"""One call's value specs (``inputs.spec``) turned into real arguments: arrays built in their
dtype from the spec's fill and seed, scalars as JAX scalars, ``call:`` values by calling the
user's factory (``Made`` keeps one object per spec entry and place unless ``fresh: true``).

The only module of ``inputs`` that imports JAX and numpy (at its top): only the runner imports
it, once a job runs; never import it from a module the measured process loads at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

import jax.numpy as jnp
import numpy as np

from recompile_cli.inputs.spec import ArrayKind, ArraySpec, CallSpec, Fill, ScalarSpec, TupleSpec


class Made:
    """The objects that ``call:`` values of one run of a spec made, by spec entry, place in the
    entry's arguments and the factory call (its reference and arguments, as written): one
    object for every call of the entry, as a program has one model, so that JAX compares its
    identity-compared parts (a static ``self``, a function) equal."""

    def __init__(self) -> None:
        self._made: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]


def materialize(value: Any, resolve: Callable[[str], Callable[..., Any]],
                array: Callable[[ArraySpec | ScalarSpec], Any] | None = None,
                made: Made | None = None, where: tuple[Hashable, ...] = ()) -> Any:
    """Build the real argument for a value spec; ``resolve`` turns 'module:function' into code.
    ``array``, if given, builds each array and scalar of the spec instead (``forecast``: an
    abstract ``jax.ShapeDtypeStruct``, so that nothing is computed). ``made`` keeps what
    ``call:`` values made, at ``where`` (the spec entry and the place of the value in its
    arguments), for the other calls of the entry; without it each call makes its own."""
    if array is not None and isinstance(value, (ArraySpec, ScalarSpec)):
        return array(value)
    if isinstance(value, ArraySpec):
        data = _fill(value)
        return jnp.asarray(data) if value.kind == ArrayKind.ARRAY else data
    if isinstance(value, ScalarSpec):
        return jnp.asarray(value.value, dtype=jnp.dtype(value.dtype))
    if isinstance(value, TupleSpec):
        return tuple(materialize(v, resolve, array, made, (*where, i))
                     for i, v in enumerate(value.items))
    if isinstance(value, list):
        return [materialize(v, resolve, array, made, (*where, i)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: materialize(v, resolve, array, made, (*where, k)) for k, v in value.items()}
    if isinstance(value, CallSpec):
        def make() -> Any:
            fn = resolve(value.ref)
            return fn(*(materialize(v, resolve, None, made, (*where, "args", i))  # real values
                        for i, v in enumerate(value.args)),
                      **{k: materialize(v, resolve, None, made, (*where, "kwargs", k))
                         for k, v in value.kwargs.items()})

        if made is None or value.fresh:
            return make()
        return made.get((*where, repr(value)), make)
    return value


def _fill(value: ArraySpec) -> Any:
    """The numpy array of an ``ArraySpec``, built directly in its dtype.

    Floats (float32, float64) come straight from the generator; float16, bfloat16 and complex
    go through float32 (float64 for complex128) values; ``normal`` integers lie in [-3, 3]
    ([0, 3] unsigned), ``uniform`` integers in [0, 9]; booleans are random for both."""
    dtype = np.dtype(jnp.dtype(value.dtype))
    shape, fill = value.shape, value.fill
    if fill == Fill.ZEROS:
        return np.zeros(shape, dtype)
    if fill == Fill.ONES:
        return np.ones(shape, dtype)
    native = dtype in (np.dtype(np.float32), np.dtype(np.float64))
    real = np.dtype(np.float64) if dtype == np.dtype(np.complex128) else np.dtype(np.float32)
    if fill == Fill.ARANGE:
        size = math.prod(shape)
        if native or dtype.kind in "iu":
            return np.arange(size, dtype=dtype).reshape(shape)
        return np.arange(size, dtype=real).reshape(shape).astype(dtype)
    rng = np.random.default_rng(value.seed)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape, dtype=dtype)
    if dtype.kind in "iu":
        low, high = (-3, 4) if fill == Fill.NORMAL and dtype.kind == "i" else (
            (0, 4) if fill == Fill.NORMAL else (0, 10))
        return rng.integers(low, high, size=shape, dtype=dtype)
    draw = rng.standard_normal if fill == Fill.NORMAL else rng.random
    if native:
        return draw(shape, dtype=dtype)
    return draw(shape, dtype=real).astype(dtype)
