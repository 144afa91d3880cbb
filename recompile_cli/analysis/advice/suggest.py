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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from recompile_cli.analysis.advice import predict
from recompile_cli.analysis.advice.groups import Group, change_text
from recompile_cli.analysis.advice.rules import PER_FUNCTION, advise
from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.shorten import shown
from recompile_cli.session.model import CauseCode, Event, Owner, TraceError, function_key


class SuggestionCode(StrEnum):
    """The code of a suggestion that answers no cause (the others carry their ``CauseCode``)."""

    TRACE_ERROR = "trace_error"  # a trace raised, e.g. a concretization error
    UNHASHABLE_STATIC = "unhashable_static"  # JAX refused a static argument it cannot hash
    REFUSED_CALL = "refused_call"  # JAX refused a call of the function: a static argument
    EAGER_COMPILES = "eager_compiles"  # code not yours compiled again and again at a line


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
    errors, found = gather(events, causes, calls)
    unhashable = _unhashable_static(raised)
    if unhashable is not None and not any(e.error is not None and e.error.refused
                                          for e in errors.values()):
        yield unhashable  # JAX refused a call the recording could not pin to a function
    for (name, argument, _), event in errors.items():
        yield _trace_error(name, argument, event)
    for group in found:
        advice = advise(group)
        if advice is None or (advice.predicted_compiles is not None
                              and advice.predicted_compiles >= group.compiles):
            continue  # a fix that would not lower the count is no advice
        yield Suggestion(group.name, group.code, advice.message, advice.predicted_compiles)


def gather(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]],
           calls: dict[str, int] | None = None
           ) -> tuple[dict[tuple[str, str | None, str], Event], list[Group]]:
    """(the first failed trace or refused call per function, argument and (for a refused
    call) why, the ``Group``s to advise on), in one pass over the events."""
    functions: dict[tuple[str, str | None], _Function] = {}
    by_key: dict[str, _Function] = {}  # two (name, defined_at) may share a function_key
    groups: dict[tuple[str, CauseCode, str | None], tuple[
        _Function, list[Event], list[Cause], dict[tuple[CauseCode, str | None], str],
        list[tuple[Cause, ...]]]] = {}
    errors: dict[tuple[str, str | None, str], Event] = {}
    for event in events:
        if event.owner != Owner.USER or event.depth != 0:
            continue
        where = (event.function, event.defined_at)
        fn = functions.get(where)
        if fn is None:
            key = function_key(*where)
            fn = functions[where] = by_key.setdefault(key, _Function(key))
        if event.error is not None:
            kind = refusal_kind(event.error) if event.error.refused else ""
            errors.setdefault((event.function, event.error.argument, kind), event)
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
            group = groups[group_key] = (fn, [], [], {}, [])  # others: (code, argument) -> text
        group[1].append(event)
        group[2].append(cause)
        group[4].append(found)
        for other in found[1:]:
            if other.code == cause.code and (per_function or other.argument == cause.argument):
                continue  # advised together
            group[3].setdefault((other.code, other.argument), change_text(other))
    return errors, [
        Group(group_events[0].function, fn.key, code, argument, group_events, group_causes,
              fn.table, fn.traces, _unadvised(others, fn.key, groups), (calls or {}).get(fn.key),
              changes)
        for (_, code, argument), (fn, group_events, group_causes, others, changes)
        in groups.items()]


def _unadvised(others: dict[tuple[CauseCode, str | None], str], key: str,
               groups: Mapping[tuple[str, CauseCode, str | None], object]
               ) -> dict[tuple[CauseCode, str | None], str]:
    """The other changes of a group's events that no group of the same function is about: a
    change with advice of its own is named there, not appended here."""
    return {(code, argument): text for (code, argument), text in others.items()
            if (key, code, argument) not in groups and (key, code, None) not in groups}


def _trace_error(name: str, argument: str | None, event: Event) -> Suggestion:
    error = event.error
    assert error is not None
    if error.refused:
        return Suggestion(name, SuggestionCode.REFUSED_CALL, _refused(error))
    if error.type in _CONCRETIZATION and argument:
        message = (f"raised {error.type} while tracing: the value of `{argument}` "
                   "is used in Python control flow. Mark it static "
                   f"(`static_argnames=('{argument}',)`) if it takes few values, or keep it "
                   "traced and branch with `jax.lax.cond` / `jnp.where`.")
    else:
        message = f"raised {error.type} while tracing: {error.message}"
    return Suggestion(name, SuggestionCode.TRACE_ERROR, message)


_HASHABLE_FIX = ("JAX hashes static arguments to find the compiled program: pass a hashable "
                 "value instead (a tuple for a list, a frozen dataclass or NamedTuple for a "
                 "dict or a mutable object)")
_UNEQUAL = re.compile(r"comparable using __eq__.*?types <class '([^']+)'>", re.DOTALL)
_RAISED_BY = re.compile(r"(\w+) raised by ([\w.]+)\.(__hash__|__eq__) of a static argument")


def refusal_kind(error: TraceError) -> str:
    """Why JAX refused a call: ``unhashable`` (a value it cannot hash), ``eq`` (an ``__eq__``
    that raised when JAX compared two values), ``hash`` (the value's ``__hash__`` raised) or
    ``metadata`` (the ``__eq__`` of a pytree node's static data raised)."""
    raised_by = _RAISED_BY.search(error.message)
    if raised_by is not None:
        return "eq" if raised_by.group(3) == "__eq__" else "hash"
    if error.message.startswith("Exception raised while checking equality of metadata"):
        return "metadata"
    return "eq" if _UNEQUAL.search(error.message) else "unhashable"


def _refused(error: TraceError) -> str:
    """The advice for a call JAX refused, by why (``refusal_kind``)."""
    what = f"static argument `{error.argument}`" if error.argument else "a static argument"
    kind = refusal_kind(error)
    if kind == "metadata":
        return ("JAX refused a call: comparing the static data of a pytree node in its "
                "arguments (a meta field, a `pytree_node=False` or `static=True` field, aux "
                "data) with an earlier call's raised in that value's `__eq__`. JAX compares "
                "static data with `==`: give its class an `__eq__` that returns a bool for any "
                "other object, or keep such a value out of the node's static data.")
    raised_by = _RAISED_BY.search(error.message)
    if kind == "hash" and raised_by is not None:
        return (f"JAX refused a call: `{raised_by.group(2)}.__hash__` of {what} raised "
                f"{raised_by.group(1)}. {_HASHABLE_FIX}, or give the class a `__hash__` that "
                "does not raise.")
    named = _UNEQUAL.search(error.message) if kind == "eq" else _UNHASHABLE.search(
        error.message + ". The error was")
    type_name = error.value_type or (raised_by.group(2) if raised_by is not None else
                                     named.group(1).rpartition(".")[2] if named is not None
                                     else None)
    if kind == "eq":
        of = f" (a `{type_name}`)" if type_name else ""
        return (f"JAX refused a call: comparing {what}{of} with an earlier value raised in its "
                "`__eq__`. JAX compares static arguments with `==`: give the class an `__eq__` "
                "that returns a bool for any other object (and a `__hash__` that agrees with "
                "it), or pass a value of a type that has one.")
    value = error.value or (named.group(2) if named is not None else None)
    held = f" a `{type_name}`" + (f" (`{shown(value, 60)}`)" if value else "") if type_name \
        else " a value"
    return f"JAX refused a call: {what} is or holds{held}, which it cannot hash. {_HASHABLE_FIX}."


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
