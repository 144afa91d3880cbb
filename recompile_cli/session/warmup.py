"""What a recording keeps to make its compiles again ahead of time (``Replay``, one per event: the
user's jitted object and each argument as passed, or the ``problem`` that stops it; never a
guess), and the warm-up plan that ran before a workload (``Warmup``). Frozen msgspec structs that
leave their defaults out; no JAX. It all comes from someone else's program: ``render.warmup_plan``
validates every name, reference and literal before it writes code.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class _Data(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """Frozen, compared by value, written without its defaults; plain data trees that can hold
    no reference cycle, so the garbage collector does not walk them (a recording keeps a replay
    per top-level trace)."""


class ValueKind(StrEnum):
    """How a ``Value`` is written: a literal, a reference to an object of a module, a container
    of values, an instance of a dataclass or NamedTuple built from its fields, or a dtype."""

    LITERAL = "literal"  # ``text``: a repr that ``ast.literal_eval`` reads back as the value
    REF = "ref"  # ``text``: ``module:qualified.name``, an object the module holds
    TUPLE = "tuple"
    LIST = "list"
    DICT = "dict"  # ``items``: key, value, key, value, ...
    DATACLASS = "dataclass"  # ``text``: the class (a REF's text); ``names``: its fields
    NAMEDTUPLE = "namedtuple"  # ``text``: the class; ``items``: its fields in order
    DTYPE = "dtype"  # ``text``: a numpy dtype's name (``float32``)
    TREEDEF = "treedef"  # ``nodes``: a ``jax.tree_util.PyTreeDef``'s nodes (its leaves: LEAF)
    MAPPING = "mapping"  # ``text``: a Mapping class built from a dict; ``items`` as DICT's


class Value(_Data, frozen=True, omit_defaults=True):
    """A Python value the plan can write as code (static arguments, dict keys, a custom pytree
    node's aux data)."""

    kind: ValueKind
    text: str = ""
    items: tuple[Value, ...] = ()
    names: tuple[str, ...] = ()
    nodes: tuple[Node, ...] = ()  # a TREEDEF's, in pre-order


class NodeKind(StrEnum):
    """One node of an argument's pytree."""

    LEAF = "leaf"  # the next of the event's leaves
    NONE = "none"
    TUPLE = "tuple"
    LIST = "list"
    DICT = "dict"  # ``keys``: its keys in JAX's order (sorted)
    NAMEDTUPLE = "namedtuple"  # ``type``: the class
    CUSTOM = "custom"  # any other registered node: ``type`` and its ``aux`` data


class Node(_Data, frozen=True, omit_defaults=True):
    """One node of a dynamic argument's pytree, in pre-order: its ``arity`` children follow."""

    kind: NodeKind
    arity: int = 0
    keys: tuple[Value, ...] = ()
    type: str | None = None  # ``module:qualified.name`` of a NAMEDTUPLE's or CUSTOM node's class
    aux: Value | None = None  # a CUSTOM node's aux data (None when it has none)


class Argument(_Data, frozen=True, omit_defaults=True):
    """One argument as the call passed it: by position or ``keyword``, static (``static``) or
    dynamic (``tree``), or what stops it from being written (``problem``)."""

    name: str
    keyword: bool = False
    static: Value | None = None
    tree: tuple[Node, ...] = ()
    problem: str | None = None


def references(arguments: tuple[Argument, ...]) -> list[str]:
    """Every ``module:qualified.name`` the arguments refer to (static values, dict keys, pytree
    node types and their data, the treedefs inside them), in the order found; unchecked."""
    out: list[str] = []
    values: list[Value] = []
    nodes: list[Node] = []
    for argument in arguments:
        values += [argument.static] if argument.static is not None else []
        nodes += argument.tree
    while values or nodes:
        for node in nodes:
            values += [*node.keys, *([node.aux] if node.aux is not None else [])]
            if node.type:
                out.append(node.type)
        nodes = []
        while values:
            item = values.pop()
            if item.kind in (ValueKind.REF, ValueKind.DATACLASS, ValueKind.NAMEDTUPLE,
                             ValueKind.MAPPING):
                out.append(item.text)
            values.extend(item.items)
            nodes.extend(item.nodes)
    return out


class Placement(_Data, frozen=True, omit_defaults=True):
    """Where one argument leaf lived when its call was lowered (jit's lowering key): committed
    to one device (``kind`` ``device``) or sharded over a mesh (``mesh``); ``problem`` for a
    sharding the plan cannot build. ``devices`` are device ids (a mesh's in its order)."""

    kind: str  # "device" or "mesh"
    devices: tuple[int, ...] = ()
    platform: str = ""
    mesh_shape: tuple[int, ...] = ()
    axis_names: tuple[str, ...] = ()
    axis_types: tuple[str, ...] = ()  # ``Auto``, ``Explicit``, ``Manual`` (empty: JAX's default)
    spec: str = ""  # the PartitionSpec's entries, as a literal tuple: ``('batch', None)``
    memory_kind: str | None = None
    problem: str | None = None


class Replay(_Data, frozen=True, omit_defaults=True):
    """How the call behind an event can be made again: ``function`` (``module:qualname`` of
    the jitted object, or None with ``problem`` saying why it is not importable), its
    ``arguments`` in call order (positional, then keywords sorted as JAX flattens them), and
    the placement of each leaf (``leaf_placements[i]`` is 0, not placed, or 1 + an index into
    ``placements``). ``files`` maps the modules it refers to, that a plan may have to load from
    a file (``__main__``: the script), to their files."""

    function: str | None
    arguments: tuple[Argument, ...] = ()
    problem: str | None = None
    files: dict[str, str] = msgspec.field(default_factory=dict)
    placements: tuple[Placement, ...] = ()
    leaf_placements: tuple[int, ...] = ()


class Skipped(_Data, frozen=True, omit_defaults=True):
    """A signature a warm-up plan has but did not compile on this machine, and why."""

    function: str
    signature: str
    reason: str


class FirstCall(_Data, frozen=True, omit_defaults=True):
    """The first call of a function that warmed up the plan's other signatures of it (a jit
    no module holds, or a script without a main guard): the function (``name@file:line``),
    when its warm-up ran, what it compiled, skipped, and could not compile (``failed``)."""

    function: str
    started_seconds: float
    ended_seconds: float
    compiled: int = 0
    skipped: tuple[Skipped, ...] = ()
    failed: tuple[Skipped, ...] = ()


class Warmup(_Data, frozen=True, omit_defaults=True):
    """A warm-up plan that ran before the workload (``run --after-warmup``, ``guard``).

    ``ended_seconds`` (seconds since the recording started): every event that starts after it
    is the workload's, but for a function warmed at its first call (``first_calls``): its
    events up to the end of that warm-up are the first call's and the warm-up's.
    ``compiled``: signatures the plan compiled; ``skipped``: what it has but did not compile
    here; ``error``: what the plan raised (the workload did not run then).
    ``at_first_call``: the plan compiled nothing up front (a script without a main guard) and
    warms each function at its first call; ``waiting``: the functions it would warm at their
    first call (``name@file:line``), streamed again as each first call warms one."""

    plan: str
    started_seconds: float
    ended_seconds: float
    compiled: int = 0
    skipped: tuple[Skipped, ...] = ()
    error: str | None = None
    at_first_call: bool = False
    waiting: tuple[str, ...] = ()
    first_calls: tuple[FirstCall, ...] = ()
