"""Why a compile is slow: the compile-cost section of every report, from each event's
``CompileCost`` (``capture.jax.programs.cost``).

Per function (its largest compiled program): the top lines of the user's code by equations, each
with the compile seconds apportioned by its share of the equations, and the patterns with their
fix and what the fix would save: a Python loop unrolled while tracing, a large constant baked
into the program, and a function compiled on its own and also inlined as a large part of other
compiled functions (worded as the cost it is: often expected, e.g. a loss also evaluated
alone). Pure: no JAX, no pandas, no printing.
"""

from __future__ import annotations

from dataclasses import dataclass

from recompile_cli.session.locations import display, parse
from recompile_cli.session.model import (
    NO_USER_FRAME,
    CompileCost,
    Event,
    HookMode,
    Owner,
    Session,
    function_key,
)

UNROLLED_MIN_REPEATS = 10  # a line repeating one group of primitives this often...
UNROLLED_MIN_SHARE = 0.5  # ...and producing this share of the program is an unrolled loop
TOP_LINES = 5
INLINED_MIN_SHARE = 0.2  # a function inlined into a caller is named from this share of it...
INLINED_MIN_EQUATIONS = 200  # ...and this many equations
_KINDS = ("unrolled_loop", "large_constant", "inlined_twice")

NO_PRIVATE_HOOKS = ("compile cost (equations per source line, constants) needs the private "
                    "hooks (hook mode private, JAX >= 0.9); this session was recorded with "
                    "hook mode public-only")


@dataclass(frozen=True, slots=True)
class CostLine:
    """One line of the user's code in a function's largest compile."""

    location: str
    equations: int
    share: float  # of the compile's equations
    seconds: float  # the compile's seconds apportioned by ``share``
    repeats: int = 0  # copies of one group of primitives (0: none found)


@dataclass(frozen=True, slots=True)
class CostPattern:
    """A named cause of compile cost: ``kind`` is ``unrolled_loop``, ``large_constant`` or
    ``inlined_twice``; ``message`` says where, how big, the fix and what it saves."""

    kind: str
    function: str
    location: str | None
    message: str
    equations_saved: int = 0
    seconds_saved: float = 0.0
    bytes_saved: int = 0


@dataclass(frozen=True, slots=True)
class FunctionCost:
    """One function's compile cost: its compiles, their seconds and equations, and the
    largest compile's lines and constants."""

    key: str
    function: str
    defined_at: str | None
    compiles: int
    compile_seconds: float  # all its compiles
    equations: int  # of its largest compile
    in_bodies: int  # of those, in scan/while/cond/remat bodies (each body counted once)
    module_ops: int | None
    constants: int
    constants_bytes: int
    lines: tuple[CostLine, ...]
    capped: bool  # attribution stopped at capture.jax.programs.cost.EQUATION_LIMIT equations
    walked: int = 0  # equations attributed to lines
    module_ops_bounded: bool = False  # module_ops is a lower bound ("at least")


@dataclass(frozen=True, slots=True)
class CompileCostReport:
    """The section: the functions by compile seconds, the patterns, and a note when the
    session has no cost data."""

    functions: tuple[FunctionCost, ...]
    patterns: tuple[CostPattern, ...]
    note: str | None = None


def size_text(nbytes: int) -> str:
    """``16.0 MB`` (MB = 2**20 bytes), ``512 KB``, ``100 B``."""
    if nbytes >= 1 << 20:
        return f"{nbytes / (1 << 20):.1f} MB"
    if nbytes >= 1 << 10:
        return f"{nbytes / (1 << 10):.0f} KB"
    return f"{nbytes} B"


def largest_program(events: list[Event]) -> tuple[int, Event | None]:
    """The equations of the largest compiled program among ``events``, and its event."""
    costed = [e for e in events if e.cost is not None]
    if not costed:
        return 0, None
    event = max(costed, key=lambda e: _cost(e).equations)
    return _cost(event).equations, event


def top_line_text(event: Event) -> str:
    """``prog.py:14 produced 1,200 of them (a group repeated 300 times)``; "" without lines;
    "at least" when attribution stopped at its bound (``CompileCost.capped``)."""
    lines = event.cost.lines if event.cost else ()
    if not lines:
        return ""
    top = lines[0]
    repeats = f" (a group repeated {top.repeats:,} times)" if top.repeats else ""
    bound = "at least " if event.cost is not None and event.cost.capped else ""
    return f"{display(top.location)} produced {bound}{top.equations:,} of them{repeats}"


def analyse_cost(session: Session, owners: tuple[Owner, ...] = (Owner.USER,)
                 ) -> CompileCostReport:
    """The compile-cost section for the functions of ``owners`` (the user's by default)."""
    groups: dict[str, list[Event]] = {}
    for event in session.events:
        if event.compiled and event.depth == 0 and event.owner in owners:
            groups.setdefault(function_key(event.function, event.defined_at), []).append(event)
    if not any(e.cost is not None for events in groups.values() for e in events):
        # Sessions saved by an earlier recompile-cli have no cost data either: nothing to say.
        public = session.environment.hook_mode == HookMode.PUBLIC_ONLY
        return CompileCostReport((), (), NO_PRIVATE_HOOKS if groups and public else None)
    functions: list[FunctionCost] = []
    patterns: list[CostPattern] = []
    for key, events in groups.items():
        _, largest = largest_program(events)
        if largest is None:
            continue
        row = _function_cost(key, events, largest)
        functions.append(row)
        patterns += _unrolled(row, largest)
        patterns += _constants(row, largest)
    patterns += _inlined(groups)
    functions.sort(key=lambda f: (-f.compile_seconds, f.key))
    patterns.sort(key=lambda p: (_KINDS.index(p.kind), -p.seconds_saved, -p.bytes_saved))
    return CompileCostReport(tuple(functions), tuple(patterns))


def _function_cost(key: str, events: list[Event], largest: Event) -> FunctionCost:
    cost = _cost(largest)
    seconds = largest.compile_seconds
    total = max(cost.equations, 1)
    lines = tuple(CostLine(_paid_at(line.location, largest), line.equations,
                           line.equations / total, seconds * line.equations / total,
                           line.repeats)
                  for line in cost.lines[:TOP_LINES])
    return FunctionCost(key, largest.function, largest.defined_at, len(events),
                        sum(e.compile_seconds for e in events), cost.equations, cost.in_bodies,
                        cost.module_ops,
                        cost.constants, cost.constants_bytes, lines, cost.capped, cost.walked,
                        cost.module_ops_bounded)


def _paid_at(location: str, event: Event) -> str:
    """Where the user pays for equations no line of theirs made (the user's jit of a library's
    function: ``jax.jit(nuts.step)``): the line of the user's that made the jitted function
    (``Signature.created_at``: the ``jax.jit`` call), else the line that called it; the
    location as it is otherwise."""
    if location != NO_USER_FRAME:
        return location
    made = event.signature.created_at if event.signature is not None else None
    called = parse(event.call_site)
    return made or (f"{called.path}:{called.line}" if called is not None else location)


def _cost(event: Event) -> CompileCost:
    assert event.cost is not None
    return event.cost


def _unrolled(row: FunctionCost, event: Event) -> list[CostPattern]:
    cost = _cost(event)
    out = []
    for line in cost.lines:
        if (line.repeats < UNROLLED_MIN_REPEATS
                or line.equations < UNROLLED_MIN_SHARE * cost.equations):
            continue
        saved = line.equations - line.group
        seconds = event.compile_seconds * saved / max(cost.equations, 1)
        where = display(line.location)
        out.append(CostPattern(
            "unrolled_loop", row.function, line.location,
            f"{where} produced {line.equations:,} of {cost.equations:,} equations (a Python "
            f"loop unrolled {line.repeats:,} times): use jax.lax.scan or jax.lax.fori_loop; "
            f"that leaves about {cost.equations - saved:,} equations (~{seconds:.2f} s of the "
            f"{event.compile_seconds:.2f} s compile saved, estimated by equation share)",
            equations_saved=saved, seconds_saved=seconds))
    return out


def _constants(row: FunctionCost, event: Event) -> list[CostPattern]:
    out = []
    for constant in _cost(event).large_constants:
        name = f" {constant.variable}" if constant.variable else ""
        defined = f" (defined at {display(constant.defined_at)})" if constant.defined_at else ""
        captured = (f" captured at {display(constant.captured_at)}" if constant.captured_at
                    else "")
        shape = ",".join(map(str, constant.shape))
        out.append(CostPattern(
            "large_constant", row.function, constant.captured_at,
            f"{size_text(constant.nbytes)} {constant.kind}{name} ({constant.dtype}[{shape}])"
            f"{defined}{captured} is embedded in the program of {row.function}: pass it as an "
            f"argument (the program gets {size_text(constant.nbytes)} smaller, and XLA no "
            "longer constant-folds it)",
            bytes_saved=constant.nbytes))
    return out


def _inlined(groups: dict[str, list[Event]]) -> list[CostPattern]:
    """Functions compiled on their own and also inlined into other compiled functions, named
    only where they are a significant part of a caller (``INLINED_MIN_SHARE`` of its equations
    and at least ``INLINED_MIN_EQUATIONS``): a small shared helper is not worth a word."""
    into: dict[str, list[tuple[str, int, float]]] = {}
    for key, events in groups.items():
        total, largest = largest_program(events)
        if largest is None:
            continue
        for callee, equations in _cost(largest).inlined:
            if (callee in groups and callee != key and equations >= INLINED_MIN_EQUATIONS
                    and equations >= INLINED_MIN_SHARE * total):
                seconds = largest.compile_seconds * equations / max(total, 1)
                into.setdefault(callee, []).append((largest.function, equations, seconds))
    out = []
    for callee, callers in into.items():
        standalone = groups[callee][0]
        name = standalone.function
        names = ", ".join(sorted({caller for caller, _, _ in callers}))
        equations = max(n for _, n, _ in callers)
        seconds = sum(s for _, _, s in callers)
        out.append(CostPattern(
            "inlined_twice", name, standalone.defined_at,
            f"{name} ({equations:,} equations) is compiled on its own "
            f"({_times(len(groups[callee]))}) and again inside {names}: a jitted function "
            f"called from another jitted function is inlined and compiled as part of it "
            f"(~{seconds:.2f} s of {names}'s compile, estimated by equation share). That is "
            f"expected when {name} is also used alone, e.g. a loss evaluated outside the "
            f"training step; if its standalone result is what {names} computes, compute it "
            "once and pass it in",
            equations_saved=sum(n for _, n, _ in callers), seconds_saved=seconds))
    return out


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"
