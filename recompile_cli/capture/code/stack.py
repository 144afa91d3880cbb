"""Where code lives, as only the running interpreter can tell: the user's call site on the current
stack, who owns a source file (``"jax"``, ``"library"``: anything else in site-packages, or
``"user"``) and where in the user's code an exception was raised (``exception_summary``). Frames
of the standard library, installed packages and recompile_cli are never a user call site.
Parsing and showing ``file:line`` texts is ``session.locations``'s.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import sysconfig
import traceback
import types

from recompile_cli.session.locations import relative
from recompile_cli.session.model import Owner, function_key


def _package_dir() -> str:
    """The recompile_cli package folder: one level up from this file per dot of its name."""
    path = os.path.abspath(__file__)
    for _ in range(__name__.count(".")):
        path = os.path.dirname(path)
    return path + os.sep


OWN_DIR = _package_dir()


def _dirs(*names: str) -> tuple[str, ...]:
    out = []
    for name in names:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            out.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(out)


@functools.cache
def _stdlib_dirs() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")}
    return tuple(os.path.abspath(p) + os.sep for p in paths if p)


_SITE_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


@functools.lru_cache(maxsize=4096)
def owner_of(path: str | None) -> Owner:
    """Who owns a source file: JAX's, a library's or the user's (``None`` counts as user)."""
    if not path:
        return Owner.USER
    path = os.path.abspath(path)
    if path.startswith(_dirs("jax", "jaxlib")):
        return Owner.JAX
    if any(marker in path for marker in _SITE_MARKERS):
        return Owner.LIBRARY
    return Owner.USER


@functools.cache
def _install_dirs() -> tuple[str, ...]:
    """The Python installation and virtual environment (their bin/ scripts are not user code)."""
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    return tuple(os.path.abspath(p) + os.sep for p in prefixes)


@functools.lru_cache(maxsize=4096)
def is_user_file(path: str) -> bool:
    if path.startswith("<"):
        return False
    path = os.path.abspath(path)
    if path.startswith((OWN_DIR, *_stdlib_dirs(), *_install_dirs())):
        return False
    return owner_of(path) == Owner.USER


def user_call_site(skip: int = 1) -> str | None:
    """``file:line (function)`` of the innermost user frame on this thread's stack."""
    return call_site_of(sys._getframe(skip))


def call_site_of(frame: types.FrameType | None) -> str | None:
    """``file:line (function)`` of the innermost user frame from ``frame`` outwards."""
    return site(user_frame(frame))


def site(frame: types.FrameType | None) -> str | None:
    """``file:line (function)`` of ``frame`` itself."""
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


def user_frame(frame: types.FrameType | None) -> types.FrameType | None:
    """The innermost frame of the user's code from ``frame`` outwards (the line that pays)."""
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def python_function(fn: object) -> object:
    """The plain Python function under jit wrappers, partials and bound methods."""
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif inspect.ismethod(fn):
            fn = fn.__func__
        elif hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        else:
            return fn


def location_of(fn: object) -> str | None:
    """``file:line`` where the plain Python function under ``fn`` is defined, if it has code."""
    code = getattr(python_function(fn), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


def made_for(candidate: object, name: str, wrapper: types.CodeType) -> object | None:
    """The plain function under ``candidate`` if it is the one a library's jit wrapper (code
    ``wrapper``, renamed ``name``) was made for: named ``name``, with code in another file.
    That function may be the user's (``equinox.filter_jit(step)``) or a library's
    (diffrax's ``diffeqsolve``, wrapped by ``equinox.filter_jit`` where diffrax defines it)."""
    inner = python_function(candidate)
    code = getattr(inner, "__code__", None)
    if (isinstance(code, types.CodeType) and getattr(inner, "__name__", None) == name
            and code.co_filename != wrapper.co_filename):
        return inner
    return None


def function_key_of(fn: object) -> str:
    """The ``name@file:line`` key the recorder gives the function under ``fn``: a library's
    wrapper renamed after the function it was made for (``equinox.filter_jit`` jits its own
    ``fun_wrapped`` named ``step``) is keyed by that function (``made_for``)."""
    inner = python_function(fn)
    code = getattr(inner, "__code__", None)
    name = getattr(inner, "__name__", type(inner).__name__)
    if code is not None and name != code.co_name and not is_user_file(code.co_filename):
        found = _function_made_for(name, code, sys._getframe(1))
        if found is not None:
            inner, code = found, getattr(found, "__code__", code)
    where = f"{code.co_filename}:{code.co_firstlineno}" if code else None
    return function_key(name, where)


def _function_made_for(name: str, wrapper: types.CodeType, frame: types.FrameType | None,
                       depth: int = 12) -> object | None:
    """The function a library's wrapper is being made for, held by a library frame on the
    stack (e.g. ``fun`` in ``equinox.filter_jit(fun)``)."""
    while frame is not None and depth:
        if not is_user_file(frame.f_code.co_filename):
            for value in list(frame.f_locals.values()):
                found = made_for(value, name, wrapper)
                if found is not None:
                    return found
        frame, depth = frame.f_back, depth - 1
    return None


def user_frame_of(exc: BaseException) -> str | None:
    """``file:line`` of the innermost traceback frame outside installed packages and ours."""
    found = None
    for entry in traceback.extract_tb(exc.__traceback__):
        if is_user_file(entry.filename):
            found = f"{entry.filename}:{entry.lineno}"
    if found is None and isinstance(exc, SyntaxError) and exc.filename:
        found = f"{exc.filename}:{exc.lineno}"
    return found


_HIDDEN_MODULES = ("runpy.py", os.sep + "importlib" + os.sep)  # and frozen "<frozen runpy>"


def user_traceback(exc: BaseException) -> str:
    """The traceback as Python prints it, without the frames of recompile_cli, ``runpy`` and
    ``importlib`` that ran the user's code (JAX filters its own frames already)."""
    try:
        stack = traceback.TracebackException.from_exception(exc)
        for link in _chain(stack):
            kept = [f for f in link.stack if not f.filename.startswith((OWN_DIR, "<frozen "))
                    and not f.filename.endswith(_HIDDEN_MODULES[0])
                    and _HIDDEN_MODULES[1] not in f.filename]
            link.stack = traceback.StackSummary.from_list(kept)
        return "".join(stack.format())
    except Exception:  # an exception whose __str__ raises, or a broken traceback
        return f"{type(exc).__name__} (its traceback cannot be shown)\n"


def _chain(stack: traceback.TracebackException) -> list[traceback.TracebackException]:
    out, seen = [], set()
    link: traceback.TracebackException | None = stack
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        out.append(link)
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return out


def exception_summary(what: str, exc: BaseException) -> str:
    """``what raised TypeError at prog.py:7: message`` (first line), safe for any exception."""
    try:
        first = (str(exc).strip().splitlines() or [""])[0]
    except Exception:  # an exception whose __str__ raises
        first = f"<{type(exc).__name__} whose message cannot be shown>"
    where = user_frame_of(exc)
    at = f" at {relative(where)}" if where else ""
    return f"{what} raised {type(exc).__name__}{at}: {first}".rstrip(": ")
