"""Advice from recorded causes, with the compile count each fix would have given this run.

Pure: takes events and their causes, returns ``Suggestion``s. One suggestion per (user function,
cause code, argument), only for top-level events: a nested trace is a consequence of its
parent's, and JAX's or a library's internals are not the user's to fix. Predictions come from
``predict``: the distinct signatures the recorded calls would have had under the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter

from recompile_cli.analysis import predict
from recompile_cli.analysis.causes import Cause
from recompile_cli.session.model import (
    CauseCode,
    Event,
    FunctionKind,
    Owner,
    Signature,
    function_key,
)


class SuggestionCode(StrEnum):
    """The code of a suggestion that answers no cause (the others carry their ``CauseCode``)."""

    TRACE_ERROR = "trace_error"  # a trace raised, e.g. a concretization error

_CONCRETIZATION = ("ConcretizationTypeError", "TracerBoolConversionError",
                   "TracerIntegerConversionError", "TracerArrayConversionError")


@dataclass(frozen=True, slots=True)
class Suggestion:
    function: str
    code: CauseCode | SuggestionCode
    message: str
    predicted_compiles: int | None = None


@dataclass(frozen=True)
class _Group:
    name: str
    argument: str | None
    events: list[Event]
    causes: list[Cause]
    table: predict.Distinct  # the distinct ones of ``signatures``: what predictions run over
    others: list[str] = field(default_factory=list)  # other changes of the same events
    first_events: list[Event] = field(default_factory=list)  # every top-level trace, in order

    @property
    def signatures(self) -> list[Signature]:
        """Every successful top-level trace of the function, in order."""
        return list(map(_SIGNATURE, self.first_events))

    @property
    def distinct(self) -> list[Signature]:
        """``signatures`` with each distinct one once."""
        return self.table.signatures

    @property
    def compiles(self) -> int:
        return len(self.table.signatures)

    def also(self) -> str:
        """`` Together with: ...`` naming the other changes of the same events, if any."""
        if not self.others:
            return ""
        return (" Together with: " + "; ".join(self.others[:3])
                + (f" ({len(self.others)} in all)" if len(self.others) > 3 else "") + ".")

    def values(self) -> list[str]:
        seen: dict[str, None] = {}
        for cause in self.causes:
            for value in (cause.before, cause.after):
                if value is not None:
                    seen.setdefault(value)
        return list(seen)


@dataclass(slots=True)
class _Function:
    """One user function's top-level events, gathered in one pass over the session."""

    key: str
    traces: list[Event] = field(default_factory=list)  # successful traces, in order
    table: predict.Distinct = field(default_factory=predict.Distinct)  # their signatures
    started: bool = False  # a top-level event of it came already


_SIGNATURE = attrgetter("signature")


def suggest(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]]) -> Iterator[Suggestion]:
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
        group_key = (fn.key, cause.code, cause.argument)
        group = groups.get(group_key)
        if group is None:
            group = groups[group_key] = (fn, [], [], {})  # others: texts, in order
        group[1].append(event)
        group[2].append(cause)
        for other in found[1:]:
            if other.code == cause.code == CauseCode.SHAPE:  # the same axis, named already
                continue
            group[3].setdefault(_change_text(other))
    for (name, argument), event in errors.items():
        yield _trace_error(name, argument, event)
    for (_, code, argument), (fn, group_events, group_causes, others) in groups.items():
        rule = _RULES.get(code)
        if rule is not None:
            yield rule(_Group(group_events[0].function, argument, group_events, group_causes,
                              fn.table, list(others), fn.traces))


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


def _shape(g: _Group) -> Suggestion:
    path = g.argument or ""
    dims = g.table.varying_dims(path)
    if not dims:
        return Suggestion(g.name, CauseCode.SHAPE, f"re-compiled {_times(len(g.events))} for "
                          f"new shapes of `{path}` ({_listed(g.values())}). Pad inputs to a few "
                          "fixed sizes and mask the padding, so that one shape is reused."
                          + g.also())
    dim, values = max(dims.items(), key=lambda item: len(item[1]))
    axis = _same_axis(g.table, values)
    dim_text = ", ".join(str(d) for p, d in axis if p == path) or str(dim)
    where = f"`{path}` dim{'s' if ',' in dim_text else ''} {dim_text}"
    full = max(values)
    rows = predict.Axis(g.table, axis)
    sizes = g.table.each_signature(rows.column(path, dim))  # of every call, in order
    to_full = dict.fromkeys(values, full)  # each size -> its bucket, for one fix
    pad_all = rows.compiles_after(to_full)
    if len(values) == 2:
        small = min(values)
        overhead = predict.padding_overhead(sizes, to_full.__getitem__)
        pad = (f"pad to {full} (and mask) so that one shape is reused: {g.compiles} compiles "
               f"-> {pad_all} (pads {overhead}% on average)")
        # The call history of the argument: a last batch follows several calls of the full
        # size from the same call site; two datasets come from two call sites, or early.
        at, sites = _history(g, path, dim, small, full)
        last_batch = (sizes[-1] == small and sizes.count(small) == 1
                      and (at >= 2 if at is not None else len(sites) == 1))
        if last_batch:
            calls = f" (call {at + 1}, after {at} calls of {full})" if at is not None else ""
            return Suggestion(g.name, CauseCode.SHAPE, (
                f"the last batch is smaller: {where} is {full}, then {small} once at the "
                f"end{calls}. Pad the last batch to {full} (and mask it) or drop it "
                f"(drop_last): {g.compiles} compiles -> {pad_all}." + g.also()), pad_all)
        # Two datasets only on evidence: each size from its own line of code. Counted calls
        # (a spec, --count-calls) show a sequence of calls of one function instead.
        if (sizes.count(small) == 1 and sizes.count(full) == 1 and at is None
                and len(sites) >= 2):
            last = (f" (If {small} is instead the last, smaller batch of a loop, pad it or drop "
                    "it: drop_last.)" if sizes[-1] == small else "")
            return Suggestion(g.name, CauseCode.SHAPE, (
                f"two datasets of different sizes: {where} is {sizes[0]}, then {sizes[1]}; "
                "each size compiles once, which is expected (e.g. a train and a test set). To "
                f"share one compile, {pad}.{last}" + g.also()), pad_all)
        return Suggestion(g.name, CauseCode.SHAPE, (
            f"{where} took the values {_listed([str(v) for v in values])}: {pad}."
            + g.also()), pad_all)
    options: list[tuple[int, str]] = []
    to_pow2 = predict.powers_of_two(values)
    pow2 = rows.compiles_after(to_pow2)
    buckets = sorted(set(to_pow2.values()))
    if pow2 < g.compiles and buckets[-1] <= 2 * full:
        overhead = predict.padding_overhead(sizes, to_pow2.__getitem__)
        options.append((pow2, f"{pow2} with power-of-two buckets of {where} "
                              f"({_listed([str(b) for b in buckets], 8)}; pads {overhead}% on "
                              "average)"))
    width = predict.multiple_for(values)
    to_multiple = predict.multiples_of(width, values)
    multiples = rows.compiles_after(to_multiple)
    if multiples < g.compiles and width > 1 and to_multiple[full] <= 2 * full:
        overhead = predict.padding_overhead(sizes, to_multiple.__getitem__)
        options.append((multiples, f"{multiples} with multiples of {width} (pads {overhead}% "
                                   "on average)"))
    if not options:
        overhead = predict.padding_overhead(sizes, to_full.__getitem__)
        return Suggestion(g.name, CauseCode.SHAPE, (
            f"{where} took {len(values)} values ({min(values)}..{full}): pad to {full} (and "
            f"mask) so that one shape is reused: {g.compiles} compiles -> {pad_all} (pads "
            f"{overhead}% on average)." + g.also()), pad_all)
    return Suggestion(g.name, CauseCode.SHAPE, (
        f"{where} took {len(values)} values ({min(values)}..{full}): {g.compiles} compiles -> "
        + ", or ".join(text for _, text in options)
        + ". Pad along that dimension to the bucket size and mask the padding." + g.also()),
        options[0][0])


def _history(g: _Group, path: str, dim: int, small: int, full: int
             ) -> tuple[int | None, set[str | None]]:
    """(the call, 0-based where counted, at which ``small`` first reached ``path`` dim; the
    call sites of the events that brought either size)."""
    at: int | None = None
    sites: set[str | None] = set()
    found = False
    for event in g.first_events:
        leaf = event.signature.leaves.get(path) if event.signature else None
        if leaf is None or dim >= len(leaf.shape) or leaf.shape[dim] not in (small, full):
            continue
        sites.add(event.call_site)
        if leaf.shape[dim] == small and not found:
            at, found = event.call_index, True
    return at, sites


def _same_axis(table: predict.Distinct, values: list[int]) -> list[tuple[str, int]]:
    """Every (path, dim) that varies over the same sizes: one axis, e.g. the batch."""
    wanted = set(values)
    return [(p, d) for p in table.paths for d, vs in table.varying_dims(p).items()
            if set(vs) == wanted]


def _dtype(g: _Group) -> Suggestion:
    path = g.argument or ""
    first = g.signatures[0].leaves.get(path) if g.signatures else None
    dtype = first.dtype if first else "float32"
    after = (predict.compiles_after(g.distinct, predict.one_dtype(path, first.dtype))
             if first else None)
    return Suggestion(g.name, CauseCode.DTYPE, (
        f"`{g.argument}` reached {g.name} with different dtypes ({_listed(g.values())}). Cast "
        f"it once before the call, e.g. `{g.argument}.astype(jnp.{dtype})` (the dtype seen first)"
        + (f": {g.compiles} compiles -> {after}." if after is not None else ".")), after)


def _weak_type(g: _Group) -> Suggestion:
    after = predict.compiles_after(g.distinct, predict.strong_type(g.argument or ""))
    return Suggestion(g.name, CauseCode.WEAK_TYPE, (
        f"`{g.argument}` was passed to {g.name} both as a Python scalar (weakly typed) and as "
        f"a typed array ({_listed(g.values())}). Convert it the same way at every call site, "
        f"`jnp.asarray({g.argument}, dtype=...)`: {g.compiles} compiles -> {after}."), after)


def _static(g: _Group) -> Suggestion:
    values = g.values()
    after = predict.compiles_after(g.distinct, predict.without_static(g.argument or ""))
    fix = (f"{g.compiles} compiles -> {after}; or narrow the values it can take."
           if after < g.compiles else
           "that alone would not reduce the compiles, since something else changed in the "
           "same calls.")
    return Suggestion(g.name, CauseCode.STATIC_VALUE, (
        f"static argument `{g.argument}` of {g.name} took {len(values)} values "
        f"({_listed(values)}); each new value compiles again. If it changes often, pass it as "
        f"a traced array instead (branch with `jax.lax.cond` / `jnp.where`): {fix}"
        + g.also()), after)


def _tree(g: _Group) -> Suggestion:
    if any(c.detail.startswith("pytree node data changed") for c in g.causes):
        return Suggestion(g.name, CauseCode.TREE_STRUCTURE, (
            f"`{g.argument}` took the values {_listed(g.values(), 3)} between calls of "
            f"{g.name}: a static field or attribute of the argument (e.g. a model switched "
            "between train and eval mode) is part of the cache key, so each value compiles "
            "once. Expected if you switch modes on purpose; otherwise keep it fixed."
            + g.also()))
    return Suggestion(g.name, CauseCode.TREE_STRUCTURE, (
        f"the pytree structure of `{g.argument}` changed between calls of {g.name} "
        f"({_listed(g.values(), 3)}). Keep containers the same (same dict keys, same list "
        "lengths); pad or mask instead of adding or removing entries."))


def _passing(g: _Group) -> Suggestion:
    after = predict.compiles_after(g.distinct, predict.same_passing)
    how = f" (e.g. always `{g.argument}=...` by keyword)" if g.argument else ""
    return Suggestion(g.name, CauseCode.ARG_PASSING, (
        f"called with its arguments passed in different ways "
        f"({_listed(g.values(), 2)}); JAX keys its cache on how arguments are passed. Pass "
        f"them the same way in every call{how}: {g.compiles} compiles -> {after}."), after)


_NEW_OBJECT = {
    FunctionKind.LAMBDA:
        "the lambda defined at {defined_at} is created anew for every call; define it once, "
        "outside the loop (or use a named module-level function)",
    FunctionKind.CLOSURE:
        "{name} is defined inside another function (at {defined_at}) and a new one is made on "
        "every call; build it once, or move it to module level and pass what it captures as "
        "arguments",
    FunctionKind.PARTIAL:
        "a new functools.partial of {name} is made before every call (called at {call_site}); "
        "create it once outside the loop, or pass the bound values as (static) arguments",
    FunctionKind.BOUND_METHOD:
        "jax.jit(obj.{name}) wraps a new bound method every time (called at {call_site}); jit "
        "it once outside the loop, or jit the plain function and pass the object's data as "
        "arguments",
    FunctionKind.FUNCTION:
        "a new function object is created for every call (called at {call_site}); hoist the "
        "`jax.jit(...)` out of the loop",
}


def _new_function(g: _Group) -> Suggestion:
    event = g.events[0]
    kind = event.signature.function_kind if event.signature else FunctionKind.FUNCTION
    text = _NEW_OBJECT[kind].format(
        name=g.name, defined_at=event.defined_at, call_site=event.call_site)
    after = predict.compiles_after(g.distinct, predict.same_function)
    return Suggestion(g.name, CauseCode.NEW_FUNCTION, (
        f"traced {_times(len(g.events))} more as a new function object: {text}: "
        f"{g.compiles} compiles -> {after}."), after)


def _context(g: _Group) -> Suggestion:
    return Suggestion(g.name, CauseCode.TRACING_CONTEXT, (
        f"the tracing context `{g.argument}` changed between calls of {g.name} "
        f"({_listed(g.values(), 2)}). Set such config flags and context managers once, outside "
        "the loop."))


def _sharding(g: _Group) -> Suggestion:
    what = f"`{g.argument}`" if g.argument else "its inputs"
    return Suggestion(g.name, CauseCode.SHARDING, (
        f"compiled again without a re-trace because {what} arrived with a "
        "different placement or donation (e.g. committed to a device by `jax.device_put`). "
        "Place inputs the same way at every call."))


def _change_text(cause: Cause) -> str:
    """``shape of `x` (f32[3] -> f32[4])``: one change, for "Together with"."""
    what = f"{cause.code} of `{cause.argument}`" if cause.argument else cause.code
    if cause.before is not None and cause.after is not None:
        what += f" ({_short(cause.before)} -> {_short(cause.after)})"
    return what


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _listed(values: list[str], limit: int = 5) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


_RULES: dict[CauseCode, Callable[[_Group], Suggestion]] = {
    CauseCode.SHAPE: _shape, CauseCode.DTYPE: _dtype, CauseCode.WEAK_TYPE: _weak_type,
    CauseCode.STATIC_VALUE: _static, CauseCode.TREE_STRUCTURE: _tree,
    CauseCode.ARG_PASSING: _passing, CauseCode.NEW_FUNCTION: _new_function,
    CauseCode.TRACING_CONTEXT: _context, CauseCode.SHARDING: _sharding}
