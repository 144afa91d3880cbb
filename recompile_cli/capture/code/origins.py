"""Where a traced function object comes from, read from the live stack on a cache miss:
whose it is (``jit_owner``: who applied ``jax.jit`` and calls it, so a library function the user
jitted is the user's, and a jit a library applies itself stays the library's) and the line that
made it (``creation_site``: a lambda's or nested def's first line, else the user's line that
bound a partial, bound method or closure to the name it is called through). Runs inside the
recorder's trace hook, which guards every call.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import linecache
import os
import re
import sys
import types
import weakref
from typing import TYPE_CHECKING, Any

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax.hooks import JIT_CALL_PATH_FILES
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import FunctionKind, Owner

if TYPE_CHECKING:
    from recompile_cli.capture.jax.arguments.signatures import TraceInfo

_PACKAGE = re.compile(r"^(.*?[/\\](?:site|dist)-packages[/\\][^/\\]+)")


class Functions:
    """The function objects of one recording: a small id per distinct object, and whose each
    traced function is (``origin``), remembered so that a function found to be the user's
    stays the user's where no stack tells (a compile without a re-trace, or the user's jit of
    it called from a library's code)."""

    def __init__(self) -> None:
        self._ids: dict[int, tuple[Any, int]] = {}
        self._last_id = 0
        self._users: dict[tuple[str, str | None], None] = {}  # (name, defined_at)
        self._user_objects: set[int] = set()  # their function objects' ids

    def function_id(self, fun: Any) -> int:
        """A small integer per distinct function object (ids alone can be reused after GC)."""
        key = id(fun)
        known = self._ids.get(key)
        if known is not None:
            old_ref, token = known
            if (old_ref() if isinstance(old_ref, weakref.ref) else old_ref) is fun:
                return int(token)
        try:
            ref: Any = weakref.ref(fun)
        except TypeError:
            ref = fun  # not weak-referenceable: keep it alive so its id stays unique
        self._last_id += 1
        self._ids[key] = (ref, self._last_id)
        return self._last_id

    def origin(self, info: TraceInfo, frame: types.FrameType | None
               ) -> tuple[Owner, str | None]:
        """Whose a traced function is and where the user's code made it, from the stack
        ``frame`` of its trace (``origin``)."""
        owner, created_at = origin(info.fun, info.behind, info.defined_at, info.function_kind,
                                   info.eager_primitive, frame)
        if owner != Owner.USER and self.function_id(info.fun) in self._user_objects:
            owner = Owner.USER  # the user's jit of it, now called from a library's code
        elif owner == Owner.USER and stack.owner_of(path_of(info.defined_at)) != Owner.USER:
            self._users[(info.name, info.defined_at)] = None
            self._user_objects.add(self.function_id(info.fun))
        return owner, created_at

    def owner(self, name: str, defined_at: str | None) -> Owner:
        """Whose a function is where no stack tells: the user's if a trace found it so, else
        whoever defined it."""
        if (name, defined_at) in self._users:
            return Owner.USER
        return stack.owner_of(path_of(defined_at))


def origin(fun: Any, behind: Any, defined_at: str | None, kind: FunctionKind,
           eager_primitive: bool, frame: types.FrameType | None) -> tuple[Owner, str | None]:
    """Whose a traced function is (``jit_owner``) and where the user's code made the function
    object (``creation_site``), from the stack ``frame`` of its trace."""
    if eager_primitive:
        return Owner.JAX, None
    made = fun if behind is None else behind
    if (stack.owner_of(path_of(defined_at)) == Owner.USER
            and kind != FunctionKind.PARTIAL and kind != FunctionKind.BOUND_METHOD):
        return Owner.USER, creation_site(made, kind, None)  # no stack to read
    caller = jit_caller(frame, wrapper_dir(fun, defined_at))
    return jit_owner(fun, behind, defined_at, caller), creation_site(made, kind, caller)


def jit_owner(fun: Any, behind: Any, defined_at: str | None,
              caller: types.FrameType | None) -> Owner:
    """The user's when the user wrote the function, or when user code called it (``caller``:
    directly, through a JAX transformation, or through the library wrapper ``fun`` made for
    ``behind``) and its own package did not jit it; else whoever defined it."""
    defined = stack.owner_of(path_of(defined_at))
    if defined == Owner.USER:
        return Owner.USER
    if caller is None or not stack.is_user_file(caller.f_code.co_filename):
        return defined
    return defined if applied_by_its_package(fun if behind is None else behind) else Owner.USER


def public_owner(frame: types.FrameType | None) -> Owner | None:
    """Whose a function traced or compiled in public-only mode is, where there is no function
    object or location to read: the user's (or a library's) when that code called the jitted
    function itself, through JAX's jit call path; JAX's when JAX's own code made the call (eager
    operations such as ``x + 1``, ``jax.random``'s internal jits), wherever it was called from.
    ``None`` when recompile-cli itself made the call (``profile`` calls the target, and
    ``--count-calls`` wraps it) or no user or library frame is on the stack."""
    entry = None  # the outermost JAX frame seen so far: where the call entered JAX
    while frame is not None:
        path = frame.f_code.co_filename
        owner = stack.owner_of(path)
        if path.startswith(stack.OWN_DIR):
            if entry is not None:  # called by recompile-cli: whose, the location tells
                return None
        elif owner == Owner.JAX:
            entry = path
        elif owner == Owner.LIBRARY or stack.is_user_file(path):
            return owner if entry is not None and _on_jit_path(entry) else Owner.JAX
        frame = frame.f_back
    return None


def jit_caller(frame: types.FrameType | None, skip_dir: str | None = None
               ) -> types.FrameType | None:
    """The frame that called the jitted function being traced (or handed it to a JAX
    transformation): the first frame outside recompile_cli, JAX's jit call path and the
    package folder ``skip_dir`` of a library's jit wrapper (``wrapper_dir``)."""
    while frame is not None:
        path = frame.f_code.co_filename
        if not (path.startswith(stack.OWN_DIR) or _on_jit_path(path)
                or (skip_dir is not None and path.startswith(skip_dir))):
            return frame
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=1024)
def _on_jit_path(path: str) -> bool:
    return (os.path.basename(path) in JIT_CALL_PATH_FILES
            and stack.owner_of(path) == Owner.JAX)


def wrapper_dir(fun: Any, defined_at: str | None) -> str | None:
    """The package folder of a library's jit wrapper traced for a function elsewhere
    (``equinox/`` for ``equinox.filter_jit``), whose frames stand between that function's
    caller and JAX."""
    code = getattr(stack.python_function(fun), "__code__", None)
    if code is None or code.co_filename == path_of(defined_at):
        return None
    match = _PACKAGE.match(os.path.abspath(code.co_filename))
    return match.group(1) + os.sep if match else None


def applied_by_its_package(obj: Any) -> bool:
    """Whether the jitted object's own module exports it only wrapped (``@jax.jit`` or a
    library's jit decorator applied where it is defined, or a wrapper object made of it, such
    as the ``ufunc`` that ``jnp.negative`` is): ``jnp.sin``'s plain function, not ``jnp.sin``
    itself, nor a closure or a bound method that the caller jitted. Whoever jitted an object
    that its module replaced with something else under its own name had it before the module
    did: its package. Answered once per object (JAX's functions traced inside a user's
    function ask again and again)."""
    if inspect.ismethod(obj):
        obj = obj.__func__
    try:
        return _APPLIED[obj]
    except Exception:  # not asked yet, or not weakly referenceable (or hashable)
        pass
    found = _applied(obj)
    with contextlib.suppress(Exception):
        _APPLIED[obj] = found
    return found


_APPLIED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _applied(obj: Any) -> bool:
    module = sys.modules.get(str(getattr(obj, "__module__", None)))
    qualname = getattr(obj, "__qualname__", None)
    if module is None or not isinstance(qualname, str) or "<locals>" in qualname:
        return False
    found: Any = module
    for part in qualname.split("."):
        found = inspect.getattr_static(found, part, None)
        if isinstance(found, (staticmethod, classmethod)):
            found = found.__func__
    if found is not None and found is not obj:
        return True  # exported wrapped: by ``__wrapped__`` or inside an object (a ufunc)
    # exported under another name (``update = jax.jit(_update)``)
    return any(value is not obj and _wraps(value, obj) for value in list(vars(module).values())
               if callable(value) and not isinstance(value, (type, types.ModuleType)))


def _wraps(wrapper: Any, obj: Any, depth: int = 4) -> bool:
    """Whether ``obj`` is reached from ``wrapper`` through ``__wrapped__`` links."""
    for _ in range(depth):
        try:
            wrapper = getattr(wrapper, "__wrapped__", None)
        except Exception:  # a property that raises
            return False
        if wrapper is None:
            return False
        if wrapper is obj:
            return True
    return False


# -- where a new function object was made -------------------------------------------------------
def creation_site(fun: Any, kind: FunctionKind, caller: types.FrameType | None) -> str | None:
    """``file:line`` of the user's code that made the function object ``fun``, where it can be
    told: the first line of a user's lambda or ``def``; else the line where the user function
    ``caller`` (that called the jitted function) last assigned ``fun``, or the jit wrapper
    around it, to a name (``g = functools.partial(f, a)``, ``step = jax.jit(obj.method)``)."""
    if kind != FunctionKind.PARTIAL and kind != FunctionKind.BOUND_METHOD:
        code = getattr(stack.python_function(fun), "__code__", None)
        if code is not None and stack.is_user_file(code.co_filename):
            return f"{code.co_filename}:{code.co_firstlineno}"
    if caller is None or not stack.is_user_file(caller.f_code.co_filename):
        return None
    return _assigned_at(fun, caller)


def _assigned_at(fun: Any, frame: types.FrameType) -> str | None:
    own: list[str] = []  # names bound to the object itself
    wrappers: list[str] = []  # names bound to a wrapper of it (the jitted function)
    for name, value in list(frame.f_locals.items()):
        if value is fun:
            own.append(name)
        elif callable(value) and not isinstance(value, (type, types.ModuleType)) and _wraps(
                value, fun):
            wrappers.append(name)
    stores = _store_lines(frame.f_code)
    now, path = frame.f_lineno, frame.f_code.co_filename
    for names in (own, wrappers):
        lines = [line for name in names for line in stores.get(name, ()) if line <= now]
        if lines:
            return f"{path}:{max(lines)}"
    if not own and not wrappers and _MAKES.search(linecache.getline(path, now)):
        return f"{path}:{now}"  # made in the calling statement: jax.jit(partial(f, a))(x)
    return None


# A statement that makes a partial or a jit wrapper itself (read only when no name holds it).
_MAKES = re.compile(r"\bpartial\(|\bjit\(")


_STORES = frozenset({"STORE_NAME", "STORE_FAST", "STORE_GLOBAL", "STORE_DEREF"})


@functools.lru_cache(maxsize=256)
def _store_lines(code: types.CodeType) -> dict[str, tuple[int, ...]]:
    """Name -> the lines of a code object that assign it (its own code, not nested ones)."""
    out: dict[str, list[int]] = {}
    for instruction in dis.get_instructions(code):
        if instruction.opname in _STORES:
            positions = getattr(instruction, "positions", None)
            line = getattr(positions, "lineno", None)
            if isinstance(line, int):
                out.setdefault(str(instruction.argval), []).append(line)
    return {name: tuple(lines) for name, lines in out.items()}
