"""Forecast: the compiles a spec's calls would need, found by tracing, never by running.

``Forecaster`` stands in for running a call: it makes the arguments abstract (``abstract``,
``spec_array``) and calls ``jit(f).trace(...)`` (with ``lower``, ``.lower()``) under the same
recorder, whose hooks see the same cache misses; ``forecast_session`` turns the session into the
predicted compiles. Never executes or compiles the target. Public JAX API only (plus
``signatures.is_committed``); imports JAX at its top, so only a forecast may import it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from msgspec.structs import replace

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax.arguments.signatures import is_committed
from recompile_cli.session.model import Change, Event, Session

if TYPE_CHECKING:  # the spec (and PyYAML) are imported by the commands that read a spec
    from recompile_cli.inputs.spec import ArraySpec, ScalarSpec, Spec

UNSPECIFIED = "UnspecifiedValue"  # how the lowering hook names an argument without a sharding
NOTE = ("forecast: nothing was executed or compiled; each compile is predicted from a trace of "
        "the target on abstract arguments (jax.ShapeDtypeStruct), so compile seconds are 0 and "
        "re-compilations are ranked by their trace seconds (`trace s`)")
NOTE_LOWERED = ("forecast: nothing was executed or compiled; each compile is predicted from a "
                "trace and lowering of the target on abstract arguments (jax.ShapeDtypeStruct), "
                "so compile seconds are 0 and re-compilations are ranked by their trace and "
                "lowering seconds (`trace+lower s`)")


class NotTraceable(TypeError):
    """The target has no ``.trace()``: only ``jax.jit`` functions can be forecast."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What one call's trace produced: its jaxpr (kept alive, so that its ``id`` stays its own)
    and the sharding of each committed argument leaf, by argument path."""

    jaxpr: Any
    shardings: tuple[tuple[str, str], ...]


@dataclass
class Forecaster:
    """The ``invoke`` of a forecast: traces (and with ``lower`` lowers) each call, recording
    per call what the compile key of a real run would be; ``notes`` says where a forecast
    cannot be exact (side effects that only run when the program executes)."""

    lower: bool = False
    records: list[CallRecord | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _effects_noted: set[str] = field(default_factory=set)

    def __call__(self, call: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> None:
        self.records.append(None)  # a call whose trace raises compiles nothing
        trace = getattr(call, "trace", None)
        if trace is None:
            raise NotTraceable(f"{getattr(call, '__name__', call)!r} has no .trace(): forecast "
                               "traces jax.jit functions only (JAX >= 0.4.30)")
        abstract_args = [abstract(a) for a in args]
        abstract_kwargs = {k: abstract(v) for k, v in kwargs.items()}
        traced = trace(*abstract_args, **abstract_kwargs)
        if self.lower:
            traced.lower()
        jaxpr = getattr(traced, "jaxpr", None)
        self.records[-1] = CallRecord(jaxpr, committed_shardings(call, args, kwargs))
        self._note_effects(call, jaxpr)

    def _note_effects(self, call: Callable[..., Any], jaxpr: Any) -> None:
        effects = getattr(jaxpr, "effects", None)
        name = str(getattr(stack.python_function(call), "__name__", call))
        if not effects or name in self._effects_noted:
            return
        self._effects_noted.add(name)
        kinds = ", ".join(sorted({type(e).__name__ for e in effects}))
        self.notes.append(f"forecast: {name} has side effects that run only when it executes "
                          f"({kinds}); if they change Python state that its tracing reads, the "
                          "real run can compile differently than forecast")


def spec_array(value: ArraySpec | ScalarSpec) -> Any:
    """What ``materialize`` would build for a spec's array or scalar, unbuilt: its abstract
    value (a jax.Array or numpy array of the spec is uncommitted and strongly typed)."""
    shape = value.shape if hasattr(value, "shape") else ()
    return jax.ShapeDtypeStruct(shape, jax.dtypes.canonicalize_dtype(jnp.dtype(value.dtype)))


def abstract(value: Any) -> Any:
    """``value`` with every array leaf made abstract; ``value`` itself when it holds none (so
    that a static value keeps its identity)."""
    leaves, treedef = jax.tree_util.tree_flatten(value)
    if not any(isinstance(leaf, (jax.Array, np.ndarray, np.generic)) for leaf in leaves):
        return value
    return jax.tree_util.tree_unflatten(treedef, [_abstract_leaf(leaf) for leaf in leaves])


def _abstract_leaf(leaf: Any) -> Any:
    if isinstance(leaf, (np.ndarray, np.generic)):
        return jax.ShapeDtypeStruct(np.shape(leaf), leaf.dtype)
    if not isinstance(leaf, jax.Array):
        return leaf
    sharding = leaf.sharding if is_committed(leaf) else None
    weak = bool(getattr(leaf, "weak_type", False))
    try:
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding, weak_type=weak)
    except TypeError:  # JAX < 0.4.36: no weak_type
        if weak and sharding is None:
            return jax.core.ShapedArray(leaf.shape, leaf.dtype, weak_type=True)
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)


def committed_shardings(call: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
                        ) -> tuple[tuple[str, str], ...]:
    """(argument path, sharding) of each array leaf committed to a sharding, which a real call
    puts in jit's lowering key (an uncommitted array follows the computation)."""
    out = []
    for name, value in _named_arguments(call, args, kwargs):
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            if isinstance(leaf, jax.Array) and is_committed(leaf):
                out.append((name + jax.tree_util.keystr(path), str(leaf.sharding)))
    return tuple(out)


def _named_arguments(call: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
                     ) -> list[tuple[str, Any]]:
    try:
        function: Any = stack.python_function(call)
        bound = inspect.signature(function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    return list(bound.arguments.items())


def forecast_session(session: Session, forecaster: Forecaster, spec: Spec) -> Session:
    """The forecast of a recorded run of ``spec``'s calls to one target (``predicted``), or the
    session as it is when nothing was traced (importing the target failed)."""
    keys = list(session.calls)
    return predicted(session, forecaster, spec, keys[0]) if keys else session


def predicted(session: Session, forecaster: Forecaster, spec: Spec, key: str) -> Session:
    """The forecast session: ``session`` (recorded while tracing) with each compile the run
    would make marked ``compiled``, plus the compiles without a re-trace that only a sharding
    change causes (trace-only forecasts), and the forecast's notes as warnings."""
    lower = forecaster.lower
    events = [replace(e, compiled=True) if _compiles(e, key, lower) else e
              for e in session.events]
    if not lower:
        events = _sharding_compiles(events, forecaster.records, spec, key)
    events = [replace(e, seq=i) for i, e in enumerate(events)]
    notes = [NOTE_LOWERED if lower else NOTE, *forecaster.notes]
    return replace(session, events=tuple(events),
                   warnings=(*session.warnings, *notes))


def _compiles(event: Event, key: str, lower: bool) -> bool:
    """True for a top-level miss of one of the target's calls that a real run compiles."""
    if (event.depth or event.compiled or event.error is not None or event.call_of != key
            or event.call_index is None):
        return False
    return event.lower_start_seconds is not None if lower else event.traced


def _sharding_compiles(events: list[Event], records: list[CallRecord | None], spec: Spec,
                       key: str) -> list[Event]:
    """``events`` with a compile added for each call that reuses an earlier trace with a new
    set of committed shardings (jit's lowering key changes, its trace key does not)."""
    traces = {e.call_index: e for e in events
              if e.compiled and e.traced and e.depth == 0 and e.call_of == key}
    first: dict[int, Event] = {}
    seen: dict[int, dict[tuple[tuple[str, str], ...], None]] = {}
    last: dict[int, tuple[tuple[str, str], ...]] = {}
    added: list[Event] = []
    for index, record in enumerate(records):
        if record is None or record.jaxpr is None:
            continue
        jaxpr = id(record.jaxpr)
        trace = traces.get(index)
        if trace is not None:
            first[jaxpr], seen[jaxpr], last[jaxpr] = trace, {record.shardings: None}, \
                record.shardings
            continue
        if jaxpr not in first or record.shardings in seen[jaxpr]:
            continue
        seen[jaxpr][record.shardings] = None
        changes = _changes(last[jaxpr], record.shardings)
        last[jaxpr] = record.shardings
        case = spec.cases[index]
        start = max((e.end_seconds for e in events + added
                     if e.call_index is not None and e.call_index <= index), default=0.0)
        added.append(replace(first[jaxpr], traced=False, trace_seconds=0.0, lower_seconds=0.0,
                             lower_start_seconds=None, start_seconds=start,
                             lowering_changes=changes, call_index=index,
                             call_site=case.site or case.label))
    return sorted(events + added, key=lambda e: e.start_seconds)


def _changes(before: tuple[tuple[str, str], ...], after: tuple[tuple[str, str], ...]
             ) -> tuple[Change, ...]:
    old, new = dict(before), dict(after)
    return tuple(Change("in_shardings", old.get(path, UNSPECIFIED), new.get(path, UNSPECIFIED),
                        path) for path in {**old, **new} if old.get(path) != new.get(path))
