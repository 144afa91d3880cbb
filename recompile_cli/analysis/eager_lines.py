"""Compiles at the user's lines of code that is not the user's: JAX's eager operations
(``x[mask]``, ``-x``, ``jnp.mean(x)`` run outside any jitted function), the ``jax.numpy`` and
``jax.random`` functions JAX jits itself, and a library's jitted functions (a model's
initialisers), each filed under the line of the user's that made it: the innermost user frame on
the stack (``Event.call_site``), which is the line that pays.

Per line (``EagerLine``): its compiles, trace/lower/compile seconds, and its operations
(``LineOp``: the function JAX compiled, how often, what changed between its compiles). A line
*storms* when one of its operations compiles again and again for new inputs (``STORM``
compiles or more at that line, all but its first for new inputs; a derived jaxpr of
``jax.grad`` is not new): a mask's count of True, a growing list, a shape that is new each
step. A line that compiles many operations once each (a model built op by op) costs once and
does not storm. The fix is ``advice.eager``'s.

Pure: no JAX. ``max_eager_compiles`` (the gate) reads ``EagerLine.compiles``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.session.locations import parse
from recompile_cli.session.model import CauseCode, Event, Owner, Session

STORM = 10  # compiles of one operation at one line (for new inputs, but its first) that storm
_NOT_NEW = (CauseCode.DERIVED_JAXPR,)  # a compile for a transformation, not for new inputs
# What changed in the inputs, preferred to the primary cause: an eager primitive's function
# object is JAX's cached callable for its parameters (a new one per output shape, say), and its
# tracing context is JAX's default one, so neither says what the user's line changed.
_INPUTS = (CauseCode.SHAPE, CauseCode.DTYPE, CauseCode.WEAK_TYPE, CauseCode.STATIC_VALUE,
           CauseCode.TREE_STRUCTURE, CauseCode.SHARDING)


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
        """Whether one of its operations compiled ``STORM`` times or more for new inputs."""
        return any(op.again + 1 >= STORM for op in self.ops)

    @property
    def worst(self) -> LineOp:
        """The operation that compiled again most (then the most compiled)."""
        return max(self.ops, key=lambda op: (op.again, op.compiles))


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
    first = events[0]
    again = [(e, _input_change(causes[e.seq])) for e in events[1:]
             if causes[e.seq][0].code not in _NOT_NEW]
    codes = Counter(c.code for _, c in again)  # a new shape, where there is one, says most
    code = (CauseCode.SHAPE if CauseCode.SHAPE in codes
            else codes.most_common(1)[0][0] if codes else None)
    same = [c for _, c in again if c.code == code]
    # the last change of one value's kind (``i32[3] -> i32[5]``) where there is one: one
    # operation at a line may serve several values of different dtypes
    last = next((c for c in reversed(same) if _kind(c.before) == _kind(c.after)),
                same[-1] if same else None)
    return LineOp(name=first.function, owner=first.owner, defined_at=first.defined_at,
                  compiles=len(events), again=len(again), seconds=_cost(events),
                  again_seconds=_cost(e for e, _ in again),
                  change=_change(last) if last is not None else None, code=code)


def _kind(value: str | None) -> str | None:
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
