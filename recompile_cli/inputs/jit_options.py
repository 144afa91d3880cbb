"""Jit options (``static_argnames``, ``static_argnums``, ``donate_argnames``,
``donate_argnums``): one parser for specs and budget files, and a check against the target's
signature that the CLI runs before calling anything.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from recompile_cli.errors import JitOptionError
from recompile_cli.inputs.fields import Invalid, Where

JIT_OPTIONS = ("static_argnames", "static_argnums", "donate_argnames", "donate_argnums")


def parse_jit_options(raw: Any, where: Where = (),
                      allowed: tuple[str, ...] = JIT_OPTIONS) -> dict[str, tuple[Any, ...]]:
    """Validate a mapping of jit options into ``{option: tuple of values}``.

    Each value is one item or a list: argument names (identifiers) for ``*_argnames``,
    integers for ``*_argnums``. Raises ``Invalid`` naming the field under ``where``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise Invalid(where, f"must be a mapping with any of {', '.join(allowed)}")
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in raw.items():
        if key not in allowed:
            raise Invalid((*where, key), f"unknown field {key!r}; allowed here: "
                                          + ", ".join(allowed))
        items = value if isinstance(value, list) else [value]
        if key.endswith("names"):
            for i, item in enumerate(items):
                if not isinstance(item, str) or not item.isidentifier():
                    at = (*where, key, i) if isinstance(value, list) else (*where, key)
                    raise Invalid(at, "must be an argument name or a list of them (e.g. "
                                      f"[mode, n]), got {item!r}")
        else:
            for i, item in enumerate(items):
                if not isinstance(item, int) or isinstance(item, bool):
                    at = (*where, key, i) if isinstance(value, list) else (*where, key)
                    raise Invalid(at, "must be an int (argument position) or a list of them "
                                      f"(e.g. [0, 2]), got {item!r}")
        out[key] = tuple(items)
    return out


def check_static_args(fn: Callable[..., Any], jit_options: dict[str, Any],
                      source: str = "") -> None:
    """Raise ``JitOptionError`` if a ``*_argnames`` is not a parameter of ``fn`` or a
    ``*_argnums`` is out of range of its positional parameters.

    Functions without an inspectable signature (some builtins) are not checked; ``**kwargs``
    accepts any name and ``*args`` any position, as ``jax.jit`` does. ``source`` says where the
    options came from (e.g. "spec.yaml" or "--static-argnames"), for the message."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = list(signature.parameters.values())
    kinds = {p.kind for p in params}
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    origin = f" (from {source})" if source else ""
    shown = f"{name}{signature}"
    for option, values in jit_options.items():
        if option not in JIT_OPTIONS:
            raise JitOptionError(f"Unknown jit option {option!r}{origin}; use "
                                 f"{', '.join(JIT_OPTIONS)}.")
        items = values if isinstance(values, (list, tuple)) else (values,)
        if option.endswith("names"):
            if inspect.Parameter.VAR_KEYWORD in kinds:
                continue
            for item in items:
                if item not in by_name:
                    hint = (f"its parameters are {', '.join(by_name)}" if by_name
                            else "it takes no parameter by name")
                    raise JitOptionError(
                        f"{option} names {item!r}{origin}, but {shown} has no such parameter "
                        f"({hint}). Fix the name, or use {option[:-5]}nums for a "
                        "positional-only parameter.")
        else:
            if inspect.Parameter.VAR_POSITIONAL in kinds:
                continue
            for item in items:
                if not isinstance(item, int) or not -len(positional) <= item < len(positional):
                    count = len(positional)
                    allowed = (f"positions run from 0 to {count - 1} (or -{count} to -1)"
                               if count else "no position is valid")
                    raise JitOptionError(
                        f"{option} has {item!r}{origin}, but {shown} takes {count} positional "
                        f"parameter(s), so {allowed}. Fix the position, or use "
                        f"{option[:-4]}names.")
