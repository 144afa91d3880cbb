"""Why each trace or compile happened: diff a signature against the closest one seen before.

Pure functions over ``model`` data. Each event of a function is compared with the previously
*successfully traced* signatures of the same function (``name@file:line``); the closest one
(fewest differences, ties to the most recent) explains it. Compiles without a re-trace are
explained by the lowering-key changes the recorder captured.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.nearest import SignatureIndex, static_keys, top_name
from recompile_cli.analysis.causes.static import (
    AUX_DATA,
    NEW_OBJECT_SAME_TEXT,
    PRINTS_SAME_UNEQUAL,
    STATIC_FIELD,
    static_cause,
    structure_causes,
)
from recompile_cli.analysis.shorten import shown_pair
from recompile_cli.session.locations import relative
from recompile_cli.session.model import (
    CauseCode,
    Event,
    FunctionKind,
    Leaf,
    Signature,
    function_key,
)

# the words of a detail that advice keys on (defined in ``static_causes``)
__all__ = ["AUX_DATA", "NEW_OBJECT_SAME_TEXT", "PRINTS_SAME_UNEQUAL", "STATIC_FIELD",
           "diff_signatures", "explain_events", "public_only"]


def explain_events(events: Iterable[Event], base_context: dict[str, str]
                   ) -> dict[int, tuple[Cause, ...]]:
    """Event ``seq`` -> its causes (primary first), for every event in recording order.

    The closest earlier signature is found through a ``SignatureIndex`` per function, built as
    the events arrive; it gives the same answer as comparing with every earlier signature.
    """
    seen: dict[str, SignatureIndex] = {}
    done_before: set[str] = set()  # functions with a successful trace or a compile already
    compiled: set[str] = set()  # functions compiled already
    top: set[str] = set()  # functions with a top-level event already
    traces: dict[str, list[Event]] = {}  # successful traces per function, in order
    built: dict[str, _Compiled] = {}  # the signatures compiled, per function
    out: dict[int, tuple[Cause, ...]] = {}
    # function_key and owner, once per function: the user's jit of a library's function
    # (jax.jit(jnp.sin)) and that library's own jit of it are two caches, compared apart
    keys: dict[tuple[str, str | None, str], str] = {}
    for event in events:
        where = (event.function, event.defined_at, event.owner)
        key = keys.get(where)
        if key is None:
            key = keys[where] = f"{function_key(event.function, event.defined_at)} {event.owner}"
        index = seen.get(key)
        if index is None:
            index = seen[key] = SignatureIndex(base_context)
        if event.error is not None and event.error.refused:  # JAX refused the call: no trace
            out[event.seq] = (_refusal(event),)
            continue
        reused = None  # the earlier trace, not compiled then, that this compile uses
        if not event.traced and event.lowering_changes is None and event.signature:
            reused = _earlier_trace(event, traces.get(key, []))
        if not event.traced and event.compiled and key not in compiled:
            # a function's first compile is its first compile, even if it was traced before
            # (jax.eval_shape, .trace(), or nested inside another jit)
            causes: tuple[Cause, ...] = (Cause(CauseCode.FIRST_COMPILE, detail=(
                "first compile of this function (traced earlier without compiling)"
                if key in done_before else "compiled without a trace of its own")),)
        elif event.depth == 0 and event.compiled and key not in compiled and key not in top:
            # traced before only inside other jits, which compile it as part of themselves:
            # this is its first compile of its own, not a re-compilation
            causes = (Cause(CauseCode.FIRST_COMPILE, detail=(
                "first compile of this function (traced before only inside other jits)"
                if key in done_before else "first trace of this function")),)
        elif reused is not None:
            causes = _against_compiled(event, built.get(key), base_context) or out[reused.seq]
        else:
            causes = _explain(event, index, key in done_before, base_context)
        out[event.seq] = causes
        if event.depth == 0:
            top.add(key)
        if event.compiled:
            compiled.add(key)
            if event.signature is not None and (reused is not None or (
                    event.traced and event.error is None)):
                if key not in built:
                    built[key] = _Compiled()
                built[key].signatures.append(event.signature)
        if event.compiled or (event.traced and event.error is None):
            done_before.add(key)
        if event.traced and event.error is None and event.signature is not None:
            index.add(event.signature)
            if key in traces:
                traces[key].append(event)
            else:
                traces[key] = [event]
    return out


def _refusal(event: Event) -> Cause:
    """A call JAX refused: its static argument (or the part of it) it could not hash or
    compare."""
    error = event.error
    assert error is not None
    what = f"static argument {error.argument}" if error.argument else "a static argument"
    return Cause(CauseCode.STATIC_VALUE, argument=error.argument,
                 detail=f"JAX refused the call: {what} could not be hashed or compared "
                        f"({error.type}: {error.message})")


def _earlier_trace(event: Event, traces: list[Event]) -> Event | None:
    """The earlier trace whose signature a compile without a re-trace has (the recorder pairs
    a compile with the trace that made its jaxpr: ``jax.eval_shape``, ``.trace()``, or a trace
    inside another jit), if that trace was not compiled."""
    for trace in reversed(traces):
        if trace.signature == event.signature and not trace.compiled:
            return trace
    return None


class _Compiled:
    """The signatures one function compiled, in order; indexed only when a compile that reuses
    an earlier trace asks for the closest of them (rare: every other miss uses the index of
    traces), so that recording them costs one append."""

    __slots__ = ("index", "signatures")

    def __init__(self) -> None:
        self.signatures: list[Signature] = []
        self.index: SignatureIndex | None = None

    def nearest(self, sig: Signature, base_context: dict[str, str]) -> Signature:
        if self.index is None:
            self.index = SignatureIndex(base_context)
        for added in self.signatures[len(self.index):]:
            self.index.add(added)
        return self.signatures[self.index.nearest(sig)]


def _against_compiled(event: Event, built: _Compiled | None, base_context: dict[str, str]
                      ) -> tuple[Cause, ...]:
    """The causes of a compile that reuses an earlier trace, against what was compiled before
    (not against traces that never compiled on their own: a shape seen only inside another jit
    was never compiled for this function). Empty when nothing compiled has a signature."""
    if built is None or event.signature is None or not built.signatures:
        return ()
    old = built.nearest(event.signature, base_context)
    return tuple(diff_signatures(event.signature, old, base_context)) or (
        Cause(CauseCode.UNKNOWN, detail="same signature as an earlier compile: JAX's caches "
              "were cleared or the entry was evicted"),)


def public_only(causes: dict[int, tuple[Cause, ...]]) -> dict[int, tuple[Cause, ...]]:
    """The causes of a public-only session: a first compile stays one, every other cause is
    ``unknown`` (without JAX's internals there is no signature or lowering to tell why, so a
    compile without a re-trace is not known to be a ``derived_jaxpr``)."""
    unknown = (Cause(CauseCode.UNKNOWN, detail="hook mode public-only: why is not recorded "
                     "(causes need JAX >= 0.9 and hook mode private)"),)
    return {seq: found if all(c.code in (CauseCode.FIRST_COMPILE, CauseCode.UNKNOWN)
                              for c in found) else unknown
            for seq, found in causes.items()}


def _explain(event: Event, index: SignatureIndex, done_before: bool,
             base_context: dict[str, str]) -> tuple[Cause, ...]:
    if not done_before:
        return (Cause(CauseCode.FIRST_COMPILE, detail="first trace of this function"
                      if event.traced else "compiled without a trace of its own"),)
    if not event.traced:
        return tuple(_explain_without_retrace(event))
    if event.signature is None or not index.signatures:
        return (Cause(CauseCode.UNKNOWN, detail="no signature recorded (hook mode public-only)"),)
    old = index.signatures[index.nearest(event.signature)]
    return tuple(diff_signatures(event.signature, old, base_context)) or (
        Cause(CauseCode.UNKNOWN, detail="same signature as an earlier trace: JAX's caches were "
              "cleared or the entry was evicted"),)


def _explain_without_retrace(event: Event) -> list[Cause]:
    if event.lowering_changes:
        causes = []
        for change in event.lowering_changes:
            before, after = shown_pair(change.before, change.after)
            causes.append(Cause(CauseCode.SHARDING, argument=change.argument, before=before,
                                after=after, detail=_LOWERING_FIELD_TEXT.get(
                                    change.field, f"{change.field} changed")))
        return causes
    if event.lowering_changes is None:
        return [Cause(CauseCode.DERIVED_JAXPR, detail="compiled again without a re-trace: a new "
                      "jaxpr derived from this jitted function by a transformation (grad, vjp, "
                      "vmap) applied outside jit")]
    return [Cause(CauseCode.UNKNOWN, detail="compiled again without a re-trace, with the same "
                  "lowering key")]


_LOWERING_FIELD_TEXT = {
    "in_shardings": "argument placement changed (committed to a device, or a new sharding): "
                    "compiled again without a re-trace",
    "out_shardings": "output sharding changed: compiled again without a re-trace",
    "donated_invars": "donate_argnums/donate_argnames changed: compiled again without a "
                      "re-trace",
    "in_layouts": "argument layout changed: compiled again without a re-trace",
    "ctx_mesh": "the mesh context changed: compiled again without a re-trace",
}


def diff_signatures(new: Signature, old: Signature, base_context: dict[str, str]
                    ) -> Iterator[Cause]:
    """Every difference between two signatures of one function, most telling first."""
    if new.function_id and old.function_id and new.function_id != old.function_id:
        yield Cause(CauseCode.NEW_FUNCTION, before=f"function object #{old.function_id}",
                    after=f"function object #{new.function_id}", detail=_new_object(new))
    if new.context != old.context:  # (equal contexts have equal values for every name)
        yield from _context_causes(new.context, old.context, base_context)
    new_structure, old_structure = new.structure, old.structure
    new_static, old_static = static_keys(new), static_keys(old)  # as JAX compares them
    same_structure, same_static = new_structure == old_structure, new_static == old_static
    moved_args: set[str] = set()  # arguments passed in one call only
    if not (same_structure or new_structure.keys() == old_structure.keys()) or not (
            same_static or new_static.keys() == old_static.keys()):
        moved_args = (set(new_structure) | set(new_static)) ^ (set(old_structure)
                                                                | set(old_static))
    if moved_args:
        changed = sorted(moved_args)
        yield Cause(CauseCode.ARG_PASSING, argument=", ".join(changed),
                    before=_passing(old), after=_passing(new),
                    detail="a different set of arguments: "
                           + ", ".join(changed) + " passed in one call and left to its default "
                           "in the other")
    elif new.positional != old.positional or new.keywords != old.keywords:
        moved = sorted(set(new.keywords) ^ set(old.keywords))
        yield Cause(CauseCode.ARG_PASSING, argument=", ".join(moved) or None,
                    before=_passing(old), after=_passing(new),
                    detail="the same arguments passed positionally in one call and by keyword "
                           "in the other")
    skipped = moved_args
    if not same_structure:
        for name in sorted(new_structure.keys() & old_structure.keys()):
            if new_structure[name] != old_structure[name]:
                skipped = skipped | {name}
                yield from structure_causes(name, new, old)
    if not same_static:
        for name in sorted(new_static.keys() & old_static.keys()):
            if new_static[name] != old_static[name]:
                yield static_cause(name, new, old)
    old_leaves = old.leaves
    for path, leaf in new.leaves.items():
        old_leaf = old_leaves.get(path)
        if old_leaf is None or leaf is old_leaf or (skipped and top_name(path) in skipped):
            continue
        if (leaf.shape == old_leaf.shape and leaf.dtype == old_leaf.dtype
                and leaf.weak_type == old_leaf.weak_type and leaf.sharding == old_leaf.sharding
                and leaf.symbolic == old_leaf.symbolic):
            continue  # leaf == old_leaf, without the dataclass's __eq__
        yield _leaf_cause(path, leaf, old_leaf)


# What made a new function object, per kind, where the line is known (``created_at``: the first
# line of a lambda or def; for the others, the line of the calling code that assigned it or the
# jit wrapper holding it, or made it in the call's own statement) and where it is not.
_NEW_OBJECT = {
    FunctionKind.LAMBDA: ("a new lambda object with the same code, made at {at} on every call",
                          "a new lambda object with the same code on every call"),
    FunctionKind.CLOSURE: ("a new function object with the same code: the def at {at} inside "
                           "another function runs again on every call",
                           "a new function object with the same code (a def inside another "
                           "function) on every call"),
    FunctionKind.PARTIAL: ("a new functools.partial object on every call, from {at}",
                           "a new functools.partial object on every call; where it is made is "
                           "not known (JAX sees only the new object, at the call)"),
    FunctionKind.BOUND_METHOD: ("a new bound method on every call (jax.jit(obj.method) "
                                "re-wrapped), from {at}",
                                "a new bound method on every call (jax.jit(obj.method) "
                                "re-wrapped); where it is made is not known"),
    FunctionKind.FUNCTION: ("a new function object with the same code, made at {at}",
                            "a new function object with the same code: a lambda or "
                            "functools.partial re-created, or jax.jit(obj.method) re-wrapping a "
                            "bound method"),
}


def _new_object(sig: Signature) -> str:
    known, unknown = _NEW_OBJECT.get(sig.function_kind, _NEW_OBJECT[FunctionKind.FUNCTION])
    return known.format(at=relative(sig.created_at)) if sig.created_at else unknown


def _context_causes(new: dict[str, str], old: dict[str, str], base_context: dict[str, str]
                    ) -> Iterator[Cause]:
    for name in sorted(new.keys() | old.keys()):
        before = old.get(name, base_context.get(name))
        after = new.get(name, base_context.get(name))
        if before != after:
            shown_before, shown_after = shown_pair(str(before), str(after))
            yield Cause(CauseCode.TRACING_CONTEXT, argument=name,
                        before=None if before is None else shown_before,
                        after=None if after is None else shown_after,
                        detail=f"the tracing context {name} changed (a config flag or context "
                               "manager)")


def _leaf_cause(path: str, new: Leaf, old: Leaf) -> Cause:
    shape = new.shape != old.shape or new.symbolic != old.symbolic
    dtype = new.dtype != old.dtype
    weak_type, sharding = new.weak_type != old.weak_type, new.sharding != old.sharding
    key = dtype and (new.dtype.startswith("key<") or old.dtype.startswith("key<"))
    if shape and not key:  # a typed PRNG key vs raw uint32 key data: another kind of value
        code, text = CauseCode.SHAPE, _shape_text(new, old)
    elif dtype:
        code, text = CauseCode.DTYPE, f"new dtype {new.dtype} (was {old.dtype})"
    elif weak_type:
        code, text = CauseCode.WEAK_TYPE, ("a Python scalar (weakly typed) and an array of the "
                                           "same dtype were both passed")
    else:
        code, text = CauseCode.SHARDING, f"new sharding {new.sharding} (was {old.sharding})"
    if shape + dtype + weak_type + sharding > 1:
        fields = [name for name, differs in (("shape", shape), ("dtype", dtype),
                                             ("weak_type", weak_type), ("sharding", sharding))
                  if differs and name != code.value]
        text += f"; also changed: {', '.join(fields)}"
    return Cause(code, path, old.short, new.short, text)


def _shape_text(new: Leaf, old: Leaf) -> str:
    """``new shape (16, 8) (was (32, 8))``; where a symbolic dimension (``jax.export``) is
    part of it, by the dimensions' texts and with the dims that changed: ``new shape (16, 8)
    (was (b, 8)): dim 0 b -> 16``."""
    if not new.symbolic and not old.symbolic:
        return f"new shape {new.shape} (was {old.shape})"
    after, before = new.dims, old.dims
    text = f"new shape ({', '.join(after)}) (was ({', '.join(before)}))"
    if len(after) == len(before):
        dims = [f"dim {i} {a} -> {b}" for i, (a, b) in enumerate(zip(before, after, strict=True))
                if a != b]
        text += f": {', '.join(dims)}" if dims else ""
    return text


def _passing(sig: Signature) -> str:
    text = f"{sig.positional} positional"
    if sig.keywords:
        text += " + " + ", ".join(f"{k}=" for k in sig.keywords)
    return text
