"""Wasted compiles: a compile whose program is one that its function already compiled.

Each compile carries its program's fingerprint (``Event.program_fingerprint``, from
``capture.jax.programs.fingerprint``: the lowered module without names or locations, and the
devices it is compiled for). A compile of a function (one name and ``defined_at``: a function
that the same line re-created is the same function) whose fingerprint equals an earlier compile's
of that function, in the same process, bought nothing: JAX's cache key differed in a component
that did not change the program (a static field the program never reads, a lambda made anew,
a weak type or a placement that lowers alike). Such a compile is ``same_program_as`` that earlier
compile (its ``seq``), priced at what it cost (trace, lowering and compile: all of it was
avoidable), and grouped per function and component with the reason and the fix that fits it.

A compile whose key changed in no component the causes name (a first compile, or ``unknown``:
after ``jax.clear_caches()`` or an evicted entry, the same signature compiled again) is never
counted, nor one whose fingerprint is unknown: no guess. Pure: no JAX.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.shorten import counted
from recompile_cli.session.model import (
    CauseCode,
    Event,
    HookMode,
    Owner,
    Session,
    function_key,
)

# a compile whose key changed in no component it names (``jax.clear_caches()``, an evicted
# entry): a compile of the same program again, but not one that a change of the code avoids
UNEXPLAINED = frozenset({CauseCode.FIRST_COMPILE, CauseCode.UNKNOWN})
NO_PRIVATE_HOOKS = ("wasted compiles need the private hooks (the lowered program of each "
                    "compile); this run used the public-only mode")
NOT_FINGERPRINTED = ("no compile of this run has a program fingerprint (a session saved by an "
                     "earlier recompile-cli, or recorded without the compile-cost profile): "
                     "wasted compiles cannot be told")


@dataclass(frozen=True, slots=True)
class WastedGroup:
    """The compiles of one function that bought nothing, for one component of JAX's cache key
    (``code``, at ``argument`` where there is one): how many, what they cost, why, the fix."""

    key: str  # the function's key (``function_key``)
    function: str
    defined_at: str | None
    owner: Owner
    code: CauseCode
    argument: str | None
    compiles: int
    seconds: float  # trace, lowering and compile of these compiles
    events: tuple[int, ...]  # their seqs
    same_program_as: int  # the seq of the first compile of that program
    why: str
    fix: str
    process: int | None = None


@dataclass(frozen=True, slots=True)
class WastedFunction:
    """One function's compiles, and how many of them bought nothing (and their seconds)."""

    key: str
    function: str
    defined_at: str | None
    owner: Owner
    compiles: int  # fingerprinted compiles
    programs: int  # distinct programs among them
    wasted: int
    seconds: float


@dataclass(frozen=True)
class WastedReport:
    """The run's wasted compiles: per event, per function that has any, and per group (most
    seconds first); ``fingerprinted``: compiles whose program is known;
    ``unknown``: compiles whose fingerprint is unknown; ``note``: why none could be told."""

    same_program_as: dict[int, int]  # event seq -> the seq of the earlier compile of that program
    functions: tuple[WastedFunction, ...] = ()
    groups: tuple[WastedGroup, ...] = ()
    fingerprinted: int = 0
    unknown: int = 0
    note: str | None = None

    def of(self, owners: tuple[Owner, ...]) -> list[WastedGroup]:
        return [g for g in self.groups if g.owner in owners]

    def compiles(self, owners: tuple[Owner, ...] = (Owner.USER,)) -> int:
        return sum(g.compiles for g in self.of(owners))

    def seconds(self, owners: tuple[Owner, ...] = (Owner.USER,)) -> float:
        return math.fsum(g.seconds for g in self.of(owners))


def wasted_compiles(session: Session, causes: dict[int, tuple[Cause, ...]]) -> WastedReport:
    """The wasted compiles of ``session`` (``causes``: each event's, primary first)."""
    first: dict[tuple[int | None, str, str], int] = {}  # (process, function, program) -> seq
    same: dict[int, int] = {}
    keys: dict[tuple[str, str | None], str] = {}
    counts: dict[str, list[int]] = {}  # key -> [compiles, programs, wasted]
    members: dict[tuple[str, int | None, CauseCode, str | None], list[Event]] = {}
    costs: dict[tuple[str, int | None, CauseCode, str | None], list[float]] = {}
    owners: dict[str, tuple[str, str | None, Owner]] = {}
    unknown = compiled = 0
    for event in session.events:
        if not event.compiled or event.error is not None:
            continue
        compiled += 1
        program = event.program_fingerprint
        if program is None:
            unknown += 1
            continue
        where = (event.function, event.defined_at)
        key = keys.get(where)
        if key is None:
            key = keys[where] = function_key(*where)
        if key not in owners or event.owner == Owner.USER:
            owners[key] = (event.function, event.defined_at, event.owner)
        tally = counts.setdefault(key, [0, 0, 0])
        tally[0] += 1
        earlier = first.setdefault((event.process, key, program), event.seq)
        if earlier == event.seq:
            tally[1] += 1
            continue
        cause = causes[event.seq][0]
        if cause.code in UNEXPLAINED:
            continue  # no component of the key changed: JAX's caches were cleared or evicted
        same[event.seq] = earlier
        tally[2] += 1
        group = (key, event.process, cause.code, _component(cause))
        members.setdefault(group, []).append(event)
        costs.setdefault(group, []).append(_cost(event))
    if not compiled or unknown == compiled:
        public = session.environment.hook_mode == HookMode.PUBLIC_ONLY
        note = None if not compiled else NO_PRIVATE_HOOKS if public else NOT_FINGERPRINTED
        return WastedReport({}, unknown=unknown, note=note)
    groups = [_group(group, owners[group[0]], events, costs[group], same)
              for group, events in members.items()]
    groups.sort(key=lambda g: (g.seconds != g.seconds, -g.seconds, -g.compiles))
    wasted_seconds: dict[str, list[float]] = {}
    for (key, *_), values in costs.items():
        wasted_seconds.setdefault(key, []).extend(values)
    functions = [WastedFunction(key, *owners[key], compiles=tally[0], programs=tally[1],
                                wasted=tally[2], seconds=_sum(wasted_seconds[key]))
                 for key, tally in counts.items() if tally[2]]
    functions.sort(key=lambda f: (f.owner != Owner.USER, -f.wasted, -f.seconds))
    return WastedReport(same, tuple(functions), tuple(groups), compiled - unknown, unknown)


def _cost(event: Event) -> float:
    trace = event.trace_seconds if event.depth == 0 else 0.0
    return trace + event.lower_seconds + event.compile_seconds


def _sum(values: list[float]) -> float:
    try:
        return math.fsum(values)
    except ValueError:  # inf + -inf
        return math.nan


def _group(group: tuple[str, int | None, CauseCode, str | None],
           who: tuple[str, str | None, Owner], events: list[Event], costs: list[float],
           same: dict[int, int]) -> WastedGroup:
    key, process, code, argument = group
    function, defined_at, owner = who
    seconds = _sum(costs)
    found = events[0].signature.static_classes.get(argument or "") if events[0].signature else None
    why, fix = explain(code, argument, len(events), seconds,
                       by_identity=found is not None and (found.function or found.identity))
    return WastedGroup(key, function, defined_at, owner, code, argument, len(events), seconds,
                       tuple(e.seq for e in events), same[events[0].seq], why, fix, process)


def _component(cause: Cause) -> str | None:
    """The part of the key that differed: the argument, narrowed to the fields of a static
    object whose text shows them (``cfg`` -> ``cfg.log_every`` for ``Config(..., log_every=10)``
    -> ``Config(..., log_every=20)``)."""
    argument = cause.argument
    if cause.code != CauseCode.STATIC_VALUE or not argument:
        return argument
    before, after = _fields(cause.before), _fields(cause.after)
    if before is None or after is None or before[0] != after[0] or before[1].keys() != after[
            1].keys():
        return argument
    changed = [name for name, value in after[1].items() if before[1][name] != value]
    if not changed or len(changed) == len(after[1]) > 1:
        return argument
    return ", ".join(f"{argument}.{name}" for name in changed)


_CALL = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.S)
_FIELD = re.compile(r"^\s*([A-Za-z_]\w*)=(.*)$", re.S)


def _fields(text: str | None) -> tuple[str, dict[str, str]] | None:
    """``Config(a=1, b=(2, 3))`` -> (``Config``, {a: 1, b: (2, 3)}); None for other text."""
    match = _CALL.match(text or "")
    if match is None:
        return None
    fields: dict[str, str] = {}
    for part in _split(match[2]):
        found = _FIELD.match(part)
        if found is None:
            return None
        fields[found[1]] = found[2].strip()
    return (match[1], fields) if fields else None


def _split(text: str) -> list[str]:
    """``text`` split at its top-level commas (brackets and quotes respected)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


def explain(code: CauseCode, argument: str | None, compiles: int, seconds: float,
            by_identity: bool = False) -> tuple[str, str]:
    """Why ``compiles`` compiles of a function bought nothing, and the fix for ``code``
    (``by_identity``: the static value is a function or an object compared by identity)."""
    paid = f"{counted(compiles, 'compile')} bought nothing ({seconds:.3f} s)"
    shown = f"`{argument}`" if argument else "an argument"
    root = argument.split(".")[0].split("[")[0] if argument else None
    if code == CauseCode.STATIC_VALUE and by_identity:
        return (f"{shown} is static and compared by identity: each new object (a function or "
                f"an object made again per call) compiled the same program again: {paid}",
                f"make `{root or 'it'}` once, outside the loop or the calling function, and "
                "pass that same object every call")
    if code == CauseCode.STATIC_VALUE:
        if argument and "." in argument:
            field = argument.split(", ")[0].split(".", 1)[1]
            return (f"{shown} is static, but the program does not depend on it: {paid}",
                    f"leave `{field}` out of the hash and equality of `{root}` (hash the config "
                    f"by what the program reads; for a dataclass, `field(compare=False)`), or "
                    f"take `{root}` out of static_argnames")
        return (f"{shown} is static, but the program does not depend on it: {paid}",
                f"take `{root or 'it'}` out of static_argnums/static_argnames (or stop passing "
                "it)")
    if code == CauseCode.NEW_FUNCTION:
        return (f"a new function object, made again at the same line, lowered to the same "
                f"program: {paid}",
                "create the function once (outside the loop or the calling function) and "
                "reuse it; pass what changes as an argument")
    if code == CauseCode.WEAK_TYPE:
        return (f"{shown} changed only in weak type (a Python scalar against an array), which "
                f"lowered to the same program: {paid}",
                f"pass {shown} as one kind every call (`jnp.asarray(value, dtype)`)")
    if code == CauseCode.SHARDING:
        return (f"{shown} changed placement or commitment only, which lowered to the same "
                f"program: {paid}",
                f"place {shown} the same way every call (`jax.device_put` it once, before "
                "the loop)")
    if code == CauseCode.TRACING_CONTEXT:
        return (f"the tracing context {shown} changed, but the program does not depend on it: "
                f"{paid}", "set it once around every call of the function, not around some")
    if code == CauseCode.ARG_PASSING:
        return (f"{shown} was passed another way (by position or keyword), which lowered to "
                f"the same program: {paid}", "call the function one way")
    if code == CauseCode.TREE_STRUCTURE:
        return (f"{shown} changed container only, which lowered to the same program: {paid}",
                f"pass {shown} in one container type every call")
    return (f"JAX's cache key changed ({code}), but the program did not: {paid}", "")
