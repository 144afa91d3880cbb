"""Stale captures: module globals and closure variables read by traced code.

JAX bakes the values a function reads from globals and closures into the trace; when such a
value changes later, the cached executable silently keeps the old one. ``Snapshot.take`` records
the simple values (numbers, strings, tuples of them, small arrays) a function's code reads at
trace time; ``Snapshot.stale`` lists the ones whose current value differs.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from recompile_cli.capture.frames import python_function
from recompile_cli.session.model import CaptureScope

_SMALL_ARRAY = 64  # elements: larger arrays are not compared
_MISSING = object()


@dataclass(frozen=True)
class Snapshot:
    globals_dict: dict[str, Any] | None
    global_values: dict[str, tuple[Any, str]]  # name -> (fingerprint, repr)
    cells: dict[str, tuple[Any, tuple[Any, str]]]  # name -> (cell, (fingerprint, repr))

    @classmethod
    def take(cls, fun: Any) -> Snapshot | None:
        fn: Any = python_function(fun)  # any object with a __code__ (a function, normally)
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        globals_dict = getattr(fn, "__globals__", None)
        global_values = {}
        if globals_dict is not None:
            for name in _global_names(code):
                value = globals_dict.get(name, _MISSING)
                seen = _fingerprint(value)
                if seen is not None:
                    global_values[name] = seen
        cells = {}
        for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
            try:
                seen = _fingerprint(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
            if seen is not None:
                cells[name] = (cell, seen)
        if not global_values and not cells:
            return None
        return cls(globals_dict, global_values, cells)

    def stale(self) -> list[tuple[str, CaptureScope, str, str]]:
        """(variable, scope, traced value, current value) for each value that changed since."""
        out = []
        for name, (print_then, text_then) in self.global_values.items():
            if self.globals_dict is None:
                break
            now = _fingerprint(self.globals_dict.get(name, _MISSING))
            if now is not None and now[0] != print_then:
                out.append((name, CaptureScope.GLOBAL, text_then, now[1]))
        for name, (cell, (print_then, text_then)) in self.cells.items():
            try:
                now = _fingerprint(cell.cell_contents)
            except ValueError:
                continue
            if now is not None and now[0] != print_then:
                out.append((name, CaptureScope.CLOSURE, text_then, now[1]))
        return out


def _global_names(code: types.CodeType) -> set[str]:
    """Names the code (and the lambdas/comprehensions inside it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _fingerprint(value: Any) -> tuple[Any, str] | None:
    """A comparable fingerprint and a short repr for simple values; None for anything else."""
    if value is _MISSING or isinstance(value, (types.ModuleType, type)) or callable(value):
        return None
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, value), _short(repr(value))
    if isinstance(value, tuple):
        parts = [_fingerprint(v) for v in value]
        known = [p for p in parts if p is not None]
        if len(known) == len(parts):
            return ("tuple", tuple(p[0] for p in known)), _short(repr(value))
        return None
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    size = getattr(value, "size", None)
    if shape is not None and dtype is not None and isinstance(size, int) and size <= _SMALL_ARRAY:
        try:
            import numpy as np

            data = np.asarray(value)
        except Exception:  # a tracer or an array we cannot read
            return None
        return ("array", str(dtype), tuple(shape), data.tobytes()), _short(
            f"array({data.tolist()}, dtype={dtype})")
    return None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
