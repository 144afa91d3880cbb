"""An event while the recorder is still filling it in (``Draft``), and how it is frozen into
the session's immutable ``Event``; the summary of an exception raised while tracing; and the
bare name of a function as the monitoring events spell it (``jit(f)``)."""

from __future__ import annotations

from dataclasses import dataclass

from recompile_cli.session.cache_key import CacheKeyInfo
from recompile_cli.session.model import (
    CacheOutcome,
    Change,
    CompileCost,
    Event,
    Leaf,
    Owner,
    Signature,
    TraceError,
)


@dataclass
class Draft:
    """An event while it is still being filled in (mutable, owned by the recorder)."""

    function: str
    defined_at: str | None
    owner: Owner
    call_site: str | None
    call_index: int | None
    depth: int
    start: float
    traced: bool = False
    lowered: bool = False
    compiled: bool = False
    trace_seconds: float = 0.0
    lower_seconds: float = 0.0
    compile_seconds: float = 0.0
    signature: Signature | None = None
    lowering_changes: tuple[Change, ...] | None = None
    error: TraceError | None = None
    persistent_cache: CacheOutcome | None = None
    cache_saved_seconds: float = 0.0
    jaxpr_id: int | None = None  # pairs a trace with the lowering of the jaxpr it produced
    call_of: str | None = None
    lower_start: float | None = None
    compile_start: float | None = None
    id: int = 0  # creation order, stable while the event is still being filled in
    cache_key: CacheKeyInfo | None = None  # the persistent-cache key (capture.jax.cache_key)
    cost: CompileCost | None = None  # the lowered program's profile (capture.jax.cost)


def bare(name: str | None) -> str | None:
    """``jit(f)`` -> ``f``: the monitoring events name lowering and compile stages that way."""
    if name and name.startswith("jit(") and name.endswith(")"):
        return name[4:-1]
    return name


def trace_error(exc: BaseException, leaves: dict[str, Leaf]) -> TraceError:
    """Summarise an exception raised while tracing, naming the argument it is about."""
    message = str(exc).strip()
    argument = None
    marker = "depends on the value of the argument "
    if marker in message:
        argument = message.split(marker, 1)[1].split()[0].rstrip(".,")
    else:
        for path in leaves:
            if f"argument {path}" in message:
                argument = path
                break
    first_line = message.splitlines()[0] if message else ""
    return TraceError(type=type(exc).__name__, message=first_line, argument=argument)


def freeze(seq: int, d: Draft) -> Event:
    return Event(
        seq=seq, function=d.function, defined_at=d.defined_at, owner=d.owner,
        call_site=d.call_site, call_index=d.call_index, depth=d.depth, traced=d.traced,
        compiled=d.compiled, start_seconds=max(d.start, 0.0), trace_seconds=d.trace_seconds,
        lower_seconds=d.lower_seconds, compile_seconds=d.compile_seconds,
        signature=d.signature, lowering_changes=d.lowering_changes, error=d.error,
        persistent_cache=d.persistent_cache, cache_saved_seconds=d.cache_saved_seconds,
        call_of=d.call_of, lower_start_seconds=d.lower_start,
        compile_start_seconds=d.compile_start, cache_key=d.cache_key, cost=d.cost)
