"""Advice from recorded causes, with the compile count each fix would have given this run.

Pure: takes events and their causes, returns ``Suggestion``s. Gathers the user's top-level
re-compilations into ``Group``s, one per (user function, cause code, argument), or per
(function, code) for the codes of ``rules.PER_FUNCTION``, and asks ``rules`` for the advice
that is true of each (none where no rule's preconditions hold). A nested trace is a
consequence of its parent's, and JAX's or a library's internals are not the user's to fix.
Advice on a trace that raised is made here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from recompile_cli.analysis.advice import predict
from recompile_cli.analysis.advice.groups import Group
from recompile_cli.analysis.advice.rules import PER_FUNCTION, advise
from recompile_cli.analysis.cause import Cause
from recompile_cli.analysis.shorten import shown
from recompile_cli.session.model import CauseCode, Event, Owner, function_key


class SuggestionCode(StrEnum):
    """The code of a suggestion that answers no cause (the others carry their ``CauseCode``)."""

    TRACE_ERROR = "trace_error"  # a trace raised, e.g. a concretization error
    UNHASHABLE_STATIC = "unhashable_static"  # JAX refused a static argument it cannot hash


_CONCRETIZATION = ("ConcretizationTypeError", "TracerBoolConversionError",
                   "TracerIntegerConversionError", "TracerArrayConversionError")


@dataclass(frozen=True, slots=True)
class Suggestion:
    function: str
    code: CauseCode | SuggestionCode
    message: str
    predicted_compiles: int | None = None


@dataclass(slots=True)
class _Function:
    """One user function's top-level events, gathered in one pass over the session."""

    key: str
    traces: list[Event] = field(default_factory=list)  # successful traces, in order
    table: predict.Distinct = field(default_factory=predict.Distinct)  # their signatures
    started: bool = False  # a top-level event of it came already


def suggest(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]],
            calls: dict[str, int] | None = None, raised: str | None = None
            ) -> Iterator[Suggestion]:
    """The advice for the user's top-level re-compilations and failed traces, and for what the
    target ``raised`` where JAX refused it; ``calls`` (function key -> calls, where counted)
    weighs what padding costs."""
    unhashable = _unhashable_static(raised)
    if unhashable is not None:
        yield unhashable
    errors, found = gather(events, causes, calls)
    for (name, argument), event in errors.items():
        yield _trace_error(name, argument, event)
    for group in found:
        advice = advise(group)
        if advice is not None:
            yield Suggestion(group.name, group.code, advice.message, advice.predicted_compiles)


def gather(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]],
           calls: dict[str, int] | None = None
           ) -> tuple[dict[tuple[str, str | None], Event], list[Group]]:
    """(the first failed trace per function and argument, the ``Group``s to advise on), in one
    pass over the events."""
    functions: dict[tuple[str, str | None], _Function] = {}
    by_key: dict[str, _Function] = {}  # two (name, defined_at) may share a function_key
    groups: dict[tuple[str, CauseCode, str | None], tuple[_Function, list[Event], list[Cause],
                                                     dict[str, None]]] = {}
    errors: dict[tuple[str, str | None], Event] = {}
    for event in events:
        if event.owner != Owner.USER or event.depth != 0:
            continue
        where = (event.function, event.defined_at)
        fn = functions.get(where)
        if fn is None:
            key = function_key(*where)
            fn = functions[where] = by_key.setdefault(key, _Function(key))
        if event.error is not None:
            errors.setdefault((event.function, event.error.argument), event)
            continue
        if event.traced and event.signature is not None:
            fn.traces.append(event)
            fn.table.add(event.signature)  # in the order recorded: faster than per function
        if not fn.started:  # its first compile is no re-compilation, even when
            fn.started = True  # a nested trace of it came first
            if event.compiled or event.traced:
                continue
        found = causes[event.seq]
        cause = found[0]
        per_function = cause.code in PER_FUNCTION
        group_key = (fn.key, cause.code, None if per_function else cause.argument)
        group = groups.get(group_key)
        if group is None:
            group = groups[group_key] = (fn, [], [], {})  # others: texts, in order
        group[1].append(event)
        group[2].append(cause)
        for other in found[1:]:
            if other.code == cause.code and (per_function or cause.code == CauseCode.SHAPE):
                continue  # advised together, or the same axis: named already
            group[3].setdefault(_change_text(other))
    return errors, [
        Group(group_events[0].function, fn.key, code, argument, group_events, group_causes,
              fn.table, fn.traces, list(others), (calls or {}).get(fn.key))
        for (_, code, argument), (fn, group_events, group_causes, others) in groups.items()]


def _trace_error(name: str, argument: str | None, event: Event) -> Suggestion:
    error = event.error
    assert error is not None
    if error.type in _CONCRETIZATION and argument:
        message = (f"raised {error.type} while tracing: the value of `{argument}` "
                   "is used in Python control flow. Mark it static "
                   f"(`static_argnames=('{argument}',)`) if it takes few values, or keep it "
                   "traced and branch with `jax.lax.cond` / `jnp.where`.")
    else:
        message = f"raised {error.type} while tracing: {error.message}"
    return Suggestion(name, SuggestionCode.TRACE_ERROR, message)


def _change_text(cause: Cause) -> str:
    """``shape of `x` (f32[3] -> f32[4])``: one change, for "Together with"."""
    what = f"{cause.code} of `{cause.argument}`" if cause.argument else cause.code
    if cause.before is not None and cause.after is not None:
        what += f" ({_short(cause.before)} -> {_short(cause.after)})"
    return what


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_UNHASHABLE = re.compile(r"Non-hashable static arguments are not supported\. An error occurred "
                         r"while trying to hash an object of type <class '([^']+)'>, (.*?)\. "
                         r"The error was", re.DOTALL)


def _unhashable_static(raised: str | None) -> Suggestion | None:
    """Advice for JAX's refusal of an unhashable static argument. JAX raises it in C++ before
    any hook runs, and its message names the value and its type, not the argument."""
    found = _UNHASHABLE.search(raised or "")
    if found is None:
        return None
    kind, value = found.group(1), shown(found.group(2), 60)
    return Suggestion("(a jitted call)", SuggestionCode.UNHASHABLE_STATIC, (
        f"a static argument is not hashable, or holds a value that is not: a `{kind}` "
        f"(`{value}`). JAX hashes static "
        "arguments to find the compiled program: pass a hashable value instead (a tuple for a "
        "list, a frozen dataclass or NamedTuple for a dict or a mutable object). JAX's error "
        "names the value, not the argument."))
