"""Calls that JAX refused: a static argument it cannot hash, or whose ``__hash__`` or ``__eq__``
raised, or a pytree node's static data whose ``__eq__`` raised (checked on JAX 0.10.2 and
0.12.0). JAX refuses these in C++ before any hook runs, so ``refusal`` reads the call back from
the exception and the user's frame without running any of the user's code (how: noted above
``Refusal``); ``refusal_of_call`` when the values themselves are at hand. Anything it cannot
read gives no refusal: the target's exception stays as it is.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import re
import types
from dataclasses import dataclass
from typing import Any

from recompile_cli.capture.code.stack import OWN_DIR, is_user_file, location_of, python_function
from recompile_cli.capture.jax.arguments.signatures import full_repr, name_and_location
from recompile_cli.session.model import TraceError

_UNHASHABLE = "Non-hashable static arguments are not supported"
_UNEQUAL = "static arguments should be comparable using __eq__"
_METADATA = "Exception raised while checking equality of metadata fields of pytree"
_TYPE = re.compile(r"<class '([^']+)'>")
_MISSING = object()
_DEPTH = 4  # levels of nested tuples searched for the part JAX could not hash


@dataclass(frozen=True, slots=True)
# JAX's C++ dispatch hashes and compares a jitted function's static arguments (and the static data
# of its arguments' pytree nodes) to find the compiled program, on the cached-call path and before
# any hook runs: its refusal (``ValueError: Non-hashable static arguments are not supported...``,
# ``static arguments should be comparable using __eq__...``, ``Exception raised while checking
# equality of metadata fields of pytree...``, or what the value's own ``__hash__`` raised) reaches
# no hook. ``refusal`` finds it from the exception and the user's frame that made the call:
#
# * the call is read from the frame's code at the instruction that raised (``co_positions``, the
#   source line) and its callee looked up in the frame's locals, globals and builtins, and along
#   attributes through ``__dict__`` and the class (``inspect.getattr_static``), so that no code of
#   the user's runs;
# * the callee is a jitted function (its ``_jit_info``, the ``PjitInfo`` JAX keeps on it): its
#   name and location are the ones the hooks give its traces (``fun_sourceinfo``), so the refusal
#   is filed under that function; or a library's jit wrapper (``equinox.filter_jit``,
#   ``flax.nnx.jit``), filed under the user's function it wraps;
# * the static argument is named from the call (a keyword, or a position among ``static_argnums``,
#   the instance first for a method called on one) and, inside a static tuple, down to the part
#   JAX could not hash (``cfg[1]``, ``cfg.steps``), where the argument is a literal or a name (an
#   argument made by a call, ``Cfg(0.1, {3})``, is named as a whole).
#
# A call made by the runner for a spec, or through a counted call's wrapper, gives the argument
# values themselves (``refusal_of_call``). Anything this cannot read gives no refusal (the
# target's exception stays as it is); a callee made by a call (``Model(2).apply(x)``) is one.
class Refusal:
    """A call of the jitted function ``name`` (defined at ``defined_at``) that JAX refused,
    made at ``call_site``, and why (``error``, ``refused`` set)."""

    name: str
    defined_at: str | None
    call_site: str
    error: TraceError


def refusal_in(exc: BaseException) -> Refusal | None:
    """The refusal that an exception which reached the recorder is, read at the innermost
    user frame of its traceback that made a refused call; None when it is none."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append((tb.tb_frame, tb.tb_lasti))
        tb = tb.tb_next
    for frame, offset in reversed(entries):
        if is_user_file(frame.f_code.co_filename):
            found = refusal(exc, frame, offset)
            if found is not None:
                return found
    return None


def refusal(exc: BaseException, frame: types.FrameType, offset: int) -> Refusal | None:
    """The refusal that ``exc`` is, raised at instruction ``offset`` of ``frame`` (a call of
    a jitted function), or None when it is none. Never raises."""
    try:
        return _refusal(exc, frame, offset)
    except Exception:
        return None


def _refusal(exc: BaseException, frame: types.FrameType, offset: int) -> Refusal | None:
    why = _why(exc, frame)
    if why is None:
        return None
    call = _call_at(frame.f_code, offset)
    if call is None:
        return None
    found = _callee(call.func, frame)
    if found is None:
        return None
    callee, bound = found
    positional: list[Any] = [_owner(call.func, frame)] if bound else []
    for expr in call.args:
        if isinstance(expr, ast.Starred):  # the positions after it are not known
            break
        positional.append(_value(expr, frame))
    keywords = {k.arg: _value(k.value, frame) for k in call.keywords if k.arg is not None}
    code = frame.f_code
    return _described(exc, why, callee, positional, keywords,
                      f"{code.co_filename}:{frame.f_lineno} ({code.co_name})")


def refusal_of_call(exc: BaseException, callee: Any, args: list[Any] | tuple[Any, ...],
                    kwargs: dict[str, Any], call_site: str) -> Refusal | None:
    """The refusal that ``exc`` is, raised by the call ``callee(*args, **kwargs)`` made at
    ``call_site`` (a spec's call, made by the runner), or None. Never raises."""
    try:
        tb = exc.__traceback__
        frame = tb.tb_frame if tb is not None else None
        why = _why(exc, frame)
        if why is None:
            return None
        return _described(exc, why, callee, list(args), dict(kwargs), call_site)
    except Exception:
        return None


def _described(exc: BaseException, why: str, callee: Any, positional: list[Any],
               keywords: dict[str, Any], call_site: str) -> Refusal | None:
    """The refusal of a call of ``callee`` with these argument values (``_MISSING`` where not
    known; an instance a method is called on first), or None if it is no jitted function."""
    info = getattr(callee, "_jit_info", None)
    if info is None or not hasattr(callee, "lower"):
        wrapped = _library_wrapper(callee)
        if wrapped is None:
            return None
        name, defined_at = wrapped
    else:
        name, defined_at = name_and_location(
            types.SimpleNamespace(func_src_info=getattr(info, "fun_sourceinfo", None)),
            fallback=getattr(callee, "__name__", "?"))
    kinds = _TYPE.findall(why)
    argument, part = (_argument(info, _parameters(callee), positional, keywords,
                                kinds[0] if kinds else None) if info is not None
                      else (None, _MISSING))
    message = why.splitlines()[0].strip().rstrip(":")
    shown = None if part is _MISSING else _short(full_repr(part))
    return Refusal(name, defined_at, call_site, TraceError(
        type(exc).__name__, message, argument, refused=True,
        value_type=None if part is _MISSING else type(part).__qualname__, value=shown))


def _library_wrapper(callee: Any) -> tuple[str, str | None] | None:
    """(name, location) of the user's function behind a library's jit wrapper
    (``equinox.filter_jit``, ``flax.nnx.jit``: made in the library, ``__wrapped__`` around
    the user's function), as the hooks name its traces; None for anything else."""
    inner = python_function(callee)
    code = getattr(inner, "__code__", None)
    own = getattr(callee, "__code__", None)
    made_in = own.co_filename if own is not None else inspect.getfile(type(callee))
    if inner is callee or code is None or is_user_file(made_in):
        return None
    if not is_user_file(code.co_filename):
        return None
    return str(getattr(inner, "__name__", code.co_name)), location_of(inner)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _why(exc: BaseException, frame: types.FrameType | None) -> str | None:
    """JAX's message of a refusal, or for what a static value's own ``__hash__`` or
    ``__eq__`` raised (the frame right after the call's, in the traceback), one that names
    its type as JAX's do; None for any other exception."""
    if isinstance(exc, ValueError):  # JAX's own refusals
        text = str(exc)
        if text.startswith((_UNHASHABLE, _UNEQUAL, _METADATA)):
            return text
    tb = exc.__traceback__  # the call's frame (or a counted call's wrapper), then the method's
    while tb is not None and tb.tb_next is not None and not (
            tb.tb_next.tb_frame.f_code.co_name in ("__hash__", "__eq__")
            and (tb.tb_frame is frame or tb.tb_frame.f_code.co_filename.startswith(OWN_DIR))):
        tb = tb.tb_next
    inner = tb.tb_next if tb is not None else None
    method = inner.tb_frame.f_code.co_name if inner is not None else None
    if inner is None or method not in ("__hash__", "__eq__"):
        return None
    owner = inner.tb_frame.f_locals.get(inner.tb_frame.f_code.co_varnames[0], _MISSING) \
        if inner.tb_frame.f_code.co_argcount else _MISSING
    kind = type(owner)
    return (f"{type(exc).__name__} raised by {kind.__qualname__}.{method} of a static argument "
            f"(<class '{kind.__module__}.{kind.__qualname__}'>): {exc}")


def _call_at(code: types.CodeType, offset: int) -> ast.Call | None:
    """The call expression whose instruction is at ``offset``, parsed from the source."""
    positions = list(code.co_positions())
    index = offset // 2
    if not 0 <= index < len(positions):
        return None
    line, end_line, column, end_column = positions[index]
    if None in (line, end_line, column, end_column):
        return None
    assert line is not None and end_line is not None
    lines = [text.encode() for text in linecache.getlines(code.co_filename)[line - 1:end_line]]
    if len(lines) != end_line - line + 1:
        return None
    if len(lines) == 1:
        source = lines[0][column:end_column]
    else:
        source = lines[0][column:] + b"".join(lines[1:-1]) + lines[-1][:end_column]
    try:
        node = ast.parse(source.decode(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return node if isinstance(node, ast.Call) else None


def _callee(node: ast.expr, frame: types.FrameType) -> tuple[Any, bool] | None:
    """(the object a call's function expression names, whether it is called as a method of
    an instance), looked up without running code; None for any other expression."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in scope:
                return scope[node.id], False
        return None
    if isinstance(node, ast.Attribute):
        base = _callee(node.value, frame)
        if base is None:
            return None
        owner = base[0]
        try:
            value = inspect.getattr_static(owner, node.attr)
        except AttributeError:
            return None
        in_instance = node.attr in getattr(owner, "__dict__", {})
        bound = (not isinstance(owner, (type, types.ModuleType)) and not in_instance
                 and hasattr(value, "__get__"))
        return value, bound
    return None


def _argument(info: Any, params: list[str], positional: list[Any], keywords: dict[str, Any],
              kind: str | None) -> tuple[str | None, Any]:
    """(the static argument, or the part of it, that JAX refused, that part's value or
    ``_MISSING``): among the call's static arguments, the one whose value is (or holds) a
    ``kind``; the only one when there is no telling."""
    nums = set(getattr(info, "static_argnums", ()) or ())
    names = set(getattr(info, "static_argnames", ()) or ())
    candidates: list[tuple[str, Any]] = []
    for position, value in enumerate(positional):
        if position in nums:
            name = params[position] if position < len(params) else f"args[{position}]"
            candidates.append((name, value))
    candidates += [(name, value) for name, value in keywords.items() if name in names]
    if not candidates:
        return None, _MISSING
    for name, value in candidates:
        if value is _MISSING or kind is None:
            continue
        part = _part(value, name, kind, _DEPTH)
        if part is not None:
            return part
    return (candidates[0][0] if len(candidates) == 1 else None), _MISSING


def _parameters(callee: Any) -> list[str]:
    fn = getattr(callee, "__wrapped__", None)
    try:
        signature = inspect.signature(fn) if fn is not None else None
    except (TypeError, ValueError):
        return []
    if signature is None:
        return []
    return [p.name for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _owner(func: ast.expr, frame: types.FrameType) -> Any:
    """The instance a method is called on (``model`` in ``model.apply(x)``)."""
    return _value(func.value, frame) if isinstance(func, ast.Attribute) else _MISSING


def _value(expr: ast.expr, frame: types.FrameType) -> Any:
    """The value of an argument expression that is a literal or a name: no code runs."""
    try:
        return ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    found = _callee(expr, frame) if isinstance(expr, (ast.Name, ast.Attribute)) else None
    return found[0] if found is not None else _MISSING


def _part(value: Any, path: str, kind: str, depth: int) -> tuple[str, Any] | None:
    """(``path``, ``value``), or the path and value of the part of ``value`` (inside tuples and
    NamedTuples) whose type JAX names (``list``, ``__main__.Bad``); for a tuple that JAX names
    (it names the whole static value), the part inside it whose type cannot be hashed at all
    (``cfg[1]``)."""
    klass = type(value)
    if kind in (klass.__qualname__, f"{klass.__module__}.{klass.__qualname__}"):
        return (_unhashable_part(value, path, depth) if isinstance(value, tuple) else None
                ) or (path, value)
    for inner, item in _items(value, path) if depth else ():
        found = _part(item, inner, kind, depth - 1)
        if found is not None:
            return found
    return None


def _unhashable_part(value: Any, path: str, depth: int) -> tuple[str, Any] | None:
    """The first part of nested tuples whose type has no ``__hash__`` (a list, a dict, a set,
    an ``eq=True`` dataclass), with its path."""
    if type(value).__hash__ is None:
        return path, value
    for inner, item in _items(value, path) if depth else ():
        found = _unhashable_part(item, inner, depth - 1)
        if found is not None:
            return found
    return None


def _items(value: Any, path: str) -> list[tuple[str, Any]]:
    """A tuple's items with their paths (``.steps`` for a NamedTuple's field, else ``[1]``)."""
    if not isinstance(value, tuple):
        return []
    fields = getattr(type(value), "_fields", None)
    return [(f"{path}.{fields[i]}" if fields and i < len(fields) else f"{path}[{i}]", item)
            for i, item in enumerate(tuple.__iter__(value))]
