"""A run's persistent-cache outcomes for ``report``: hits and the seconds they saved, misses
written, and misses not written by reason (``CacheKeyInfo.reason``). Why keys changed between
runs is ``cache_keys``'s. Pure: no I/O, no JAX.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from recompile_cli.session.model import CacheOutcome, Event, Owner


@dataclass(frozen=True, slots=True)
class CacheOutcomes:
    """A run's persistent-cache outcomes: hits (and the seconds they saved, ``exact`` when
    every hit's stored compile time was recompile-cli's own), misses written, and misses not
    written by reason (``unknown`` where the key was not taken apart); ``missed``: the user's
    functions that missed, each once, in order (what ``diff`` against an earlier run
    explains)."""

    hits: int
    saved_seconds: float
    exact: bool
    written: int
    not_written: dict[str, int]
    missed: tuple[str, ...] = ()


def outcomes(events: Iterable[Event]) -> CacheOutcomes:
    hits = written = 0
    saved = 0.0
    exact = True
    reasons: Counter[str] = Counter()
    missed: dict[str, None] = {}
    for event in events:
        status = event.persistent_cache
        if (status in (CacheOutcome.MISS_WRITTEN, CacheOutcome.MISS_NOT_WRITTEN)
                and event.owner == Owner.USER):
            missed.setdefault(event.function)
        if status == CacheOutcome.HIT:
            hits += 1
            saved += event.cache_saved_seconds
            exact = exact and event.cache_key is not None and event.cache_key.stored_exact
        elif status == CacheOutcome.MISS_WRITTEN:
            written += 1
        elif status == CacheOutcome.MISS_NOT_WRITTEN:
            reason = event.cache_key.reason if event.cache_key is not None else None
            reasons[str(reason) if reason else "unknown"] += 1
    return CacheOutcomes(hits, saved, exact and hits > 0, written, dict(reasons),
                         tuple(missed))
