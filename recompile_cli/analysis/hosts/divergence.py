"""Where the processes of a job compile different programs.

In a multi-process JAX job every process must run the same programs: a process that compiles a
different one (another batch shape, another static value) makes the next collective hang or
fail with an opaque error. ``compare`` lines up each function's top-level traces and compiles
process by process and reports, for every function whose compile count, signature sequence,
causes or trace errors differ, the first trace/compile at which the processes part, what each
process did there and the argument values per process::

    batch['x']: f32[32,8] on processes 0, 1; f32[16,8] on process 2

Functions are matched across hosts by name, file name and line (``name@file.py:line``), since
the same program may live in different folders. JAX's own functions are counted but not
compared: they follow from the user's. Pure: no I/O, no JAX.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.explain import explain_events
from recompile_cli.analysis.hosts.merge import Part
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import Event, Owner, function_key
from recompile_cli.session.structures import treedef_text

ASPECTS = ("compile count", "signatures", "causes", "trace errors")


@dataclass(frozen=True, slots=True)
class Counts:
    """One function's numbers in one process."""

    traces: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0
    calls: int | None = None  # counted calls, where known (``--count-calls``, ``profile``)


@dataclass(frozen=True, slots=True)
class FunctionByProcess:
    """One function, its counts per process (zero where it never traced)."""

    key: str  # name@file.py:line, the same on every host
    name: str
    defined_at: str | None
    owner: str
    counts: dict[int, Counts]

    @property
    def same(self) -> bool:
        return len({(c.traces, c.compiles) for c in self.counts.values()}) <= 1


@dataclass(frozen=True, slots=True)
class Difference:
    """One argument (or tracing-context entry) whose value differs: value -> processes."""

    argument: str
    values: dict[str, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Divergence:
    """A function the processes compile differently, and where they first part.

    ``at`` is the 1-based position, among this function's top-level traces and compiles, of the
    first one that differs; ``stages`` says what each process did there (``no trace or compile``
    where a process did not trace or compile again), ``calls`` during which call (1-based),
    where known, and ``differences`` the arguments whose values differ."""

    key: str
    name: str
    defined_at: str | None
    aspects: tuple[str, ...]
    compiles: dict[int, int]
    at: int
    stages: dict[str, tuple[int, ...]]
    calls: dict[int, int] = field(default_factory=dict)
    differences: tuple[Difference, ...] = ()


@dataclass(frozen=True)
class Comparison:
    processes: tuple[int, ...]
    functions: tuple[FunctionByProcess, ...]
    divergences: tuple[Divergence, ...]


def portable_key(name: str, defined_at: str | None) -> str:
    """``name@file.py:line``: a function's identity on any host (paths differ between hosts)."""
    path = path_of(defined_at)
    if not path or not defined_at:
        return name
    return f"{name}@{os.path.basename(path)}{defined_at[len(path):]}"


@dataclass
class _Lane:
    """One process's top-level events of one function, with their causes."""

    events: list[Event] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)


def compare(parts: Sequence[Part]) -> Comparison:
    """Per-process counts of every function, and the functions that diverge."""
    order = [p.index for p in parts]
    rows: dict[str, Event] = {}  # key -> the first event of that function
    counts: dict[str, dict[int, Counts]] = {}
    lanes: dict[str, dict[int, _Lane]] = {}
    for part in parts:
        causes = explain_events(part.session.events, part.session.base_context)
        for event in part.session.events:
            key = portable_key(event.function, event.defined_at)
            rows.setdefault(key, event)
            mine = counts.setdefault(key, {})
            was = mine.get(part.index, Counts())
            mine[part.index] = Counts(
                was.traces + event.traced, was.compiles + event.compiled,
                was.compile_seconds + event.compile_seconds,
                _calls(part.session.calls, event))
            if event.depth == 0 and event.owner != Owner.JAX:
                lane = lanes.setdefault(key, {}).setdefault(part.index, _Lane())
                lane.events.append(event)
                lane.causes.append(causes[event.seq][0])
    functions = []
    for key, first in rows.items():
        functions.append(FunctionByProcess(key, first.function, first.defined_at, first.owner,
                                     {i: counts[key].get(i, Counts()) for i in order}))
    functions.sort(key=lambda f: (f.owner != Owner.USER, f.same,
                                  -max(c.compile_seconds for c in f.counts.values())))
    divergences = []
    for f in functions:
        if f.owner == Owner.JAX:
            continue
        found = _diverge(f, {i: lanes.get(f.key, {}).get(i, _Lane()) for i in order})
        if found is not None:
            divergences.append(found)
    return Comparison(tuple(order), tuple(functions), tuple(divergences))


def _calls(calls: dict[str, int], event: Event) -> int | None:
    return calls.get(function_key(event.function, event.defined_at))


def _stage(event: Event) -> str:
    if event.error is not None:
        return f"trace error ({event.error.type})"
    if event.traced:
        return "trace+compile" if event.compiled else "trace, nothing compiled"
    return "compile without re-trace"


def _values(event: Event) -> dict[str, str]:
    """Argument path -> value, tree structures and non-default tracing context included."""
    signature = event.signature
    if signature is None:
        return {}
    out = signature.describe()
    out.update({f"{name} (tree)": treedef_text(tree)  # JAX's text, not the node map
                for name, tree in signature.structure.items()})
    out.update({f"context {name}": value for name, value in signature.context.items()})
    return out


def _step(event: Event, cause: Cause) -> tuple[object, ...]:
    values = tuple(sorted(_values(event).items()))
    changes = tuple(event.lowering_changes or ())
    return (_stage(event), values, changes, cause.code, cause.argument)


def _diverge(f: FunctionByProcess, lanes: dict[int, _Lane]) -> Divergence | None:
    compiles = {i: sum(e.compiled for e in lane.events) for i, lane in lanes.items()}
    sequences: dict[str, list[Any]] = {
        "compile count": [compiles[i] for i in lanes],
        "signatures": [tuple(tuple(sorted(_values(e).items())) for e in lane.events
                             if e.signature is not None) for lane in lanes.values()],
        "causes": [tuple((c.code, c.argument) for c in lane.causes)
                   for lane in lanes.values()],
        "trace errors": [tuple(e.error.type for e in lane.events if e.error)
                         for lane in lanes.values()],
    }
    aspects = tuple(a for a in ASPECTS if len(set(sequences[a])) > 1)
    if not aspects:
        return None
    steps = {i: [_step(e, c) for e, c in zip(lane.events, lane.causes, strict=True)]
             for i, lane in lanes.items()}
    at, longest = 0, max(len(s) for s in steps.values())
    while at < longest and len({tuple(s[at:at + 1]) for s in steps.values()}) == 1:
        at += 1
    stages: dict[str, list[int]] = {}
    calls = {}
    for i, lane in lanes.items():
        if at < len(lane.events):
            event = lane.events[at]
            stages.setdefault(_stage(event), []).append(i)
            if event.call_index is not None:
                calls[i] = event.call_index + 1
        else:
            stages.setdefault("no trace or compile" if at else "never traced", []).append(i)
    return Divergence(f.key, f.name, f.defined_at, aspects, compiles, at + 1,
                      {k: tuple(v) for k, v in stages.items()}, calls,
                      tuple(_differences(lanes, at)))


def _differences(lanes: dict[int, _Lane], at: int) -> list[Difference]:
    """The arguments whose values differ at the ``at``-th event. A process without that event
    is shown with the one value it had compiled before, when there is one."""
    present = {i: _values(lane.events[at]) for i, lane in lanes.items() if at < len(lane.events)}
    earlier: dict[int, dict[str, set[str]]] = {}
    for i, lane in lanes.items():
        if i not in present:
            seen: dict[str, set[str]] = {}
            for event in lane.events[:at]:
                for path, value in _values(event).items():
                    seen.setdefault(path, set()).add(value)
            earlier[i] = seen
    paths = sorted({path for values in present.values() for path in values})
    out = []
    for path in paths:
        raw: dict[int, str | None] = {}
        for i, values in present.items():
            raw[i] = values.get(path, "(not passed)")
        for i, seen in earlier.items():
            known = seen.get(path, set())
            raw[i] = next(iter(known)) if len(known) == 1 else None
        if len({v for v in raw.values() if v is not None}) <= 1:
            continue
        shown: dict[str, list[int]] = {}
        for i in sorted(raw):
            got = raw[i]
            if got is None:
                text = "not traced again"
            else:
                text = got if i in present else f"{got} (compiled before, not traced again)"
            shown.setdefault(text, []).append(i)
        out.append(Difference(path, {k: tuple(v) for k, v in shown.items()}))
    return out
