"""Why each trace or compile happened: diff a signature against the closest one seen before.

Pure functions over ``model`` data. Each event of a function is compared with the previously
*successfully traced* signatures of the same function (``name@file:line``); the closest one
(fewest differences, ties to the most recent) explains it. Compiles without a re-trace are
explained by the lowering-key changes the recorder captured.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from recompile_cli.analysis.nearest import SignatureIndex, top_name
from recompile_cli.analysis.shorten import changed_field, shown, shown_pair, structure_diff
from recompile_cli.session.model import CauseCode, Event, Leaf, Signature, function_key
from recompile_cli.session.structures import treedef_text

__all__ = ["Cause", "SignatureIndex", "diff_signatures", "explain_events"]

_ABSENT = "(absent)"
_LISTED = 5  # differing parts of one structure reported as causes


@dataclass(frozen=True, slots=True)
class Cause:
    """One difference that explains a cache miss, e.g. ``shape`` at ``x``: f32[3] -> f32[4]."""

    code: CauseCode
    argument: str | None = None
    before: str | None = None
    after: str | None = None
    detail: str = ""


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
    out: dict[int, tuple[Cause, ...]] = {}
    keys: dict[tuple[str, str | None], str] = {}  # function_key, once per function
    for event in events:
        where = (event.function, event.defined_at)
        key = keys.get(where)
        if key is None:
            key = keys[where] = function_key(*where)
        index = seen.get(key)
        if index is None:
            index = seen[key] = SignatureIndex(base_context)
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
        elif not event.traced and event.lowering_changes is None and event.signature:
            causes = (_earlier_trace(event, traces.get(key, []), out)
                      or _explain(event, index, True, base_context))
        else:
            causes = _explain(event, index, key in done_before, base_context)
        out[event.seq] = causes
        if event.depth == 0:
            top.add(key)
        if event.compiled:
            compiled.add(key)
        if event.compiled or (event.traced and event.error is None):
            done_before.add(key)
        if event.traced and event.error is None and event.signature is not None:
            index.add(event.signature)
            if key in traces:
                traces[key].append(event)
            else:
                traces[key] = [event]
    return out


def _earlier_trace(event: Event, traces: list[Event], out: dict[int, tuple[Cause, ...]]
                   ) -> tuple[Cause, ...]:
    """The causes of the earlier trace whose signature a compile without a re-trace has (the
    recorder pairs a compile with the trace that made its jaxpr), if it was not compiled."""
    for trace in reversed(traces):
        if trace.signature == event.signature and not trace.compiled:
            return out[trace.seq]
    return ()


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
                    after=f"function object #{new.function_id}",
                    detail="a new function object with the same code: a lambda or "
                           "functools.partial re-created, or jax.jit(obj.method) re-wrapping a "
                           "bound method")
    if new.context != old.context:  # (equal contexts have equal values for every name)
        yield from _context_causes(new.context, old.context, base_context)
    new_structure, old_structure = new.structure, old.structure
    new_static, old_static = new.static, old.static
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
                yield from _structure_causes(name, new, old)
    if not same_static:
        for name in sorted(new_static.keys() & old_static.keys()):
            if new_static[name] != old_static[name]:
                before, after = shown_pair(old_static[name], new_static[name])
                field = changed_field(old_static[name], new_static[name])
                yield Cause(CauseCode.STATIC_VALUE, argument=name, before=before, after=after,
                            detail=f"static argument {name} has a new value"
                                   + (f" (field `{field}` changed)" if field else ""))
    old_leaves = old.leaves
    for path, leaf in new.leaves.items():
        old_leaf = old_leaves.get(path)
        if old_leaf is None or leaf is old_leaf or (skipped and top_name(path) in skipped):
            continue
        if (leaf.shape == old_leaf.shape and leaf.dtype == old_leaf.dtype
                and leaf.weak_type == old_leaf.weak_type and leaf.sharding == old_leaf.sharding):
            continue  # leaf == old_leaf, without the dataclass's __eq__
        yield _leaf_cause(path, leaf, old_leaf)


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
    shape, dtype = new.shape != old.shape, new.dtype != old.dtype
    weak_type, sharding = new.weak_type != old.weak_type, new.sharding != old.sharding
    if shape:
        code, text = CauseCode.SHAPE, f"new shape {new.shape} (was {old.shape})"
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
                  if differs]
        text += f"; also changed: {', '.join(fields[1:])}"
    return Cause(code, path, old.short, new.short, text)


def _structure_causes(name: str, new: Signature, old: Signature) -> Iterator[Cause]:
    """``tree_structure`` causes for one argument: the smallest differing parts of two node
    maps with their paths (``model.bn1.use_running_average``: ``False`` -> ``True``), or the
    two structures, shortened around their first difference, when there is no node map."""
    before_text, after_text = old.structure[name], new.structure[name]
    diffs = structure_diff(before_text, after_text)
    if not diffs:
        before, after = shown_pair(treedef_text(before_text), treedef_text(after_text))
        yield Cause(CauseCode.TREE_STRUCTURE, argument=name, before=before, after=after,
                    detail=_structure_detail(name, new, old))
        return
    listed = "; ".join(f"{name}{path}: {shown(b or _ABSENT, 60)} -> {shown(a or _ABSENT, 60)}"
                       for path, b, a in diffs[:_LISTED])
    more = f" (and {len(diffs) - _LISTED} more)" if len(diffs) > _LISTED else ""
    for path, b, a in diffs[:_LISTED]:
        before, after = shown_pair(b or _ABSENT, a or _ABSENT)
        yield Cause(CauseCode.TREE_STRUCTURE, argument=name + path, before=before, after=after,
                    detail=f"pytree node data changed (a static field or attribute, e.g. a "
                           f"train/eval flag): {listed}{more}")


def _structure_detail(name: str, new: Signature, old: Signature) -> str:
    new_paths = {p for p in new.leaves if top_name(p) == name}
    old_paths = {p for p in old.leaves if top_name(p) == name}
    parts = []
    if new_paths - old_paths:
        parts.append("added " + ", ".join(sorted(new_paths - old_paths)[:5]))
    if old_paths - new_paths:
        parts.append("removed " + ", ".join(sorted(old_paths - new_paths)[:5]))
    return "pytree structure changed" + (": " + "; ".join(parts) if parts else "")


def _passing(sig: Signature) -> str:
    text = f"{sig.positional} positional"
    if sig.keywords:
        text += " + " + ", ".join(f"{k}=" for k in sig.keywords)
    return text
