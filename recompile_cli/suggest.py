"""Advice from recorded causes: one suggestion per (user function, cause code, argument).

Pure: takes events and their causes, returns ``Suggestion``s with the fix and the evidence.
Only functions the user owns get suggestions; JAX's and libraries' internals are not theirs
to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from .causes import (ARG_PASSING, DTYPE, NEW_FUNCTION, SHAPE, SHARDING, STATIC_VALUE,
                     TRACING_CONTEXT, TREE_STRUCTURE, WEAK_TYPE, Cause)
from .model import Event

TRACE_ERROR = "trace_error"
_CONCRETIZATION = ("ConcretizationTypeError", "TracerBoolConversionError",
                   "TracerIntegerConversionError", "TracerArrayConversionError")


@dataclass(frozen=True, slots=True)
class Suggestion:
    function: str
    code: str
    message: str
    predicted_compiles: int | None = None


def suggest(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]]) -> Iterator[Suggestion]:
    groups: dict[tuple[str, str, str | None], list[tuple[Event, Cause]]] = {}
    errors: dict[tuple[str, str | None], Event] = {}
    for event in events:
        if event.owner != "user":
            continue
        if event.error is not None:
            errors.setdefault((event.function, event.error.argument), event)
            continue
        cause = causes[event.seq][0]
        groups.setdefault((event.function, cause.code, cause.argument), []).append((event, cause))
    for (name, argument), event in errors.items():
        yield _trace_error(name, argument, event)
    for (name, code, argument), items in groups.items():
        message = _MESSAGES.get(code)
        if message is not None:
            yield Suggestion(name, code, message(name, argument, items))


def _trace_error(name: str, argument: str | None, event: Event) -> Suggestion:
    error = event.error
    assert error is not None
    if error.type in _CONCRETIZATION and argument:
        message = (f"{name} raised {error.type} while tracing: the value of `{argument}` "
                   "is used in Python control flow. Mark it static "
                   f"(`static_argnames=('{argument}',)`) if it takes few values, or keep it "
                   "traced and branch with `jax.lax.cond` / `jnp.where`.")
    else:
        message = f"{name} raised {error.type} while tracing: {error.message}"
    return Suggestion(name, TRACE_ERROR, message)


def _values(items: list[tuple[Event, Cause]]) -> list[str]:
    seen: list[str] = []
    for _, cause in items:
        for value in (cause.before, cause.after):
            if value is not None and value not in seen:
                seen.append(value)
    return seen


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _listed(values: list[str], limit: int = 5) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _shape(name, argument, items):
    values = _values(items)
    return (f"{name} was re-compiled {_times(len(items))} for new shapes of `{argument}` "
            f"({_listed(values)}). Pad inputs to a few fixed sizes (buckets) and mask the "
            "padding, or drop/pad a last partial batch, so that one shape is reused.")


def _dtype(name, argument, items):
    return (f"`{argument}` reached {name} with different dtypes ({_listed(_values(items))}). "
            f"Cast it once before the call, e.g. `{argument}.astype(jnp.float32)`.")


def _weak_type(name, argument, items):
    return (f"`{argument}` was passed to {name} both as a Python scalar (weakly typed) and as "
            f"a typed array ({_listed(_values(items))}). Convert it the same way at every call "
            f"site: `jnp.asarray({argument}, dtype=...)`.")


def _static(name, argument, items):
    values = _values(items)
    return (f"static argument `{argument}` of {name} took {len(values)} values "
            f"({_listed(values)}); each new value compiles again. If it changes often, pass it "
            "as a traced array instead (branch with `jax.lax.cond` / `jnp.where`), or narrow "
            "the values it can take.")


def _tree(name, argument, items):
    return (f"the pytree structure of `{argument}` changed between calls of {name} "
            f"({_listed(_values(items), 3)}). Keep containers the same (same dict keys, same "
            "list lengths); pad or mask instead of adding or removing entries.")


def _passing(name, argument, items):
    how = f" (e.g. always `{argument}=...` by keyword)" if argument else ""
    return (f"{name} was called with its arguments passed in different ways "
            f"({_listed(_values(items), 2)}); JAX keys its cache on how arguments are passed. "
            f"Pass them the same way in every call{how}.")


def _new_function(name, argument, items):
    sites = sorted({e.call_site for e, _ in items if e.call_site})
    at = f" at {sites[0]}" if sites else ""
    return (f"{name} was traced {_times(len(items))} more as a new function object each "
            f"time{at}. Create it once and reuse it: hoist the `jax.jit(...)`, the lambda or "
            "the `functools.partial` out of the loop (for methods, jit the function once and "
            "pass `self`'s data as arguments).")


def _context(name, argument, items):
    return (f"the tracing context `{argument}` changed between calls of {name} "
            f"({_listed(_values(items), 2)}). Set such config flags and context managers once, "
            "outside the loop.")


def _sharding(name, argument, items):
    what = f"`{argument}`" if argument else "its inputs"
    return (f"{name} was compiled again without a re-trace because {what} arrived with a "
            "different placement or donation (e.g. committed to a device by "
            "`jax.device_put`). Place inputs the same way at every call.")


_MESSAGES = {SHAPE: _shape, DTYPE: _dtype, WEAK_TYPE: _weak_type, STATIC_VALUE: _static,
             TREE_STRUCTURE: _tree, ARG_PASSING: _passing, NEW_FUNCTION: _new_function,
             TRACING_CONTEXT: _context, SHARDING: _sharding}
