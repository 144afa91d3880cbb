"""Where the processes of a job compile different programs.

In a multi-process JAX job every process must run the same programs: a process that compiles a
different one (another batch shape, another static value) makes the next collective hang or
fail with an opaque error. ``compare`` lines up each function's top-level traces and compiles
process by process and reports, for every function whose compile count, signature sequence,
causes or trace errors differ, the first trace/compile at which the processes part, what each
process did there and the argument values per process::

    batch['x']: f32[32,8] on processes 0, 1; f32[16,8] on process 2

It also finds a function whose same signature lowered to different programs on different
processes (``programs``: the module part of ``Event.program_fingerprint`` differs for equal
argument values, tracing-context entries relative to each process's base context included), and
says what the reports know to differ there (``ProgramDifference.differs``): JAX and Python
versions and backends, the JAX configuration each process traced under (its base context: x64,
matmul precision, ...), how many times the function was traced before, and the global or
closure values read at trace time that changed. Compiles whose program is unknown (public-only
hooks, a module past the fingerprint's bound, a session saved before fingerprints were split)
are never compared.

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
from recompile_cli.analysis.shorten import shown
from recompile_cli.session.locations import path_of
from recompile_cli.session.model import Event, Owner, function_key
from recompile_cli.session.structures import treedef_text

ASPECTS = ("compile count", "signatures", "causes", "trace errors", "programs")
PROGRAM_SEPARATOR = "/"  # ``MODULE/TARGET`` in ``Event.program_fingerprint`` (its writer's)
SHOWN_PROGRAM = 8  # hex digits of a program's module digest shown
SHOWN_SIGNATURE = 160  # the longest signature text a program difference shows
NOTHING_KNOWN = ("nothing the reports record differs: a value read at trace time (a global, a "
                 "closure variable, an environment variable, a file) or a library version must "
                 "differ between the processes")


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
class ProgramDifference:
    """One signature of a function that lowered to different programs on different processes:
    the signature as text, program (its module digest, shortened) -> processes, and what the
    reports know to differ between those processes (``NOTHING_KNOWN`` where nothing)."""

    signature: str
    programs: dict[str, tuple[int, ...]]
    differs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Divergence:
    """A function the processes compile differently, and where they first part.

    ``at`` is the 1-based position, among this function's top-level traces and compiles, of the
    first one that differs; ``stages`` says what each process did there (``no trace or compile``
    where a process did not trace or compile again), ``calls`` during which call (1-based),
    where known, ``differences`` the arguments whose values differ, and ``programs`` the
    signatures that lowered to different programs."""

    key: str
    name: str
    defined_at: str | None
    aspects: tuple[str, ...]
    compiles: dict[int, int]
    at: int
    stages: dict[str, tuple[int, ...]]
    calls: dict[int, int] = field(default_factory=dict)
    differences: tuple[Difference, ...] = ()
    programs: tuple[ProgramDifference, ...] = ()


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
    by_index = {p.index: p for p in parts}
    for f in functions:
        if f.owner == Owner.JAX:
            continue
        found = _diverge(f, {i: lanes.get(f.key, {}).get(i, _Lane()) for i in order}, by_index)
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


def _step(event: Event, cause: Cause, programs: bool) -> tuple[object, ...]:
    values = tuple(sorted(_values(event).items()))
    changes = tuple(event.lowering_changes or ())
    program = module_of(event.program_fingerprint) if programs else None
    return (_stage(event), values, changes, cause.code, cause.argument, program)


def module_of(fingerprint: str | None) -> str | None:
    """The module part of a program fingerprint (``MODULE/TARGET``): the program as JAX lowered
    it, whatever devices it runs on; None where unknown (no fingerprint, or one saved before
    the two parts were split)."""
    if not fingerprint or PROGRAM_SEPARATOR not in fingerprint:
        return None
    return fingerprint.split(PROGRAM_SEPARATOR, 1)[0]


def _signature_key(event: Event) -> tuple[object, ...]:
    return (tuple(sorted(_values(event).items())), tuple(event.lowering_changes or ()))


def _programs(lanes: dict[int, _Lane], parts: dict[int, Part]) -> list[ProgramDifference]:
    """The signatures compiled on two processes or more whose programs differ between them."""
    seen: dict[tuple[object, ...], dict[int, list[str]]] = {}  # signature -> process -> modules
    first: dict[tuple[object, ...], dict[int, tuple[Event, int]]] = {}  # (event, traces before)
    for i, lane in lanes.items():
        traces = 0
        for event in lane.events:
            module = module_of(event.program_fingerprint) if event.compiled else None
            if module is not None and event.error is None and (
                    event.signature is not None or event.lowering_changes):
                key = _signature_key(event)
                mine = seen.setdefault(key, {}).setdefault(i, [])
                if module not in mine:
                    mine.append(module)
                first.setdefault(key, {}).setdefault(i, (event, traces))
            traces += event.traced
    out = []
    for key, per_process in seen.items():
        if len(per_process) < 2 or len({frozenset(m) for m in per_process.values()}) < 2:
            continue
        programs: dict[str, list[int]] = {}
        for i, modules in sorted(per_process.items()):
            text = ", ".join(m[:SHOWN_PROGRAM] for m in modules)
            programs.setdefault(text, []).append(i)
        event = next(iter(first[key].values()))[0]
        described = ", ".join(f"{path}: {value}" for path, value in _described(event).items())
        out.append(ProgramDifference(
            shown(described or "(no arguments)", SHOWN_SIGNATURE),
            {k: tuple(v) for k, v in programs.items()},
            tuple(_what_differs(first[key], parts)) or (NOTHING_KNOWN,)))
    return out


def _described(event: Event) -> dict[str, str]:
    """The signature as a user reads it: arguments in order, then tracing-context entries."""
    signature = event.signature
    if signature is None:
        return {change.argument or change.field: change.after
                for change in event.lowering_changes or ()}
    return {**signature.describe(),
            **{f"context {name}": value for name, value in signature.context.items()}}


def _what_differs(first: dict[int, tuple[Event, int]], parts: dict[int, Part]) -> list[str]:
    """What the sessions of these processes record to differ, where they first compiled the
    signature: versions and backend, the JAX configuration traced under, the traces of the
    function before, the values read at trace time that changed later."""
    out = []
    indices = sorted(i for i in first if i in parts)
    for name in ("jax_version", "python_version", "backend"):
        values = {i: str(getattr(parts[i].session.environment, name)) for i in indices}
        if len(set(values.values())) > 1:
            out.append(f"{name.replace('_', ' ')}: {_by_value(values)}")
    contexts = {}
    for i in indices:
        event = first[i][0]
        context = dict(parts[i].session.base_context)
        if event.signature is not None:
            context.update(event.signature.context)
        contexts[i] = context
    for name in sorted({name for c in contexts.values() for name in c}):
        values = {i: contexts[i].get(name, "(not set)") for i in indices}
        if len(set(values.values())) > 1:
            out.append(f"jax config {name}: {_by_value(values)}")
    history = {i: str(first[i][1]) for i in indices}
    if len(set(history.values())) > 1:
        out.append(f"traces of the function before this signature's first compile: "
                   f"{_by_value(history)}")
    event = first[indices[0]][0]
    key = portable_key(event.function, event.defined_at)
    for i in indices:
        changed = sorted({c.variable for c in parts[i].session.stale_captures
                          if portable_key(c.function, c.defined_at) == key})
        if changed:
            out.append(f"values read at trace time that changed during the run on process {i}: "
                       + ", ".join(changed))
    return out


def _by_value(values: dict[int, str]) -> str:
    """``None on process 0; 'highest' on process 1``."""
    grouped: dict[str, list[int]] = {}
    for i, value in sorted(values.items()):
        grouped.setdefault(value, []).append(i)
    return "; ".join(
        f"{shown(value, SHOWN_SIGNATURE)} on process{'es' if len(where) > 1 else ''} "
        + ", ".join(map(str, where)) for value, where in grouped.items())


def _diverge(f: FunctionByProcess, lanes: dict[int, _Lane],
             parts: dict[int, Part]) -> Divergence | None:
    compiles = {i: sum(e.compiled for e in lane.events) for i, lane in lanes.items()}
    programs = _programs(lanes, parts)
    sequences: dict[str, list[Any]] = {
        "compile count": [compiles[i] for i in lanes],
        "signatures": [tuple(tuple(sorted(_values(e).items())) for e in lane.events
                             if e.signature is not None) for lane in lanes.values()],
        "causes": [tuple((c.code, c.argument) for c in lane.causes)
                   for lane in lanes.values()],
        "trace errors": [tuple(e.error.type for e in lane.events if e.error)
                         for lane in lanes.values()],
    }
    aspects = tuple(a for a in ASPECTS if (a == "programs" and programs)
                    or (a in sequences and len(set(sequences[a])) > 1))
    if not aspects:
        return None
    steps = {i: [_step(e, c, bool(programs)) for e, c in zip(lane.events, lane.causes,
                                                             strict=True)]
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
                      tuple(_differences(lanes, at)), tuple(programs))


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
