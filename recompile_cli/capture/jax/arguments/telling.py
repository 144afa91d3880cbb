"""What tells apart static values that print alike: ``telling(value)`` describes a value by its
parts (a function's qualified name, where it is defined and what it closes over; a partial's
function and arguments; a container's items; an object's type and attributes; an array's type
and a digest of its contents), one ``path<TAB>description`` line each, so that two values with
the same text can be diffed part by part (``analysis.causes.static``): two ``optax.adam`` and
``optax.sgd`` optimizers print alike, but the functions their ``update`` closes over differ.

Bounded: ``DEPTH`` levels, ``MAX_LINES`` lines, ``MAX_TEXT`` characters a description; only
Python's own reprs are taken (a user's ``__repr__`` is never run here), and only NumPy's and
JAX's objects are read as arrays (a user's ``shape`` property is never run). Runs once per new
equality class of a static value (cache misses only); never raises (a failure is an empty text).
No JAX.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import types
from typing import Any

from recompile_cli.session.locations import relative

DEPTH = 4
MAX_LINES = 40
MAX_TEXT = 120
MAX_DIGEST_BYTES = 1 << 20  # arrays larger than this are described by type alone
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_ARRAY_MODULES = ("numpy", "jax", "jaxlib")  # whose objects with a shape are arrays


def type_name(kind: type) -> str:
    """A type's qualified name (``Model``, ``Outer.Config``), its plain name if odd."""
    name = getattr(kind, "__qualname__", None) or getattr(kind, "__name__", None)
    return name if isinstance(name, str) else str(kind)


def telling(value: Any) -> str:
    """``value`` part by part, one ``path<TAB>description`` line each ("" on any failure)."""
    lines: list[str] = []
    try:
        _describe(value, "", DEPTH, lines, set())
    except Exception:
        return ""
    return "\n".join(lines[:MAX_LINES])


def _line(lines: list[str], path: str, text: str) -> None:
    if len(lines) < MAX_LINES:
        text = " ".join(text.split())
        lines.append(f"{path or '.'}\t{text[:MAX_TEXT]}")


def _describe(value: Any, path: str, depth: int, lines: list[str], seen: set[int]) -> None:
    if len(lines) >= MAX_LINES:
        return
    if type(value) in _PLAIN:
        _line(lines, path, f"{type(value).__name__} {value!r}")
        return
    if isinstance(value, enum.Enum):
        _line(lines, path, f"{type_name(type(value))}.{value.name}")
        return
    if id(value) in seen:
        _line(lines, path, "(itself)")
        return
    seen = seen | {id(value)}
    if isinstance(value, functools.partial):
        _line(lines, path, "functools.partial")
        if depth > 0:
            _describe(value.func, f"{path}.func", depth - 1, lines, seen)
            for index, item in enumerate(value.args):
                _describe(item, f"{path}.args[{index}]", depth - 1, lines, seen)
            for key, item in value.keywords.items():
                _describe(item, f"{path}.{key}", depth - 1, lines, seen)
        return
    if isinstance(value, types.MethodType):
        _line(lines, path, f"method {_qualified(value.__func__)}")
        if depth > 0:
            _describe(value.__self__, f"{path}.__self__", depth - 1, lines, seen)
        return
    if isinstance(value, types.FunctionType):
        _function(value, path, depth, lines, seen)
        return
    if isinstance(value, (types.BuiltinFunctionType, type)):
        _line(lines, path, _qualified(value))
        return
    if _module(type(value)).split(".", 1)[0] in _ARRAY_MODULES:  # no user property is run
        shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
        if shape is not None and dtype is not None:
            _line(lines, path, _array(value, shape, dtype))
            return
    _container(value, path, depth, lines, seen)


def _function(value: types.FunctionType, path: str, depth: int, lines: list[str],
              seen: set[int]) -> None:
    code = value.__code__
    _line(lines, path, f"function {value.__qualname__} "
                       f"({_where(code.co_filename)}:{code.co_firstlineno})")
    if depth <= 0:
        return
    for name, cell in zip(code.co_freevars, value.__closure__ or (), strict=False):
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        _describe(content, f"{path}.<{name}>", depth - 1, lines, seen)


def _container(value: Any, path: str, depth: int, lines: list[str], seen: set[int]) -> None:
    kind = type(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple (optax's)
        _line(lines, path, type_name(kind))
        items: list[tuple[str, Any]] = [(f".{f}", getattr(value, f)) for f in value._fields]
    elif isinstance(value, (tuple, list)):
        _line(lines, path, f"{type_name(kind)} of {len(value)}")
        items = [(f"[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, dict):
        _line(lines, path, f"{type_name(kind)} of {len(value)}")
        items = [(f"[{k!r}]" if type(k) in _PLAIN else f"[{type_name(type(k))}]", v)
                 for k, v in value.items()]
    elif dataclasses.is_dataclass(value):
        _line(lines, path, f"{_module(kind)}{type_name(kind)}")
        items = [(f".{f.name}", getattr(value, f.name, None))
                 for f in dataclasses.fields(value)]
    else:
        _line(lines, path, f"{_module(kind)}{type_name(kind)} object")
        attributes = getattr(value, "__dict__", None)
        items = ([(f".{k}", v) for k, v in attributes.items()]
                 if isinstance(attributes, dict) else [])
    if depth > 0:
        for suffix, item in items:
            _describe(item, path + suffix, depth - 1, lines, seen)


def _array(value: Any, shape: Any, dtype: Any) -> str:
    text = f"{getattr(dtype, 'name', dtype)}{list(shape)}"
    try:
        import numpy as np  # lazy: numpy comes with JAX; not needed before an array is seen

        if int(np.prod(shape)) * int(np.dtype(dtype).itemsize) <= MAX_DIGEST_BYTES:
            data = np.ascontiguousarray(np.asarray(value)).tobytes()
            text += f" contents sha256 {hashlib.sha256(data).hexdigest()[:12]}"
    except Exception:  # a tracer, an array on other hosts: by type alone
        pass
    return f"{type_name(type(value))} {text}"


def _where(path: str) -> str:
    """A source file as people read it: below the current folder relative to it, an installed
    package's from the package (``optax/_src/transform.py``)."""
    for marker in ("site-packages", "dist-packages"):
        _, found, tail = path.rpartition(f"{os.sep}{marker}{os.sep}")
        if found:
            return tail
    return relative(path) or path


def _qualified(value: Any) -> str:
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or "?"
    module = getattr(value, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) and module != "builtins" else str(name)


def _module(kind: type) -> str:
    module = getattr(kind, "__module__", None)
    return f"{module}." if isinstance(module, str) and module not in ("builtins",
                                                                       "__main__") else ""
