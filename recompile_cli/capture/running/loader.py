"""Finding and importing user code: ``module:attr.path`` and ``path/file.py:attr.path``
targets, and scripts. Importing a module runs the user's code, so this lives in capture.

Imports put the module's folder first on ``sys.path`` (like ``python file.py``); an import that
fails or a name that does not exist becomes a ``TargetError`` that says what to do.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recompile_cli.capture.code.stack import user_frame_of
from recompile_cli.errors import TargetError


@dataclass(frozen=True, slots=True)
class Target:
    ref: str
    function: Callable[..., Any]


def load_target(ref: str) -> Target:
    """Resolve ``pkg.mod:fn``, ``file.py:fn``, ``mod:Class.method`` or ``mod:obj.attr``."""
    module_part, sep, attr_path = ref.rpartition(":")
    if not sep or not module_part or not attr_path:
        raise TargetError(f"Target {ref!r} is not of the form 'package.module:function' or "
                          "'path/to/file.py:function'. Name the function after a colon.")
    module = import_module(module_part)
    obj: Any = module
    walked: list[str] = []
    for name in attr_path.split("."):
        if not hasattr(obj, name):
            where = ".".join(walked) or module_part
            options = sorted(n for n in dir(obj) if not n.startswith("_")
                             and callable(getattr(obj, n, None)))[:12]
            hint = f" Available: {', '.join(options)}." if options else ""
            raise TargetError(f"{where} has no attribute {name!r} (target {ref!r}).{hint}")
        obj = getattr(obj, name)
        walked.append(name)
    if not callable(obj):
        raise TargetError(f"Target {ref!r} is a {type(obj).__name__}, not a function. Name a "
                          "function, a method or a jitted function.")
    return Target(ref, obj)


def resolver() -> Callable[[str], Callable[..., Any]]:
    """A function turning a 'module:function' reference into the function (for spec calls)."""
    return lambda ref: load_target(ref).function


def import_module(name: str) -> Any:
    """Import a dotted module name or a ``.py`` file, with clear errors for either."""
    if name.endswith(".py") or os.sep in name or "/" in name:
        return _import_file(Path(name))
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(f"No module named {exc.name!r} (from target module {name!r}). "
                              "Run from the folder that contains it, install it, or name a "
                              "file instead (path/to/file.py:function).") from None
        raise _import_failed(name, exc) from None
    except Exception as exc:
        raise _import_failed(name, exc) from None


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise TargetError(f"No such file: {path}. Give the path of a Python file, relative to "
                          f"the current folder ({os.getcwd()}).")
    path = path.resolve()
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) == str(path):
        return existing
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"Cannot import {path}: not a Python source file.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise _import_failed(str(path), exc) from None
    return module


def check_script(path: str) -> Path:
    """The script's path, after checking that it exists and compiles."""
    script = Path(path)
    if not script.is_file():
        raise TargetError(f"No such script: {script}. Give the path of a Python file, relative "
                          f"to the current folder ({os.getcwd()}).")
    try:
        compile(script.read_bytes(), str(script), "exec")
    except SyntaxError as exc:
        raise TargetError(f"{script}, line {exc.lineno}: syntax error ({exc.msg}). Fix the "
                          "script and run again.") from None
    return script.resolve()


def _import_failed(name: str, exc: BaseException) -> TargetError:
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ raises
        message = "(its message cannot be shown)"
    return TargetError(f"Importing {name} raised {type(exc).__name__}: {message} "
                       f"(at {user_frame_of(exc) or 'unknown location'}). Fix the error in the "
                       "module, or check that its dependencies are installed.")
