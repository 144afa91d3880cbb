"""Counting a run's misses the way a user reads them: first compiles, re-compiles (by cause),
re-traces that reused the executable, and traces that raised.

A *first compile* is a compile whose primary cause is ``first_compile``; every other compile is a
*re-compile*. Nested traces (inside another function's trace) are part of their parent's and
count as traces only. ``Tally`` adds events up; the report's totals split by owner
(``Totals.by_owner``) and the headline of the human reports (one line per function of yours,
``render.headline``) are both made of it, so that they always agree. Pure: no JAX.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from recompile_cli.analysis.cause import Cause
from recompile_cli.session.model import CauseCode, Event


@dataclass(slots=True)
class Tally:
    """The misses of a group of events (one function's, or one owner's)."""

    traces: int = 0
    compiles: int = 0
    first_compiles: int = 0
    recompiles: Counter[CauseCode] = field(default_factory=Counter)  # by primary cause
    retraces: Counter[CauseCode] = field(default_factory=Counter)  # executable reused
    errors: Counter[str] = field(default_factory=Counter)  # by exception type
    compile_seconds: list[float] = field(default_factory=list)
    functions: set[tuple[str, str | None]] = field(default_factory=set)  # that compiled

    def add(self, event: Event, cause: Cause) -> None:
        """Count one event, explained by its primary ``cause``."""
        self.traces += event.traced
        self.compile_seconds.append(event.compile_seconds)
        if event.error is not None:
            self.errors[event.error.type] += 1
        elif event.compiled:
            self.compiles += 1
            self.functions.add((event.function, event.defined_at))
            if cause.code == CauseCode.FIRST_COMPILE:
                self.first_compiles += 1
            else:
                self.recompiles[cause.code] += 1
        elif event.traced and event.depth <= 0 and cause.code != CauseCode.FIRST_COMPILE:
            self.retraces[cause.code] += 1

    @property
    def recompile_count(self) -> int:
        return sum(self.recompiles.values())

    @property
    def retrace_count(self) -> int:
        return sum(self.retraces.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def tally(events: Iterable[Event], causes: dict[int, tuple[Cause, ...]]) -> Tally:
    """The misses of ``events`` (``causes``: event seq -> its causes, primary first)."""
    found = Tally()
    for event in events:
        found.add(event, causes[event.seq][0])
    return found
