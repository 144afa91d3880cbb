"""Which compiles of a run a warm-up plan can make again, and why the others cannot: a
``Session`` -> ``Plan`` (pure: no JAX, no I/O).

Every top-level compile with a recorded replay (``session.warmup.Replay``) is a candidate; one
signature per distinct replay is planned, in the order the run first compiled them. A compile
that cannot be replayed is never left out silently: it becomes an ``Unplayable`` with the fact
that stops it, e.g. a lambda or closure jitted per call (no module holds the jitted object), a
static value without a literal form, a sharding of an unknown kind, a function of JAX's or a
library's own, or a jaxpr derived by ``grad``/``vmap`` outside jit.

A saved session may be someone else's, and hostile. Everything a plan would write as code is
checked here first (``dotted``, ``literal``, ``checked_value``): a name is a dotted path of
identifiers, a literal is text that ``ast.literal_eval`` reads back to the same text, an axis
type is one of JAX's; anything else makes its signature unplayable, never a line of code.
``render.warmup_plan`` writes only what passed, and checks it again as it writes.
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass

from recompile_cli.analysis.shorten import shown
from recompile_cli.session import codec
from recompile_cli.session.model import (
    Event,
    HookMode,
    Leaf,
    Owner,
    Session,
    Signature,
    function_key,
)
from recompile_cli.session.warmup import (
    Argument,
    Node,
    NodeKind,
    Placement,
    Replay,
    Value,
    ValueKind,
)

AXIS_TYPES = ("Auto", "Explicit", "Manual")
_DTYPE = re.compile(r"[a-z][a-z0-9_]*|key<[a-z][a-z0-9_]*>")
LABEL = 160  # the longest signature label shown


class Unwritable(ValueError):
    """Something of a replay that a plan cannot write as code; the message says what."""


@dataclass(frozen=True, slots=True)
class Planned:
    """One signature the plan compiles: the jitted object (``module``, ``qualname``), the
    arguments and leaves to build, and where the run first compiled it."""

    function: str
    key: str  # the function key (``name@file:line``)
    module: str
    qualname: str
    label: str  # the signature in short, for comments and reports
    call_site: str | None
    compile_seconds: float
    arguments: tuple[Argument, ...]
    leaves: tuple[tuple[str, Leaf], ...]  # (path, leaf) in flattening order
    placements: tuple[Placement | None, ...]  # per leaf
    files: dict[str, str]
    context: dict[str, str]  # tracing-context entries that differ from the run's start

    @property
    def importable(self) -> bool:
        """Whether a module holds the jitted object (else only its first call can warm it)."""
        return bool(self.module)


@dataclass(frozen=True, slots=True)
class Unplayable:
    """Compiles of one function that a plan cannot make, for one reason: how many, the first
    one's signature and call site."""

    function: str
    owner: Owner
    label: str
    call_site: str | None
    reason: str
    compiles: int = 1


@dataclass(frozen=True, slots=True)
class Plan:
    """What a warm-up plan of a session holds (``plan``)."""

    target: str
    jax_version: str
    backend: str
    planned: tuple[Planned, ...]
    unplayable: tuple[Unplayable, ...]
    # signatures of jits no module holds (made inside a function): warmed at their first call
    at_first_call: tuple[Planned, ...] = ()

    def functions(self) -> dict[str, list[Planned]]:
        """The planned signatures grouped by function key, in the order first compiled."""
        out: dict[str, list[Planned]] = {}
        for planned in self.planned:
            out.setdefault(planned.key, []).append(planned)
        return out

    def first_call_functions(self) -> dict[str, list[Planned]]:
        """Every function a first call can warm up (``run --after-warmup`` on a script without
        a main guard, a jit made inside a function): the importable ones, then the others."""
        out = self.functions()
        for planned in self.at_first_call:
            out.setdefault(planned.key, []).append(planned)
        return out


def plan(session: Session) -> Plan:
    """The warm-up plan of a session: each distinct signature it compiled that can be made
    again, and each one that cannot, with why."""
    planned: list[Planned] = []
    first_calls: list[Planned] = []
    unplayable: dict[tuple[str, str], Unplayable] = {}
    seen: set[bytes] = set()
    for event in session.events:
        if not event.compiled or event.depth or event.error is not None:
            continue
        reason = replay_problem(session, event)
        if reason is not None and _first_call_only(session, event):
            assert event.replay is not None and event.signature is not None
            identity = codec.encode((function_key(event.function, event.defined_at),
                                     event.replay, list(event.signature.leaves.items())))
            if identity not in seen:
                try:
                    first_calls.append(_planned(event, event.replay, event.signature,
                                                session.base_context))
                    seen.add(identity)
                except Unwritable:
                    pass
        if reason is None:
            assert event.replay is not None and event.signature is not None
            identity = codec.encode((function_key(event.function, event.defined_at),
                                     event.replay, list(event.signature.leaves.items())))
            if identity in seen:
                continue
            try:
                found = _planned(event, event.replay, event.signature, session.base_context)
            except Unwritable as exc:
                reason = str(exc)
            else:
                seen.add(identity)
                planned.append(found)
                continue
        key = (function_key(event.function, event.defined_at), reason)
        known = unplayable.get(key)
        if known is None:
            unplayable[key] = Unplayable(event.function, event.owner,
                                         signature_label(event.signature), event.call_site,
                                         reason)
        else:
            unplayable[key] = Unplayable(known.function, known.owner, known.label,
                                         known.call_site, reason, known.compiles + 1)
    env = session.environment
    return Plan(session.target, env.jax_version, env.backend, tuple(planned),
                tuple(unplayable.values()), tuple(first_calls))


def _first_call_only(session: Session, event: Event) -> bool:
    """Whether the compile of ``event`` can be made again at its function's first call only:
    everything of it is replayable but the jitted object, which no module holds."""
    replay = event.replay
    if (replay is None or replay.function is not None or replay.problem is None
            or event.owner != Owner.USER or event.signature is None
            or session.environment.hook_mode == HookMode.PUBLIC_ONLY):
        return False
    return (all(a.problem is None for a in replay.arguments)
            and all(p.problem is None for p in replay.placements))


def planned_of(session: Session, event: Event) -> Planned | None:
    """The plan entry of one compile (what a plan would hold to make it again); None when it
    cannot be replayed or written (``replay_problem``, ``Unwritable``)."""
    if replay_problem(session, event) is not None and not _first_call_only(session, event):
        return None
    assert event.replay is not None and event.signature is not None
    try:
        return _planned(event, event.replay, event.signature, session.base_context)
    except Unwritable:
        return None


def replay_problem(session: Session, event: Event) -> str | None:
    """Why the compile of ``event`` cannot be replayed, from what was recorded; None when its
    replay may be written (``plan`` then checks every part of it)."""
    if event.owner == Owner.JAX:
        return ("JAX's own function (an eager operation, or a jax.numpy / jax.random function "
                "called outside jit): not one of yours to import")
    if event.owner == Owner.LIBRARY:
        return "a library's internal function: the plan warms up your own jitted functions"
    replay = event.replay
    if replay is None or event.signature is None:
        if session.environment.hook_mode == HookMode.PUBLIC_ONLY:
            return "recorded in public-only mode: no signature (needs JAX >= 0.9)"
        if not event.traced and event.lowering_changes is None:
            return ("a jaxpr derived from it by grad/vjp/vmap outside jit: there is no jitted "
                    "object to lower")
        return "no replay was recorded for this compile"
    if replay.problem is not None or replay.function is None:
        return f"the jitted object cannot be imported: {replay.problem or 'unknown'}"
    for argument in replay.arguments:
        if argument.problem is not None:
            return f"argument {argument.name}: {argument.problem}"
    for placement in replay.placements:
        if placement.problem is not None:
            return f"a sharding the plan cannot build: {placement.problem}"
    return None


def _planned(event: Event, replay: Replay, sig: Signature, base_context: dict[str, str]
             ) -> Planned:
    """The checked plan entry of one compile (``Unwritable`` naming what fails a check); a
    jitted object that no module holds has no ``module`` (a first call warms it up)."""
    module, qualname = reference(replay.function) if replay.function is not None else ("", "")
    for argument in replay.arguments:
        if not argument.name:
            raise Unwritable("an argument without a name")
        if argument.keyword and not _identifier(argument.name):
            raise Unwritable(f"keyword argument {shown(argument.name, 60)!r} is not a name")
        if argument.static is not None:
            try:
                checked_value(argument.static)
            except Unwritable as exc:
                raise Unwritable(f"static argument {argument.name}: {exc}") from None
        else:
            try:
                _check_tree(argument.tree)
            except Unwritable as exc:
                raise Unwritable(f"argument {argument.name}: {exc}") from None
    leaves = tuple(sig.leaves.items())
    wanted = sum(node.kind == NodeKind.LEAF for a in replay.arguments for node in a.tree)
    if wanted != len(leaves):
        raise Unwritable(f"its arguments' pytrees have {wanted} leaves and its signature "
                         f"{len(leaves)} (a library wrapper's arguments?)")
    for path, leaf in leaves:
        if not _DTYPE.fullmatch(leaf.dtype):
            raise Unwritable(f"leaf {shown(path, 60)} has the dtype {shown(leaf.dtype, 40)!r}, "
                             "which the plan does not build")
    placements = _placements(replay, len(leaves))
    for name, path in replay.files.items():
        dotted(name)
        if not isinstance(path, str) or not path:
            raise Unwritable(f"module {name}: no file")
    changed = {k: v for k, v in sig.context.items() if base_context.get(k) != v}
    return Planned(event.function, function_key(event.function, event.defined_at), module,
                   qualname, signature_label(sig), event.call_site, event.compile_seconds,
                   replay.arguments, leaves, placements, dict(replay.files), changed)


def _placements(replay: Replay, count: int) -> tuple[Placement | None, ...]:
    if not replay.leaf_placements:
        return (None,) * count
    if len(replay.leaf_placements) != count:
        raise Unwritable("its placements do not match its leaves")
    out: list[Placement | None] = []
    for index in replay.leaf_placements:
        if index == 0:
            out.append(None)
            continue
        if not 0 < index <= len(replay.placements):
            raise Unwritable("a leaf's placement is out of range")
        placement = replay.placements[index - 1]
        check_placement(placement)
        out.append(placement)
    return tuple(out)


def check_placement(placement: Placement) -> None:
    """``Unwritable`` unless the plan can build ``placement`` from its parts."""
    if placement.kind == "device":
        if len(placement.devices) != 1:
            raise Unwritable("a device placement names one device")
        return
    if placement.kind != "mesh":
        raise Unwritable(f"a placement of kind {shown(placement.kind, 30)!r}")
    size = 1
    for dim in placement.mesh_shape:
        size *= dim
    if not placement.mesh_shape or size != len(placement.devices) or not placement.devices:
        raise Unwritable("a mesh whose shape does not match its devices")
    if len(placement.axis_names) != len(placement.mesh_shape):
        raise Unwritable("a mesh whose axis names do not match its shape")
    if placement.axis_types and (len(placement.axis_types) != len(placement.mesh_shape)
                                 or any(t not in AXIS_TYPES for t in placement.axis_types)):
        raise Unwritable("a mesh with unknown axis types")
    entries = literal(placement.spec)
    if not isinstance(entries, tuple) or not all(
            e is None or isinstance(e, str)
            or (isinstance(e, tuple) and all(isinstance(n, str) for n in e)) for e in entries):
        raise Unwritable("a PartitionSpec that is not a tuple of axis names")


def _check_tree(nodes: tuple[Node, ...], depth: int = 0) -> None:
    """The nodes form one pytree in pre-order, each of a kind the plan can write."""
    needed = 1
    for node in nodes:
        if needed == 0:
            raise Unwritable("its pytree has nodes after its end")
        needed -= 1
        if node.kind == NodeKind.LEAF or node.kind == NodeKind.NONE:
            if node.arity:
                raise Unwritable("a leaf with children")
        elif node.kind == NodeKind.DICT:
            if len(node.keys) != node.arity:
                raise Unwritable("a dict whose keys do not match its children")
            for key in node.keys:
                checked_value(key, depth + 1)
        elif node.kind in (NodeKind.NAMEDTUPLE, NodeKind.CUSTOM):
            reference(node.type or "")
            if node.aux is not None:
                checked_value(node.aux, depth + 1)
        elif node.kind not in (NodeKind.TUPLE, NodeKind.LIST):
            raise Unwritable(f"a pytree node of kind {shown(str(node.kind), 30)!r}")
        needed += node.arity
    if needed:
        raise Unwritable("its pytree ends early")


def checked_value(value: Value, depth: int = 0) -> None:
    """``Unwritable`` unless ``value`` (and every part of it) can be written as code."""
    if depth > 50:
        raise Unwritable("a value nested too deeply")
    kind = value.kind
    if kind == ValueKind.LITERAL:
        literal(value.text)
    elif kind in (ValueKind.REF, ValueKind.DATACLASS, ValueKind.NAMEDTUPLE, ValueKind.MAPPING):
        reference(value.text)
    elif kind == ValueKind.DTYPE:
        if not _DTYPE.fullmatch(value.text) or value.text.startswith("key<"):
            raise Unwritable(f"the dtype {shown(value.text, 40)!r}")
    elif kind == ValueKind.TREEDEF:
        if value.items or value.text:
            raise Unwritable("a treedef value with items")
        _check_tree(value.nodes, depth + 1)
    elif kind not in (ValueKind.TUPLE, ValueKind.LIST, ValueKind.DICT):
        raise Unwritable(f"a value of kind {shown(str(kind), 30)!r}")
    if kind != ValueKind.TREEDEF and value.nodes:
        raise Unwritable("a value with pytree nodes that is not a treedef")
    if kind in (ValueKind.DICT, ValueKind.MAPPING) and len(value.items) % 2:
        raise Unwritable("a dict value with a key and no value")
    if kind == ValueKind.DATACLASS and (len(value.names) != len(value.items)
                                        or not all(map(_identifier, value.names))):
        raise Unwritable("a dataclass value whose fields are not names")
    for item in value.items:
        checked_value(item, depth + 1)


def literal(text: str) -> object:
    """The value of a literal's text; ``Unwritable`` unless ``ast.literal_eval`` reads it and
    writing that value gives the same text back (so the text is exactly that value)."""
    try:
        found = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise Unwritable(f"the value {shown(text, 60)} does not read back as a literal") \
            from None
    if repr(found) != text:
        raise Unwritable(f"the value {shown(text, 60)} does not read back as itself")
    return found


def reference(text: str) -> tuple[str, str]:
    """(module, qualified name) of a ``module:qualified.name`` reference, both checked to be
    dotted paths of identifiers (``Unwritable`` otherwise)."""
    module, sep, qualname = text.partition(":")
    if not sep:
        raise Unwritable(f"the reference {shown(text, 60)!r} is not module:name")
    return dotted(module), dotted(qualname)


def dotted(text: str) -> str:
    """``text`` when it is a dotted path of identifiers that are not keywords (``__main__``,
    ``pkg.mod``, ``Class.method``); ``Unwritable`` otherwise."""
    if not text or not all(map(_identifier, text.split("."))):
        raise Unwritable(f"{shown(text, 60)!r} is not a dotted name")
    return text


def _identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii() and not keyword.iskeyword(text)


def signature_label(sig: Signature | None) -> str:
    """A signature in short, as plans and warm-up reports show it: ``x=f32[32,8],
    n=static=3``."""
    if sig is None:
        return ""
    return shown(", ".join(f"{path}={text}" for path, text in sig.describe().items()), LABEL)


def unplayable_by_reason(plan: Plan) -> dict[str, list[Unplayable]]:
    """The compiles a plan cannot make, grouped by reason (in the order first seen)."""
    out: dict[str, list[Unplayable]] = {}
    for item in plan.unplayable:
        out.setdefault(item.reason, []).append(item)
    return out
