"""Compiles at the user's lines of code that is not the user's: JAX's eager operations
(``x[mask]``, ``-x``, ``jnp.mean(x)`` run outside any jitted function), the ``jax.numpy`` and
``jax.random`` functions JAX jits itself, and a library's jitted functions (a model's
initialisers), each filed under the line of the user's that made it: the innermost user frame on
the stack (``Event.call_site``), which is the line that pays.

Per line (``EagerLine``): its compiles, trace/lower/compile seconds, and its operations
(``LineOp``: the function JAX compiled, how often, what changed between its compiles). A line
*storms* when one *operation* compiles again and again there (``STORM`` compiles or more of
it for one recorded change): the same function with the same kind of inputs (the same
argument paths, dtypes, ranks, static values and structure), compiled either for new sizes
(``SHAPE``: a mask's count of True, a growing list, a sweep over sizes) or for the same inputs
with a new function object each time (``NEW_FUNCTION``: a closure made anew each call, for a
program with a body; a single primitive's new function object is new parameters, another
operation). A compile of the same name for another kind of inputs (a new rank or dtype: the
next layer of a model, a library's next set-up step) is another operation compiled once, and
a derived jaxpr of ``jax.grad`` is not new: a line that compiles many operations once each (a
model built or differentiated op by op, a library's set-up reached from one call) costs once
and does not storm. The fix is ``advice.eager``'s, by the change that repeats.

Pure: no JAX. ``max_eager_compiles`` (the gate) reads ``EagerLine.compiles``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.session.locations import parse, path_of
from recompile_cli.session.model import CauseCode, Event, Owner, Session, Signature

STORM = 10  # compiles of one operation at one line, for one repeated change, that storm
_NOT_NEW = (CauseCode.DERIVED_JAXPR,)  # a compile for a transformation, not for new inputs
# What changed in the inputs, preferred to the primary cause where a compile has no signature
# (public-only hooks): an eager primitive's function object is JAX's cached callable for its
# parameters (a new one per output shape, say), and its tracing context is JAX's default one,
# so neither says what the user's line changed.
_INPUTS = (CauseCode.SHAPE, CauseCode.DTYPE, CauseCode.WEAK_TYPE, CauseCode.STATIC_VALUE,
           CauseCode.TREE_STRUCTURE, CauseCode.SHARDING)
SHAPE, NEW_FUNCTION = CauseCode.SHAPE, CauseCode.NEW_FUNCTION  # what makes one operation again


@dataclass(frozen=True, slots=True)
class LineOp:
    """One operation compiled at a line: the function JAX compiled (``gather``, ``_mean``, a
    library's ``init``), whose it is, its compiles there and their seconds; ``again`` counts
    the compiles after its first there that were for new inputs, and ``change`` says what
    changed in the last of them (``shape at args[1]: i32[11,1] -> i32[21,1]``)."""

    name: str
    owner: Owner
    defined_at: str | None
    compiles: int
    again: int
    seconds: float
    again_seconds: float = 0.0  # what the compiles for new inputs cost
    change: str | None = None
    code: CauseCode | None = None  # the most frequent cause of ``again``
    # the most compiles of this operation for one repeated change (``code``): its first compile
    # with one kind of inputs and the compiles after it for new sizes, or for the same inputs
    # with a new function object; ``STORM`` or more storm
    repeats: int = 1
    new_sizes: int = 0  # of ``again``: for new sizes of the same kind of inputs
    new_functions: int = 0  # ... for the same inputs with a new function object
    repeated_seconds: float = 0.0  # what the compiles again for ``code`` cost

    @property
    def repeated(self) -> int:
        """Its compiles again for its repeated change (``code``): what a fix of it saves."""
        if self.code == SHAPE:
            return self.new_sizes
        return self.new_functions if self.code == NEW_FUNCTION else self.again

    @property
    def storm(self) -> bool:
        """Whether it compiled ``STORM`` times or more for one repeated change."""
        return self.repeats >= STORM

    @property
    def package(self) -> str:
        """The installed package that defines it (``numpyro``, ``jax``), else its owner."""
        match = re.search(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)",
                          path_of(self.defined_at) or "")
        return match.group(1).removesuffix(".py") if match else str(self.owner)


@dataclass(frozen=True, slots=True)
class EagerLine:
    """The compiles of code not yours made at one line of yours (``line``: ``file:line
    (function)``), most compiled operation first; ``host_callback`` is the callback API the
    line ran inside (``jax.debug.callback``), when it did."""

    line: str
    compiles: int
    again: int
    seconds: float
    ops: tuple[LineOp, ...]
    host_callback: str | None = None

    @property
    def again_seconds(self) -> float:
        """What its compiles for new inputs cost (what a fix saves)."""
        return math.fsum(op.again_seconds for op in self.ops)

    @property
    def storm(self) -> bool:
        """Whether one of its operations compiled ``STORM`` times or more for one repeated
        change (``LineOp.storm``)."""
        return any(op.storm for op in self.ops)

    @property
    def storming(self) -> tuple[LineOp, ...]:
        """Its operations that storm, most repeated first."""
        return tuple(sorted((op for op in self.ops if op.storm), key=lambda op: -op.repeats))

    @property
    def storm_again(self) -> int:
        """The compiles that its storming operations made again for their repeated change
        (what their fix saves)."""
        return sum(op.repeated for op in self.storming)

    @property
    def storm_again_seconds(self) -> float:
        return math.fsum(op.repeated_seconds for op in self.storming)

    @property
    def worst(self) -> LineOp:
        """The operation that repeated most (then compiled again most, then the most
        compiled)."""
        return max(self.ops, key=lambda op: (op.repeats, op.again, op.compiles))


@dataclass(frozen=True, slots=True)
class EagerReport:
    """The lines of a session that compiled code not yours, most compiles first."""

    lines: tuple[EagerLine, ...] = ()
    storms: tuple[EagerLine, ...] = ()  # the lines that storm, most compiles first

    @property
    def compiles(self) -> int:
        return sum(line.compiles for line in self.lines)

    @property
    def seconds(self) -> float:
        return math.fsum(line.seconds for line in self.lines)


def is_eager(event: Event) -> bool:
    """Whether an event is a compile of code not yours made at a line of yours outside any
    jitted function of yours: top level, compiled, JAX's or a library's, with a user call site
    (not a call label)."""
    return (event.compiled and event.depth == 0 and event.error is None
            and event.owner != Owner.USER and parse(event.call_site) is not None)


def analyse_eager_lines(session: Session, causes: dict[int, tuple[Cause, ...]]
                        ) -> EagerReport:
    """Every line of yours that compiled code not yours, with its operations, most compiles
    first (counts, not seconds, so that the order does not depend on the machine's load)."""
    by_line: dict[str, dict[tuple[str, str | None], list[Event]]] = {}
    for event in session.events:
        if is_eager(event):
            assert event.call_site is not None
            ops = by_line.setdefault(event.call_site, {})
            ops.setdefault((event.function, event.defined_at), []).append(event)
    lines = [_line(line, ops, causes) for line, ops in by_line.items()]
    lines.sort(key=lambda found: -found.compiles)  # stable: ties in the order first seen
    return EagerReport(tuple(lines), tuple(found for found in lines if found.storm))


def _line(line: str, ops: dict[tuple[str, str | None], list[Event]],
          causes: dict[int, tuple[Cause, ...]]) -> EagerLine:
    found = [_op(events, causes) for events in ops.values()]
    found.sort(key=lambda op: -op.compiles)  # stable: ties in the order first compiled
    callbacks = [e.host_callback for events in ops.values() for e in events if e.host_callback]
    return EagerLine(line=line, compiles=sum(op.compiles for op in found),
                     again=sum(op.again for op in found),
                     seconds=math.fsum(op.seconds for op in found), ops=tuple(found),
                     host_callback=Counter(callbacks).most_common(1)[0][0] if callbacks else None)


def _op(events: list[Event], causes: dict[int, tuple[Cause, ...]]) -> LineOp:
    """One function's compiles at a line, taken apart into operations: each kind of inputs
    (``_kind``) is one operation, whose compiles after its first are for new sizes (``SHAPE``)
    or for the same inputs with a new function object (``NEW_FUNCTION``, only for a program
    with a body: a primitive's new function object is new parameters, another operation)."""
    first = events[0]
    again: list[tuple[Event, Cause]] = []
    per_kind: dict[Hashable, Counter[CauseCode]] = {}
    seen: dict[Hashable, Event] = {}  # the last compile of each kind of inputs
    inputs_seen: set[Hashable] = set()
    counted_sizes = _one_count(e.signature for e in events if e.signature is not None
                               and causes[e.seq][0].code not in _NOT_NEW)
    for event in events:
        found = causes[event.seq]
        if found[0].code in _NOT_NEW:
            continue
        if event.signature is None:  # no signature (public-only): every compile but the first
            if event is not first:
                again.append((event, _input_change(found)))
            continue
        kind, inputs = _kind(event.signature), _inputs(event.signature)
        previous = seen.get(kind)
        seen[kind] = event
        if previous is None:
            inputs_seen.add(inputs)
            per_kind[kind] = Counter()
            continue
        if inputs not in inputs_seen:
            inputs_seen.add(inputs)
            if kind not in counted_sizes:
                continue  # sizes that vary apart (the next layer of a model): another operation
            change = _shape_change(previous.signature, event.signature)
        elif _has_body(event):
            change = next((c for c in found if c.code == CauseCode.NEW_FUNCTION),
                          Cause(CauseCode.NEW_FUNCTION))
        else:
            continue  # a primitive with new parameters: another operation, compiled once
        per_kind[kind][change.code] += 1
        again.append((event, change))
    # the change that repeats most for one operation (a new size first, on a tie)
    families = sorted(((n, c) for counts in per_kind.values() for c, n in counts.items()),
                      key=lambda found: (-found[0], found[1] != CauseCode.SHAPE))
    code: CauseCode | None
    if families:
        repeats, code = families[0]
    else:  # no signatures: every compile but the first, as recorded
        codes = Counter(c.code for _, c in again)
        code = (CauseCode.SHAPE if CauseCode.SHAPE in codes
                else codes.most_common(1)[0][0] if codes else None)
        repeats = len(again)
    same = [c for _, c in again if c.code == code]
    # the last change of one value's kind (``i32[3] -> i32[5]``) where there is one: one
    # operation at a line may serve several values of different dtypes
    last = next((c for c in reversed(same) if _dtype(c.before) == _dtype(c.after)),
                same[-1] if same else None)
    return LineOp(name=first.function, owner=first.owner, defined_at=first.defined_at,
                  compiles=len(events), again=len(again), seconds=_cost(events),
                  again_seconds=_cost(e for e, _ in again),
                  change=_change(last) if last is not None else None, code=code,
                  repeats=repeats + 1, new_sizes=len([1 for _, c in again if c.code == SHAPE]),
                  new_functions=len([1 for _, c in again if c.code == NEW_FUNCTION]),
                  repeated_seconds=_cost(e for e, c in again if c.code == code))


def _kind(signature: Signature) -> Hashable:
    """What makes one operation of a function's compiles: its inputs with their sizes left
    out (paths, dtypes, ranks, weak types, placements, static values, structure)."""
    return (tuple((path, leaf.dtype, len(leaf.shape), leaf.weak_type, leaf.sharding)
                  for path, leaf in signature.leaves.items()),
            tuple(signature.static.items()), tuple(signature.structure.items()))


def _one_count(signatures: Iterable[Signature]) -> set[Hashable]:
    """The kinds of inputs whose sizes vary as one count: every size that differs between
    its compiles is, within each compile, the same number (a mask's count of True flowing
    through its gather, select and sum; a swept length), not sizes that vary apart (a model's
    layers: ``f32[4,16]``, ``f32[1,16]``, ``f32[4,24]``)."""
    families: dict[Hashable, list[Signature]] = {}
    for signature in signatures:
        families.setdefault(_kind(signature), []).append(signature)
    out = set()
    for kind, members in families.items():
        sizes = [[(path, axis, size) for path, leaf in member.leaves.items()
                  for axis, size in enumerate(leaf.shape)] for member in members]
        varying = {(path, axis) for path, axis, size in sizes[0]
                   if any((path, axis, size) not in other for other in sizes[1:])}
        if all(len({size for path, axis, size in member if (path, axis) in varying}) <= 1
               for member in sizes):
            out.add(kind)
    return out


def _inputs(signature: Signature) -> Hashable:
    """Its inputs, sizes included."""
    return (tuple((path, leaf.shape) for path, leaf in signature.leaves.items()),
            _kind(signature))


def _shape_change(before: Signature | None, after: Signature | None) -> Cause:
    """The first argument whose size changed between two compiles of one kind of inputs."""
    assert before is not None and after is not None
    for path, leaf in after.leaves.items():
        old = before.leaves.get(path)
        if old is not None and old.shape != leaf.shape:
            return Cause(CauseCode.SHAPE, argument=path, before=old.short, after=leaf.short)
    return Cause(CauseCode.SHAPE)


def _has_body(event: Event) -> bool:
    """Whether its program has more than one primitive (a closure's code, a loop's body), so
    that a new function object with the same inputs is the same code made anew; unknown
    without the program's cost (private hooks): no."""
    cost = event.cost
    return cost is not None and (cost.equations > 1 or cost.in_bodies > 0)


def _dtype(value: str | None) -> str | None:
    """``i32`` of ``i32[3,1]``."""
    return None if value is None else value.split("[", 1)[0]


def _input_change(found: tuple[Cause, ...]) -> Cause:
    """The first cause that names a change of the inputs, else the primary one."""
    return next((c for c in found if c.code in _INPUTS), found[0])


def _change(cause: Cause) -> str:
    """``shape at args[1]: i32[11,1] -> i32[21,1]`` (what the cause names of it)."""
    text = str(cause.code)
    if cause.argument:
        text += f" at {cause.argument}"
    if cause.before is not None and cause.after is not None:
        text += f": {cause.before} -> {cause.after}"
    return text


def _cost(events: Iterable[Event]) -> float:
    try:
        return math.fsum(e.trace_seconds + e.lower_seconds + e.compile_seconds for e in events)
    except ValueError:  # inf + -inf
        return math.nan
