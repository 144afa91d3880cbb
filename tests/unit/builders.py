"""Small builders for hand-made sessions: ``leaf("f32", 3, 4)``, ``sig(x=...)``, ``event(...)``.

No JAX: the analysis works on ``recompile_cli.session.model`` data only.
"""

from __future__ import annotations

from dataclasses import replace

from recompile_cli.analysis.causes import Cause, explain_events
from recompile_cli.session.model import Change, Event, Leaf, Signature, TraceError

DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
          "i8": "int8", "i32": "int32", "i64": "int64", "u8": "uint8", "bool": "bool"}


def leaf(dtype: str = "f32", *shape: int, weak: bool = False, sharding: str | None = None
         ) -> Leaf:
    """``leaf("f32", 3, 4)`` is f32[3,4]; ``leaf("f32", weak=True)`` a Python float."""
    return Leaf(shape=tuple(shape), dtype=DTYPES.get(dtype, dtype), weak_type=weak,
                sharding=sharding)


def sig(*, static: dict[str, str] | None = None, structure: dict[str, str] | None = None,
        positional: int | None = None, keywords: tuple[str, ...] = (),
        context: dict[str, str] | None = None, fid: int = 1, kind: str = "function",
        paths: dict[str, Leaf] | None = None, **leaves: Leaf) -> Signature:
    """A signature. Keyword arguments are leaves at top-level paths (``x=leaf(...)``); ``paths``
    takes any path (``"batch['x']"``). Each top-level argument's structure defaults to ``*``
    (one array); ``positional`` defaults to every argument not passed by keyword."""
    all_leaves = {**leaves, **(paths or {})}
    tops = {_top(path) for path in all_leaves}
    structure = {name: "*" for name in sorted(tops)} if structure is None else structure
    static = static or {}
    if positional is None:
        positional = len(set(structure) | set(static)) - len(keywords)
    return Signature(leaves=all_leaves, static=dict(static), structure=dict(structure),
                     positional=positional, keywords=tuple(keywords), context=context or {},
                     function_id=fid, function_kind=kind)


def _top(path: str) -> str:
    for i, ch in enumerate(path):
        if ch in "[.":
            return path[:i]
    return path


def event(signature: Signature | None = None, *, function: str = "f", seq: int = 0,
          traced: bool = True, compiled: bool = True, error: TraceError | None = None,
          lowering_changes: tuple[Change, ...] | None = None, owner: str = "user",
          depth: int = 0, defined_at: str | None = "prog.py:3",
          call_site: str | None = "prog.py:10 (<module>)") -> Event:
    return Event(seq=seq, function=function, defined_at=defined_at, owner=owner,
                 call_site=call_site, call_index=None, depth=depth, traced=traced,
                 compiled=compiled, start_seconds=float(seq), trace_seconds=0.01,
                 lower_seconds=0.01, compile_seconds=0.1 if compiled else 0.0,
                 signature=signature, lowering_changes=lowering_changes, error=error)


def numbered(*items: Event | Signature) -> list[Event]:
    """Events in order, ``seq`` 0, 1, 2...; a bare ``Signature`` is a traced-and-compiled call
    of ``f``."""
    out = []
    for seq, item in enumerate(items):
        ev = event(item) if isinstance(item, Signature) else item
        out.append(replace(ev, seq=seq))
    return out


def explain(*items: Event | Signature, base: dict[str, str] | None = None
            ) -> list[tuple[Cause, ...]]:
    """The causes of each event, in order."""
    events = numbered(*items)
    causes = explain_events(events, base or {})
    return [causes[e.seq] for e in events]


def last(*items: Event | Signature, base: dict[str, str] | None = None) -> tuple[Cause, ...]:
    """The causes of the last event."""
    return explain(*items, base=base)[-1]


def brief(cause: Cause) -> tuple:
    """What a user reads first: (code, argument, before, after)."""
    return cause.code, cause.argument, cause.before, cause.after
