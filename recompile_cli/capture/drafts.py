"""An event while the recorder is still filling it in (``Draft``), and how it is frozen into
the session's immutable ``Event`` (``Draft.frozen``); the summary of an exception raised while
tracing; and the bare name of a function as the monitoring events spell it (``jit(f)``)."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from recompile_cli.session.model import Event, Leaf, TraceError


class Draft(msgspec.Struct, gc=False):
    """An event while the recorder still fills it in: the frozen ``Event`` as it stands so far
    (replaced, never mutated, so a snapshot taken from another thread reads a whole one), and
    what only the recorder needs while filling it. The recorder keeps every draft until it
    stops; they hold only untracked data (no reference cycle), so the garbage collector need not
    walk them (``gc=False``)."""

    event: Event
    id: int = 0  # creation order, stable while the event is still being filled in
    lowered: bool = False
    jaxpr_id: int | None = None  # pairs a trace with the lowering of the jaxpr it produced

    def set(self, **fields: Any) -> None:
        """Fill in fields of the event (``Event``'s names)."""
        self.event = replace(self.event, **fields)

    def frozen(self, seq: int) -> Event:
        """The event as the session keeps it: numbered ``seq``, no stage starting before 0 (a
        stage under way when the recording started), as the session format requires."""
        event = self.event
        lower, compile_ = event.lower_start_seconds, event.compile_start_seconds
        if (event.seq == seq and event.start_seconds >= 0.0 and (lower is None or lower >= 0.0)
                and (compile_ is None or compile_ >= 0.0)):
            return event  # as the session keeps it already (frozen: it is never mutated)
        return replace(event, seq=seq, start_seconds=max(event.start_seconds, 0.0),
                       lower_start_seconds=None if lower is None else max(lower, 0.0),
                       compile_start_seconds=None if compile_ is None else max(compile_, 0.0))


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
