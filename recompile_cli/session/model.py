"""The recorded data: frozen, JSON-friendly records (``Session`` and its parts) that cross from
capture to analysis; never imports JAX or pandas.

They are ``msgspec.Struct`` classes with ``gc=False``: cheap to define (the measured process
imports this module before the target starts) and never walked by the garbage collector (plain
data trees, no cycles). Copy one with a change with ``msgspec.structs.replace``.
"""

from __future__ import annotations

import sys
from typing import Literal

import msgspec
from msgspec import field

from recompile_cli.ranges import Bytes, Count, Seconds
from recompile_cli.session.cache_key import CacheKeyInfo
from recompile_cli.session.kinds import CacheOutcome as CacheOutcome  # kinds: re-exported
from recompile_cli.session.kinds import CallKind as CallKind
from recompile_cli.session.kinds import CaptureScope as CaptureScope
from recompile_cli.session.kinds import CauseCode as CauseCode
from recompile_cli.session.kinds import EventKind as EventKind
from recompile_cli.session.kinds import FunctionKind as FunctionKind
from recompile_cli.session.kinds import HookMode as HookMode
from recompile_cli.session.kinds import Owner as Owner
from recompile_cli.session.kinds import SlowReason as SlowReason
from recompile_cli.session.locations import is_location
from recompile_cli.session.structures import treedef_text
from recompile_cli.session.warmup import Replay, Warmup

SCHEMA_VERSION = 1


def _intern(record: msgspec.Struct, *names: str) -> None:
    """One string for each repeated name: a loaded session repeats a few function names,
    definitions, call sites, dtypes and lines in many events (memory per event). Only exact
    ``str``: a subclass (a user's ``__name__``) is kept as it is."""
    for name in names:
        text = getattr(record, name)
        if type(text) is str:
            msgspec.structs.force_setattr(record, name, sys.intern(text))


# Counts, sizes and seconds are ``ranges``' types, checked on loading: a hand-edited or damaged
# file (a negative time, 7e64 s saved) is refused with the field's path, as any wrong type is.


class FunctionKey(msgspec.Struct, frozen=True, gc=False):
    """The identity of a function across function objects: its name and ``file:line``.

    Sessions store it as text, ``name@file:line`` (``str(key)``); ``parse`` reads that back.
    """

    name: str
    defined_at: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.defined_at}" if self.defined_at else self.name

    @classmethod
    def parse(cls, text: str) -> FunctionKey:
        name, sep, where = text.rpartition("@")
        if sep and name and is_location(where):
            return cls(name, where)
        return cls(text)


SYMBOLIC_DIM = -1  # a symbolic dimension's size in ``Leaf.shape`` (its text is in ``symbolic``)


class Leaf(msgspec.Struct, frozen=True, gc=False):
    """The abstract value of one traced array argument, as JAX keys its caches on it.

    A dimension that is not a number (a symbolic dimension of ``jax.export``,
    ``export.symbolic_shape("b")``) is ``SYMBOLIC_DIM`` in ``shape``, so that every size there
    is an integer, and its text (its expression: ``b``, ``2*b``) is in ``symbolic``, by axis.
    """

    shape: tuple[int, ...]
    dtype: str
    weak_type: bool = False
    sharding: str | None = None  # only when not the default (unsharded) placement
    symbolic: tuple[tuple[int, str], ...] = ()  # (axis, expression) of each symbolic dimension

    def __post_init__(self) -> None:
        _intern(self, "dtype")

    @property
    def dims(self) -> tuple[str, ...]:
        """Each dimension's text: its size, or a symbolic dimension's expression (``b``)."""
        texts = [str(size) for size in self.shape]
        for axis, text in self.symbolic:
            if 0 <= axis < len(texts):
                texts[axis] = text
        return tuple(texts)

    @property
    def short(self) -> str:
        """JAX's short notation, e.g. ``f32[100,100]``, ``~f32[]`` for weak types, ``f32[b,8]``
        with a symbolic dimension."""
        dims = self.dims if self.symbolic else map(str, self.shape)
        text = f"{_DTYPE_ABBREV.get(self.dtype, self.dtype)}[{','.join(dims)}]"
        if self.weak_type:
            text = "~" + text
        if self.sharding:
            text += f"({self.sharding})"
        return text


_DTYPE_ABBREV = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "complex64": "c64", "complex128": "c128", "bool": "bool",
}


class StaticClass(msgspec.Struct, frozen=True, gc=False):
    """How JAX tells one static value from the others of its argument: by its type,
    ``__hash__`` and ``__eq__``, not by its text. Two values of one argument of one function have
    the same ``number`` exactly when JAX finds them equal (a value no longer alive is compared
    by type, hash and text). ``type`` is the value's type (``Model``); ``identity`` says that
    the type compares by identity (``object.__eq__``): a new object is a new value even when it
    prints the same. ``equal_to`` numbers the earlier classes of the argument whose values are
    equal to this one (``==``, same hash) but of another type (``2`` and ``np.int64(2)``,
    ``Mode.TRAIN`` and ``'train'``), which JAX tells apart by type alone; ``convert`` is then
    the callable that gives them one type (``int``, ``Mode``). ``function``: the value is a
    function, shown by its name (``jax.nn.gelu``). ``ordinal``: how many earlier classes of
    the argument print the same (0: none); ``telling``: the value part by part, one
    ``path<TAB>description`` line each (``capture.jax.arguments.telling``), what tells apart
    values that print alike."""

    number: int
    type: str = ""
    identity: bool = False
    equal_to: tuple[int, ...] = ()
    convert: str = ""
    function: bool = False
    ordinal: int = 0
    telling: str = ""


class Signature(msgspec.Struct, frozen=True, gc=False):
    """Everything a jit cache keys on for one call, in a form that can be diffed without JAX.

    ``leaves`` maps argument paths (``x``, ``batch['x']``) to abstract values; ``static`` maps
    static argument names to ``repr`` of their values (a container as a node map by paths,
    ``cfg.steps``; equinox's static tuple by the user's paths: ``session.structures``);
    ``structure`` maps each top-level argument to its pytree structure;
    ``positional``/``keywords`` say how arguments were passed;
    ``context`` holds the tracing-context entries that differ from the session's base context;
    ``function_id`` tells function objects apart (a new lambda gets a new id) and
    ``function_kind`` says what kind of callable it was: ``function``, ``lambda``, ``partial``,
    ``bound_method`` or ``closure`` (a function defined inside another function).
    ``python_scalars`` names the leaves passed as Python scalars (``int``, ``float``...), to
    tell them from weakly typed arrays (``jnp.array(1.0)``); None where unknown.
    ``static_classes`` gives each static value's equality class (``StaticClass``), so that
    statics are compared as JAX compares them; where it is empty (sessions saved before it
    existed), by their text.
    ``created_at`` is the ``file:line`` of the user's code that made the function object, where
    it is known (``capture.code.origins.creation_site``); no cache key depends on it.
    """

    leaves: dict[str, Leaf] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)
    structure: dict[str, str] = field(default_factory=dict)
    positional: int = 0
    keywords: tuple[str, ...] = ()
    context: dict[str, str] = field(default_factory=dict)
    function_id: int = 0
    function_kind: FunctionKind = FunctionKind.FUNCTION
    static_classes: dict[str, StaticClass] = field(default_factory=dict)
    python_scalars: tuple[str, ...] | None = None  # leaves passed as Python scalars
    created_at: str | None = None  # file:line of the user's code that made the function object

    def describe(self) -> dict[str, str]:
        """Argument path -> short description, statics included, for reports."""
        out = {path: leaf.short for path, leaf in self.leaves.items()}
        out.update({name: f"static={treedef_text(value)}" for name, value in self.static.items()})
        return out


class Change(msgspec.Struct, frozen=True, gc=False):
    """One field of JAX's lowering key that changed without a re-trace (sharding, donation).

    ``argument`` names the argument for per-argument fields (``in_shardings``,
    ``donated_invars``); it is ``None`` for whole-function fields.
    """

    field: str
    before: str
    after: str
    argument: str | None = None


class TraceError(msgspec.Struct, frozen=True, gc=False):
    """An exception raised while tracing (e.g. ``TracerBoolConversionError``), or, when
    ``refused``, a call that JAX refused before any trace: a static argument it cannot hash,
    or whose ``__hash__`` or ``__eq__`` raised (``argument``: that static argument, or the
    part of it, where the call shows it; ``value_type`` and ``value``: that part's type and
    text, where known)."""

    type: str
    message: str
    argument: str | None = None
    refused: bool = False
    value_type: str | None = None
    value: str | None = None


NO_USER_FRAME = "<no user frame>"  # a ``LineCost.location`` for equations no user line made


class LineCost(msgspec.Struct, frozen=True, gc=False):
    """The jaxpr equations one line of the user's code produced (``CompileCost.lines``).

    ``in_bodies`` of them sit in ``scan``/``while``/``cond``/``remat`` bodies (each body counted
    once); ``group``/``repeats``: the line's equations are ``repeats`` copies of one group of
    ``group`` primitives (an unrolled Python loop), 0 when they are not."""

    location: str  # file:line
    equations: Count
    in_bodies: Count = 0
    group: Count = 0
    repeats: Count = 0

    def __post_init__(self) -> None:
        _intern(self, "location")


class ConstantCost(msgspec.Struct, frozen=True, gc=False):
    """A large constant baked into a compiled program: its size, the user line whose equation
    first reads it, and the variable holding it and where that is assigned, where found."""

    nbytes: Bytes
    shape: tuple[int, ...]
    dtype: str
    kind: str = "array"  # "numpy array" or "jax array"
    captured_at: str | None = None
    variable: str | None = None
    defined_at: str | None = None


class CompileCost(msgspec.Struct, frozen=True, gc=False):
    """What one compiled program is made of (``capture.jax.programs.cost``): its jaxpr equations
    (bodies of control flow counted once; ``walked`` < ``equations`` when attribution stopped at the
    cap), the top lines of the user's code by equations, the lowered module's operations, the
    constants baked in, and the jitted functions inlined into it (name, equations)."""

    equations: Count
    in_bodies: Count = 0
    walked: Count = 0
    lines: tuple[LineCost, ...] = ()
    module_ops: Count | None = None
    # module_ops is a lower bound: the walk stopped at capture.jax.programs.cost.MODULE_OP_LIMIT
    module_ops_bounded: bool = False
    constants: Count = 0
    constants_bytes: Bytes = 0
    large_constants: tuple[ConstantCost, ...] = ()
    inlined: tuple[tuple[str, Count], ...] = ()

    @property
    def capped(self) -> bool:
        return self.walked < self.equations


class FlattenCost(msgspec.Struct, frozen=True, gc=False):
    """What every call of one traced signature makes JAX's dispatch flatten, measured once at
    its trace (``capture.jax.flatten_cost``): the leaves and the inner pytree nodes of its
    dynamic arguments, how many of those nodes are custom (registered pytree classes, not
    tuple/list/dict/None/namedtuple) and the most common custom type, the seconds of one
    flatten, and the argument that carries most nodes."""

    leaves: Count
    nodes: Count
    custom_nodes: Count = 0
    seconds: float = 0.0
    argument: str | None = None
    argument_nodes: Count = 0
    node_type: str | None = None


class Event(msgspec.Struct, frozen=True, gc=False):
    """One cache miss of one function: a trace, a lowering and compile, or all of them.

    ``traced`` is a real re-trace of Python code; ``compiled`` an XLA backend compile.
    ``lowering_changes`` is set for a compile without re-trace: what changed in the lowering key;
    ``None`` means no previous lowering of that jaxpr existed (a jaxpr derived by grad/vmap).
    ``persistent_cache`` is ``hit``, ``miss_written`` or ``miss_not_written`` (compiled faster
    than JAX's minimum for writing) when a persistent compilation cache is configured;
    ``cache_key`` is then its key taken apart, the reason a miss was not written and the exact
    time a hit saved (``CacheKeyInfo``; private hooks only), and ``cache_saved_seconds`` that
    time where known (else JAX's figure, from whole seconds). ``replay`` (a top-level trace's,
    private hooks only) is how the call can be made again ahead of time (``session.warmup``).
    """

    seq: int
    function: str
    defined_at: str | None
    owner: Owner
    call_site: str | None
    call_index: Count | None  # which call of ``call_of`` (0-based) was running, where known
    depth: Count
    traced: bool
    compiled: bool
    start_seconds: Seconds
    trace_seconds: Seconds = 0.0
    lower_seconds: Seconds = 0.0
    compile_seconds: Seconds = 0.0
    signature: Signature | None = None
    lowering_changes: tuple[Change, ...] | None = None
    error: TraceError | None = None
    persistent_cache: CacheOutcome | None = None
    cache_saved_seconds: Seconds = 0.0
    call_of: str | None = None  # function key of the profiled target / counted function
    lower_start_seconds: Seconds | None = None  # when lowering began (seconds since the start)
    compile_start_seconds: Seconds | None = None
    cache_key: CacheKeyInfo | None = None  # the persistent-cache key taken apart (private hooks)
    cost: CompileCost | None = None  # what the compiled program holds (private hooks only)
    replay: Replay | None = None  # how to make this call again ahead of time (private hooks)
    flatten: FlattenCost | None = None  # what each call of this signature flattens (traces)
    # the compiled program's fingerprint (``capture.jax.programs.fingerprint``, ``MODULE/TARGET``):
    # equal for two compiles of the same program for the same devices; None where unknown
    # (private hooks only)
    program_fingerprint: str | None = None
    # JAX's or a library's top-level miss made by user code that runs inside a host callback:
    # that callback's API (``jax.debug.callback``), where the stack told (private hooks only)
    host_callback: str | None = None
    process: int | None = None  # merged sessions only: the jax.distributed process index

    def __post_init__(self) -> None:
        _intern(self, "function", "defined_at", "call_site")

    def stages(self) -> list[tuple[str, float, float]]:
        """(stage, start, seconds) for each stage that ran: trace, lower, compile."""
        out = [("trace", self.start_seconds, self.trace_seconds)] if self.traced else []
        if self.lower_start_seconds is not None:
            out.append(("lower", self.lower_start_seconds, self.lower_seconds))
        if self.compile_start_seconds is not None:
            out.append(("compile", self.compile_start_seconds, self.compile_seconds))
        return out

    @property
    def end_seconds(self) -> float:
        return max((start + seconds for _, start, seconds in self.stages()),
                   default=self.start_seconds)


class StaleCapture(msgspec.Struct, frozen=True, gc=False):
    """A global or closure variable read by traced code that changed after the trace."""

    function: str
    defined_at: str | None
    variable: str
    scope: CaptureScope
    traced_value: str
    current_value: str


class StaticDifference(msgspec.Struct, frozen=True, gc=False):
    """One field of a stale static: its path (``cfg.dropout``), the value the executable was
    compiled for, and the value it ran (or was traced again) with."""

    path: str
    compiled: str
    called: str


class StaleStatic(msgspec.Struct, frozen=True, gc=False):
    """A static argument equal (``__hash__``/``__eq__``) to the one an executable of
    ``function`` was compiled for while its state differs (``capture.stale_statics``): the
    cached executable runs with the old values. ``seen``: ``call`` when a counted call reused
    the executable (``--count-calls``), ``trace`` when a later trace of the function met the
    equal value with the other state; ``compares`` what the type's equality looks at;
    ``seen_times`` how often it was seen."""

    function: str
    defined_at: str | None
    argument: str
    type: str
    differences: tuple[StaticDifference, ...]
    compares: str
    seen: Literal["call", "trace"]
    seen_times: Count = 1


class SlowCalls(msgspec.Struct, frozen=True, gc=False):
    """The slow calls of one function with one signature for one reason: calls that JAX
    dispatched in Python without tracing, lowering or compiling (``SlowReason``).

    ``seconds`` is their measured Python dispatch (from JAX's parameter inference to its
    fast-path decision); ``call_site`` the user's line of the first of them; ``line`` the user's
    line responsible, where there is one (the ``jax.debug.callback`` that keeps the function off
    the fast path), and ``detail`` what holds there (``jax.debug.callback``); ``arguments`` the
    signature (``x: f32[10]``, shortened); ``first_seconds`` when the first of them ran."""

    function: str
    defined_at: str | None
    owner: Owner
    reason: SlowReason
    calls: Count
    seconds: float
    call_site: str | None = None
    line: str | None = None
    detail: str = ""
    arguments: str = ""
    kind: CallKind = CallKind.JIT
    first_seconds: float = 0.0
    process: int | None = None  # merged sessions only: the jax.distributed process index


class SlowCallWatch(msgspec.Struct, frozen=True, gc=False):
    """Whether the recording could see slow calls (``observable``; ``reason`` says why not),
    and the fast-path baseline measured in the same process at its end: the seconds of one
    cached call of a trivial jitted function (None where it was not measured)."""

    observable: bool
    reason: str | None = None
    fast_call_seconds: float | None = None


# ``SlowCallWatch.reason`` when ``--hook-mode public-only`` (not the JAX version) hid them.
PUBLIC_ONLY_CHOSEN = "the public-only hook mode was chosen"


class Environment(msgspec.Struct, frozen=True, gc=False):
    """What recorded the session. ``process_index``, ``process_count`` and ``host`` are set for
    a process of a ``jax.distributed`` job (``process_count`` > 1); ``backend`` is ``NO_BACKEND``
    when JAX's backend had not started when the recording stopped."""

    jax_version: str
    python_version: str
    backend: str
    hook_mode: HookMode
    compilation_cache_dir: str | None = None
    process_index: int | None = None
    process_count: int | None = None
    host: str | None = None


NO_BACKEND = "no backend"


class ProcessRecord(msgspec.Struct, frozen=True, gc=False):
    """One process of a merged session (``recompile-cli merge --save``): where its report came
    from and what belongs to it alone; its events carry ``process`` = ``index``."""

    index: Count
    source: str  # the report file it was merged from
    target: str
    wall_seconds: Seconds
    host: str | None = None
    jax_version: str | None = None
    calls: dict[str, Count] = field(default_factory=dict)
    target_exception: str | None = None
    # the process's own tracing context at its start (JAX's configuration: x64, matmul
    # precision, ...); empty in sessions merged before it was kept
    base_context: dict[str, str] = field(default_factory=dict)


class Session(msgspec.Struct, frozen=True, gc=False):
    """A finished recording: what ran, every event, and what went wrong around it."""

    environment: Environment
    target: str
    events: tuple[Event, ...]
    wall_seconds: Seconds
    base_context: dict[str, str] = field(default_factory=dict)
    calls: dict[str, Count] = field(default_factory=dict)  # function key -> calls, where known
    warnings: tuple[str, ...] = ()
    stale_captures: tuple[StaleCapture, ...] = ()
    target_exception: str | None = None
    schema_version: int = SCHEMA_VERSION
    processes: tuple[ProcessRecord, ...] = ()  # a merged session's processes, else empty
    warmup: Warmup | None = None  # the warm-up plan that ran before the workload, if any
    slow_calls: tuple[SlowCalls, ...] = ()  # the slow-call groups, in the order first seen
    slow_call_watch: SlowCallWatch | None = None  # None: recorded before slow calls were watched
    stale_statics: tuple[StaleStatic, ...] = ()  # statics equal to, but other than, compiled ones


class Outcome(msgspec.Struct, frozen=True, gc=False):
    """A finished run: its session, and how it ended."""

    session: Session
    failure: str | None  # one line when the target raised, exited or was interrupted
    interrupted: int | None = None  # the exit code of an interruption (130, 143)
    traceback: str | None = None  # the first exception's traceback, the user's frames


def function_key(name: str, defined_at: str | None) -> str:
    """The text form of ``FunctionKey(name, defined_at)``: ``name@file:line``."""
    return str(FunctionKey(name, defined_at))
