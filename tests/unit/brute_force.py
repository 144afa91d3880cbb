"""The closest-signature rule by brute force: each traced event is diffed with every earlier
successfully traced signature of its function (fewest differences, ties to the most recent).

This is the reference that ``explain_events`` (which uses an index) must agree with exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.explain import _explain_without_retrace, diff_signatures
from recompile_cli.session.model import CauseCode, Event, Signature, function_key


def explain_events_brute_force(events: Iterable[Event], base_context: dict[str, str]
                               ) -> dict[int, tuple[Cause, ...]]:
    seen: dict[str, list[Signature]] = {}
    done_before: set[str] = set()
    out: dict[int, tuple[Cause, ...]] = {}
    for event in events:
        key = function_key(event.function, event.defined_at)
        previous = seen.setdefault(key, [])
        out[event.seq] = tuple(_explain(event, previous, key in done_before, base_context))
        if event.compiled or (event.traced and event.error is None):
            done_before.add(key)
        if event.traced and event.error is None and event.signature is not None:
            previous.append(event.signature)
    return out


def nearest_brute_force(new: Signature, previous: list[Signature],
                        base_context: dict[str, str]) -> int:
    """The index in ``previous`` of the closest signature."""
    best_index, best_count = -1, None
    for index in range(len(previous) - 1, -1, -1):  # most recent first: ties to the most recent
        count = len(list(diff_signatures(new, previous[index], base_context)))
        if best_count is None or count < best_count:
            best_index, best_count = index, count
    return best_index


def _explain(event: Event, previous: list[Signature], done_before: bool,
             base_context: dict[str, str]) -> list[Cause]:
    if not done_before:
        return [Cause(CauseCode.FIRST_COMPILE, detail="first trace of this function"
                      if event.traced else "compiled without a trace of its own")]
    if not event.traced:
        return _explain_without_retrace(event)
    if event.signature is None or not previous:
        return [Cause(CauseCode.UNKNOWN, detail="no signature recorded (hook mode public-only)")]
    best: list[Cause] | None = None
    for old in reversed(previous):
        diffs = list(diff_signatures(event.signature, old, base_context))
        if best is None or len(diffs) < len(best):
            best = diffs
    return best or [Cause(CauseCode.UNKNOWN, detail="same signature as an earlier trace: JAX's "
                          "caches were cleared or the entry was evicted")]
