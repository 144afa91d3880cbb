"""Advice from recorded causes, with the compile count each fix would have given this run.

Pure: takes events and their causes, returns ``Suggestion``s. One suggestion per (user function,
cause code, argument), only for top-level events: a nested trace is a consequence of its
parent's, and JAX's or a library's internals are not the user's to fix. Predictions come from
``predict``: the distinct signatures the recorded calls would have had under the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from recompile_cli.analysis import predict
from recompile_cli.analysis.causes import (
    ARG_PASSING,
    DTYPE,
    NEW_FUNCTION,
    SHAPE,
    SHARDING,
    STATIC_VALUE,
    TRACING_CONTEXT,
    TREE_STRUCTURE,
    WEAK_TYPE,
    Cause,
)
from recompile_cli.session.model import Event, Signature, function_key

TRACE_ERROR = "trace_error"
_CONCRETIZATION = ("ConcretizationTypeError", "TracerBoolConversionError",
                   "TracerIntegerConversionError", "TracerArrayConversionError")


@dataclass(frozen=True, slots=True)
class Suggestion:
    function: str
    code: str
    message: str
    predicted_compiles: int | None = None


@dataclass(frozen=True)
class _Group:
    name: str
    argument: str | None
    events: list[Event]
    causes: list[Cause]
    signatures: list[Signature]  # every successful top-level trace of the function, in order
    others: list[str] = field(default_factory=list)  # other changes of the same events
    first_events: list[Event] = field(default_factory=list)  # every top-level trace, in order
    unique: dict[tuple[Hashable, ...], Signature] | None = None  # predict.distinct(signatures)

    @cached_property
    def _unique(self) -> dict[tuple[Hashable, ...], Signature]:
        return self.unique if self.unique is not None else predict.distinct(self.signatures)

    @cached_property
    def distinct(self) -> list[Signature]:
        """``signatures`` with each distinct one once: what predictions run over."""
        return list(self._unique.values())

    @cached_property
    def keys(self) -> list[tuple[Hashable, ...]]:
        """The ``predict.signature_key`` of each of ``distinct``."""
        return list(self._unique)

    @cached_property
    def compiles(self) -> int:
        return len(self.distinct)

    def also(self) -> str:
        """`` Together with: ...`` naming the other changes of the same events, if any."""
        if not self.others:
            return ""
        return (" Together with: " + "; ".join(self.others[:3])
                + (f" ({len(self.others)} in all)" if len(self.others) > 3 else "") + ".")

    def values(self) -> list[str]:
        seen: list[str] = []
        for cause in self.causes:
            for value in (cause.before, cause.after):
                if value is not None and value not in seen:
                    seen.append(value)
        return seen


def suggest(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]]) -> Iterator[Suggestion]:
    top = [e for e in events if e.owner == "user" and e.depth == 0]
    signatures: dict[str, list[Signature]] = {}
    groups: dict[tuple[str, str, str | None], tuple[list[Event], list[Cause]]] = {}
    others: dict[tuple[str, str, str | None], list[str]] = {}
    traced_events: dict[str, list[Event]] = {}
    compiled_once: set[str] = set()
    errors: dict[tuple[str, str | None], Event] = {}
    for event in top:
        key = function_key(event.function, event.defined_at)
        if event.error is not None:
            errors.setdefault((event.function, event.error.argument), event)
            continue
        if event.traced and event.signature is not None:
            signatures.setdefault(key, []).append(event.signature)
            traced_events.setdefault(key, []).append(event)
        if key not in compiled_once:  # its first compile is no re-compilation, even when
            compiled_once.add(key)    # a nested trace of it came first
            if event.compiled or event.traced:
                continue
        cause, *rest = causes[event.seq]
        found = groups.setdefault((key, cause.code, cause.argument), ([], []))
        found[0].append(event)
        found[1].append(cause)
        also = others.setdefault((key, cause.code, cause.argument), [])
        for other in rest:
            if other.code == cause.code == SHAPE:  # the same axis, named already
                continue
            text = _change_text(other)
            if text not in also:
                also.append(text)
    for (name, argument), event in errors.items():
        yield _trace_error(name, argument, event)
    # each function's distinct signatures, found once
    unique: dict[str, dict[tuple[Hashable, ...], Signature]] = {}
    for (key, code, argument), (group_events, group_causes) in groups.items():
        rule = _RULES.get(code)
        if rule is not None:
            if key not in unique:
                unique[key] = predict.distinct(signatures.get(key, []))
            group = _Group(group_events[0].function, argument, group_events, group_causes,
                           signatures.get(key, []), others.get((key, code, argument), []),
                           traced_events.get(key, []), unique[key])
            yield rule(group)


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
    return Suggestion(name, TRACE_ERROR, message)


def _shape(g: _Group) -> Suggestion:
    path = g.argument or ""
    dims = predict.varying_dims(g.distinct, path)
    if not dims:
        return Suggestion(g.name, SHAPE, f"re-compiled {_times(len(g.events))} for "
                          f"new shapes of `{path}` ({_listed(g.values())}). Pad inputs to a few "
                          "fixed sizes and mask the padding, so that one shape is reused."
                          + g.also())
    dim, values = max(dims.items(), key=lambda item: len(item[1]))
    axis = _same_axis(g.distinct, values)
    dim_text = ", ".join(str(d) for p, d in axis if p == path) or str(dim)
    where = f"`{path}` dim{'s' if ',' in dim_text else ''} {dim_text}"
    sizes = [s.leaves[path].shape[dim] for s in g.signatures if path in s.leaves]
    full = max(values)
    pad_all = predict.leaf_compiles_after(g.keys, predict.dim_change(axis, lambda n: full))
    if len(values) == 2:
        small = min(values)
        overhead = predict.padding_overhead(sizes, lambda n: full)
        pad = (f"pad to {full} (and mask) so that one shape is reused: {g.compiles} compiles "
               f"-> {pad_all} (pads {overhead}% on average)")
        # The call history of the argument: a last batch follows several calls of the full
        # size from the same call site; two datasets come from two call sites, or early.
        at, sites = _history(g, path, dim, small, full)
        last_batch = (sizes[-1] == small and sizes.count(small) == 1
                      and (at >= 2 if at is not None else len(sites) == 1))
        if last_batch:
            calls = f" (call {at + 1}, after {at} calls of {full})" if at is not None else ""
            return Suggestion(g.name, SHAPE, (
                f"the last batch is smaller: {where} is {full}, then {small} once at the "
                f"end{calls}. Pad the last batch to {full} (and mask it) or drop it "
                f"(drop_last): {g.compiles} compiles -> {pad_all}." + g.also()), pad_all)
        # Two datasets only on evidence: each size from its own line of code. Counted calls
        # (a spec, --count-calls) show a sequence of calls of one function instead.
        if (sizes.count(small) == 1 and sizes.count(full) == 1 and at is None
                and len(sites) >= 2):
            last = (f" (If {small} is instead the last, smaller batch of a loop, pad it or drop "
                    "it: drop_last.)" if sizes[-1] == small else "")
            return Suggestion(g.name, SHAPE, (
                f"two datasets of different sizes: {where} is {sizes[0]}, then {sizes[1]}; "
                "each size compiles once, which is expected (e.g. a train and a test set). To "
                f"share one compile, {pad}.{last}" + g.also()), pad_all)
        return Suggestion(g.name, SHAPE, (
            f"{where} took the values {_listed([str(v) for v in values])}: {pad}."
            + g.also()), pad_all)
    options: list[tuple[int, str]] = []
    pow2 = predict.leaf_compiles_after(
        g.keys, predict.dim_change(axis, predict.next_power_of_two))
    buckets = sorted({predict.next_power_of_two(v) for v in values})
    if pow2 < g.compiles and buckets[-1] <= 2 * full:
        overhead = predict.padding_overhead(sizes, predict.next_power_of_two)
        options.append((pow2, f"{pow2} with power-of-two buckets of {where} "
                              f"({_listed([str(b) for b in buckets], 8)}; pads {overhead}% on "
                              "average)"))
    width = predict.multiple_for(values)
    multiples = predict.leaf_compiles_after(
        g.keys, predict.dim_change(axis, predict.round_up(width)))
    if multiples < g.compiles and width > 1 and predict.round_up(width)(full) <= 2 * full:
        overhead = predict.padding_overhead(sizes, predict.round_up(width))
        options.append((multiples, f"{multiples} with multiples of {width} (pads {overhead}% "
                                   "on average)"))
    if not options:
        overhead = predict.padding_overhead(sizes, lambda n: full)
        return Suggestion(g.name, SHAPE, (
            f"{where} took {len(values)} values ({min(values)}..{full}): pad to {full} (and "
            f"mask) so that one shape is reused: {g.compiles} compiles -> {pad_all} (pads "
            f"{overhead}% on average)." + g.also()), pad_all)
    return Suggestion(g.name, SHAPE, (
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


def _same_axis(signatures: list[Signature], values: list[int]) -> list[tuple[str, int]]:
    """Every (path, dim) that varies over the same sizes: one axis, e.g. the batch."""
    paths = {p for s in signatures for p in s.leaves}
    return [(p, d) for p in sorted(paths) for d, vs in predict.varying_dims(signatures, p).items()
            if set(vs) == set(values)]


def _dtype(g: _Group) -> Suggestion:
    path = g.argument or ""
    first = g.signatures[0].leaves.get(path) if g.signatures else None
    dtype = first.dtype if first else "float32"
    after = (predict.compiles_after(g.distinct, predict.one_dtype(path, first.dtype))
             if first else None)
    return Suggestion(g.name, DTYPE, (
        f"`{g.argument}` reached {g.name} with different dtypes ({_listed(g.values())}). Cast "
        f"it once before the call, e.g. `{g.argument}.astype(jnp.{dtype})` (the dtype seen first)"
        + (f": {g.compiles} compiles -> {after}." if after is not None else ".")), after)


def _weak_type(g: _Group) -> Suggestion:
    after = predict.compiles_after(g.distinct, predict.strong_type(g.argument or ""))
    return Suggestion(g.name, WEAK_TYPE, (
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
    return Suggestion(g.name, STATIC_VALUE, (
        f"static argument `{g.argument}` of {g.name} took {len(values)} values "
        f"({_listed(values)}); each new value compiles again. If it changes often, pass it as "
        f"a traced array instead (branch with `jax.lax.cond` / `jnp.where`): {fix}"
        + g.also()), after)


def _tree(g: _Group) -> Suggestion:
    if any(c.detail.startswith("pytree node data changed") for c in g.causes):
        return Suggestion(g.name, TREE_STRUCTURE, (
            f"`{g.argument}` took the values {_listed(g.values(), 3)} between calls of "
            f"{g.name}: a static field or attribute of the argument (e.g. a model switched "
            "between train and eval mode) is part of the cache key, so each value compiles "
            "once. Expected if you switch modes on purpose; otherwise keep it fixed."
            + g.also()))
    return Suggestion(g.name, TREE_STRUCTURE, (
        f"the pytree structure of `{g.argument}` changed between calls of {g.name} "
        f"({_listed(g.values(), 3)}). Keep containers the same (same dict keys, same list "
        "lengths); pad or mask instead of adding or removing entries."))


def _passing(g: _Group) -> Suggestion:
    after = predict.compiles_after(g.distinct, predict.same_passing)
    how = f" (e.g. always `{g.argument}=...` by keyword)" if g.argument else ""
    return Suggestion(g.name, ARG_PASSING, (
        f"called with its arguments passed in different ways "
        f"({_listed(g.values(), 2)}); JAX keys its cache on how arguments are passed. Pass "
        f"them the same way in every call{how}: {g.compiles} compiles -> {after}."), after)


_NEW_OBJECT = {
    "lambda": "the lambda defined at {defined_at} is created anew for every call; define it "
              "once, outside the loop (or use a named module-level function)",
    "closure": "{name} is defined inside another function (at {defined_at}) and a new one is "
               "made on every call; build it once, or move it to module level and pass what it "
               "captures as arguments",
    "partial": "a new functools.partial of {name} is made before every call (called at "
               "{call_site}); create it once outside the loop, or pass the bound values as "
               "(static) arguments",
    "bound_method": "jax.jit(obj.{name}) wraps a new bound method every time (called at "
                    "{call_site}); jit it once outside the loop, or jit the plain function and "
                    "pass the object's data as arguments",
    "function": "a new function object is created for every call (called at {call_site}); "
                "hoist the `jax.jit(...)` out of the loop",
}


def _new_function(g: _Group) -> Suggestion:
    event = g.events[0]
    kind = event.signature.function_kind if event.signature else "function"
    text = _NEW_OBJECT.get(kind, _NEW_OBJECT["function"]).format(
        name=g.name, defined_at=event.defined_at, call_site=event.call_site)
    after = predict.compiles_after(g.distinct, predict.same_function)
    return Suggestion(g.name, NEW_FUNCTION, (
        f"traced {_times(len(g.events))} more as a new function object: {text}: "
        f"{g.compiles} compiles -> {after}."), after)


def _context(g: _Group) -> Suggestion:
    return Suggestion(g.name, TRACING_CONTEXT, (
        f"the tracing context `{g.argument}` changed between calls of {g.name} "
        f"({_listed(g.values(), 2)}). Set such config flags and context managers once, outside "
        "the loop."))


def _sharding(g: _Group) -> Suggestion:
    what = f"`{g.argument}`" if g.argument else "its inputs"
    return Suggestion(g.name, SHARDING, (
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


_RULES: dict[str, Callable[[_Group], Suggestion]] = {
    SHAPE: _shape, DTYPE: _dtype, WEAK_TYPE: _weak_type, STATIC_VALUE: _static,
    TREE_STRUCTURE: _tree, ARG_PASSING: _passing, NEW_FUNCTION: _new_function,
    TRACING_CONTEXT: _context, SHARDING: _sharding}
