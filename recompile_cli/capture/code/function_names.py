"""A function value as the user names it: ``jax.nn.gelu``, never ``<function gelu at 0x7f..>``
(an address would make two runs' reports differ). A private module is replaced by the shortest
public one that exports the same object; a script's function is named alone, a lambda or nested
function with where it is defined (``<lambda> (train.py:12)``), a partial with its bound
arguments, and ``named_functions`` names the functions inside another value's ``repr``. Cache
misses only; each public name is looked up once.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import types
from collections.abc import Callable
from typing import Any

from recompile_cli.capture.code.stack import is_user_file, python_function

_MAX_NAMES = 4096  # public names remembered
# Python's repr of a function (``<function f at 0x7f..>``) and of a jitted one
# (``<PjitFunction of <function f at 0x7f..>>``), inside the repr of another value
_FUNCTION_REPR = re.compile(r"<PjitFunction of <function (.+?) at 0x[0-9a-fA-F]+>>"
                            r"|<function (.+?) at 0x[0-9a-fA-F]+>")
_PUBLIC: dict[tuple[str, str], str] = {}


def is_function(value: Any) -> bool:
    """A function value: a function, a jitted function, a ``custom_jvp``/``custom_vjp``, a
    builtin function or a ``functools.partial`` of one (not a class, not a callable object of
    a class of its own, whose ``repr`` is its class's to define)."""
    if isinstance(value, functools.partial):
        return True
    if isinstance(value, type) or not callable(value):
        return False
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return True
    # jitted functions and custom derivatives are wrapped around one (functools.wraps)
    return (isinstance(getattr(value, "__qualname__", None), str)
            and getattr(value, "__wrapped__", None) is not None)


def function_name(value: Any, text: Callable[[Any], str] = repr) -> str | None:
    """The name of a function value (``is_function``), or None for any other value; ``text``
    writes a partial's bound arguments."""
    if not is_function(value):
        return None
    if isinstance(value, functools.partial):
        kind = type(value)
        head = ("functools.partial" if kind is functools.partial
                else _qualified(kind.__module__, kind.__qualname__, kind))
        inner = function_name(value.func, text) or text(value.func)
        parts = [inner, *map(text, value.args),
                 *(f"{k}={text(v)}" for k, v in value.keywords.items())]
        return f"{head}({', '.join(parts)})"
    bound = getattr(value, "__self__", None)
    if isinstance(value, types.BuiltinFunctionType) and not (
            bound is None or isinstance(bound, types.ModuleType)):
        return None  # a builtin method: its repr names the object it is bound to
    qualname = str(getattr(value, "__qualname__", None) or getattr(value, "__name__", "?"))
    if "<" in qualname:  # a lambda, or defined inside a function: where it is defined
        code = getattr(python_function(value), "__code__", None)
        factory = qualname.rpartition(".<locals>.")[0].rpartition(".")[2]
        if (code is not None and factory and not factory.startswith("<")
                and not is_user_file(code.co_filename)):
            # a closure a library's factory made (jax.checkpoint_policies.save_from_both_
            # policies(...)): named by the call the user wrote, not by the library's inner name
            return f"{factory}(...)"
        where = (f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
                 if code is not None else "")
        return qualname.rpartition("<locals>.")[2] + where
    module = getattr(value, "__module__", None)
    return _qualified(module if isinstance(module, str) else None, qualname, value)


def named_functions(text: str) -> tuple[str, bool]:
    """``text`` (another value's ``repr``) with each function's repr replaced by its name, and
    whether it held any."""
    if "at 0x" not in text:
        return text, False
    named, count = _FUNCTION_REPR.subn(lambda m: m.group(1) or m.group(2), text)
    return named, count > 0


def _qualified(module: str | None, qualname: str, value: Any) -> str:
    if not module or module in ("__main__", "builtins"):
        return qualname
    if not any(part.startswith("_") for part in module.split(".")):
        return f"{module}.{qualname}"
    known = _PUBLIC.get((module, qualname))
    if known is None:
        known = f"{_public_module(module, qualname, value) or module}.{qualname}"
        if len(_PUBLIC) >= _MAX_NAMES:
            _PUBLIC.clear()
        _PUBLIC[module, qualname] = known
    return known


def _public_module(module: str, qualname: str, value: Any) -> str | None:
    """The shortest loaded public module of ``module``'s package that holds ``value`` under
    ``qualname`` (``jax.nn`` for ``jax._src.nn.functions.gelu``)."""
    top = module.split(".")[0]
    found = []
    for name, loaded in list(sys.modules.items()):
        if (loaded is None or not (name == top or name.startswith(top + "."))
                or any(part.startswith("_") for part in name.split("."))):
            continue
        held: Any = loaded
        for part in qualname.split("."):  # by __dict__: no module __getattr__ runs
            held = getattr(held, "__dict__", {}).get(part)
        if held is value:
            found.append(name)
    return min(found, key=lambda name: (name.count("."), len(name), name), default=None)
