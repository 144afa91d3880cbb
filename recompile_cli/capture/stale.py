"""Stale captures: module globals and closure variables read by traced code.

JAX bakes the values a function reads from globals and closures into the trace; when such a
value changes later, the cached executable silently keeps the old one. ``Snapshot.take`` records
the simple values (numbers, strings, tuples of them, small arrays) a function's code reads at
trace time; ``Snapshot.stale`` lists the ones whose current value differs. ``StaleWatch`` keeps the
snapshots of one recording and lists its ``StaleCapture`` entries.

Which names count is read from the bytecode (``loaded_names``): only the global loads and the
closure-cell loads of the function and of the functions, lambdas, classes and comprehensions
defined inside it. Attribute, method and import names (``batch.tokens``) are never globals.
Code the program calls back on the host (``jax.debug.callback``, ``jax.pure_callback``,
``io_callback``: ``capture.jax.callbacks``) runs at every call and reads its values afresh:
what only it reads is never stale.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recompile_cli.capture.code.stack import python_function
from recompile_cli.session.model import CaptureScope, StaleCapture

HostCode = Callable[[], frozenset[types.CodeType]]  # the code a trace calls back on the host
_SMALL_ARRAY = 64  # elements: larger arrays are not compared
_MISSING = object()
# Opcodes that read a global (LOAD_NAME: class bodies; LOAD_FROM_DICT_OR_GLOBALS: 3.12+
# annotation scopes) and that read a closure cell (LOAD_CLASSDEREF: 3.11 class bodies,
# LOAD_FROM_DICT_OR_DEREF its 3.12+ successor). LOAD_CLOSURE only passes a cell on to a nested
# function (a plain LOAD_FAST from 3.13): the nested function's own loads decide.
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})
_CELL_LOADS = frozenset({"LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF"})
# Those that look in a class body's own namespace first: a name it assigns is not read outside.
_DICT_FIRST = frozenset({"LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_CLASSDEREF",
                         "LOAD_FROM_DICT_OR_DEREF"})


@dataclass(frozen=True)
class Snapshot:
    globals_dict: dict[str, Any] | None
    global_values: dict[str, tuple[Any, str]]  # name -> (fingerprint, repr)
    cells: dict[str, tuple[Any, tuple[Any, str]]]  # name -> (cell, (fingerprint, repr))

    @classmethod
    def take(cls, fun: Any, host_code: HostCode = frozenset) -> Snapshot | None:
        """What ``fun``'s traced code reads, or None when it reads nothing simple;
        ``host_code()`` gives the code it calls back on the host (asked only when some name
        counts), whose reads are left out."""
        fn: Any = python_function(fun)  # any object with a __code__ (a function, normally)
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        globals_dict = getattr(fn, "__globals__", None)
        global_names, cell_names = loaded_names(code)
        if global_names or cell_names:
            host = host_code()
            if host:
                global_names, cell_names = loaded_names(code, host)
        global_values = {}
        if globals_dict is not None:
            for name in global_names:
                value = globals_dict.get(name, _MISSING)
                seen = _fingerprint(value)
                if seen is not None:
                    global_values[name] = seen
        cells = {}
        for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
            if name not in cell_names:
                continue
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


class StaleWatch:
    """The snapshots of the user's functions traced during one recording."""

    def __init__(self) -> None:
        self._snapshots: list[tuple[str, str | None, Snapshot]] = []

    def add(self, name: str, defined_at: str | None, fun: Any,
            host_code: HostCode = frozenset) -> None:
        """Snapshot what the traced function ``fun`` reads (when it reads anything simple),
        but for the code it calls back on the host (``host_code()``)."""
        snapshot = Snapshot.take(fun, host_code)
        if snapshot is not None:
            self._snapshots.append((name, defined_at, snapshot))

    def captures(self, on_error: Callable[[BaseException], None]) -> list[StaleCapture]:
        """Each variable read at trace time whose value changed since, once per function."""
        found: dict[tuple[str, str | None, str], StaleCapture] = {}
        for name, defined_at, snapshot in self._snapshots:
            try:
                for variable, scope, then, now in snapshot.stale():
                    found.setdefault((name, defined_at, variable), StaleCapture(
                        name, defined_at, variable, scope, then, now))
            except Exception as exc:
                on_error(exc)
        return list(found.values())


@functools.lru_cache(maxsize=1024)
def loaded_names(code: types.CodeType, skip: frozenset[types.CodeType] = frozenset()
                 ) -> tuple[frozenset[str], frozenset[str]]:
    """(globals, closure variables) that ``code`` and the code nested in it load, but for the
    nested code in ``skip`` (and the code nested in that).

    A closure variable is one of ``code.co_freevars``: loaded by ``code`` itself or by a nested
    function whose free variable is bound to it (not to a cell of an enclosing nested function
    that rebinds the name). Code that cannot be read gives no names.
    """
    global_names: set[str] = set()
    cell_names: set[str] = set()
    try:
        _collect(code, frozenset(code.co_freevars), global_names, cell_names, skip)
    except Exception:  # bytecode this Python's dis cannot read: claim nothing
        return frozenset(), frozenset()
    return frozenset(global_names), frozenset(cell_names)


def _collect(code: types.CodeType, outer: frozenset[str], global_names: set[str],
             cell_names: set[str], skip: frozenset[types.CodeType]) -> None:
    """Add the global loads of ``code`` and its loads of the cells named in ``outer``."""
    instructions = list(dis.get_instructions(code))
    own = {i.argval for i in instructions if i.opname == "STORE_NAME"}  # a class body's names
    for instruction in instructions:
        name, opname = instruction.argval, instruction.opname
        if not isinstance(name, str) or (opname in _DICT_FIRST and name in own):
            continue
        if opname in _GLOBAL_LOADS:
            global_names.add(name)
        elif opname in _CELL_LOADS and name in outer:
            cell_names.add(name)
    passed_on = outer - frozenset(code.co_cellvars)  # a cell of this code hides the outer one
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const not in skip:
            _collect(const, passed_on & frozenset(const.co_freevars), global_names, cell_names,
                     skip)


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
            import numpy as np  # lazy: capture loads before the job's environment is set

            data = np.asarray(value)
        except Exception:  # a tracer or an array we cannot read
            return None
        return ("array", str(dtype), tuple(shape), data.tobytes()), _short(
            f"array({data.tolist()}, dtype={dtype})")
    return None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
