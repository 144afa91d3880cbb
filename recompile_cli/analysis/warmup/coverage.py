"""Warm-up coverage: what a warm-up did not cover, the compiles after it, each explained
against the closest signature the warm-up compiled of the same function (pure: a session and
its causes -> data; a report holds its own, ``Report.warmup_coverage``).

A warm-up is either a plan that ran before the workload (``Session.warmup``: the events that
start after its ``ended_seconds`` are the workload's) or, in a forecast, the first calls of a
spec (``forecast --warmup``). ``misses`` takes the split as a predicate, so both are one
analysis. Each miss is explained the way a re-compile is (``causes.diff_signatures`` against
the closest signature through a ``SignatureIndex``), but only against what the warm-up
compiled: the signature the warm-up lacked, and what differs from the nearest one it has. A
compile without a re-trace keeps the lowering change the report found for it (a sharding or
placement the warm-up did not use).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.explain import diff_signatures
from recompile_cli.analysis.causes.nearest import SignatureIndex
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.warmup.plan import replay_problem
from recompile_cli.session.model import CauseCode, Event, Owner, Session, function_key
from recompile_cli.session.warmup import Skipped, Warmup

After = Callable[[Event], bool]  # True for an event of the workload (after the warm-up)


@dataclass(frozen=True, slots=True)
class Miss:
    """A compile of the workload that the warm-up did not cover, and why (``causes``, primary
    first); ``skipped`` when the plan had that function's signature but skipped it here."""

    event: Event
    causes: tuple[Cause, ...]
    skipped: Skipped | None = None
    unplayable: str | None = None  # why no plan could hold it (``replay_problem``)


@dataclass(frozen=True, slots=True)
class Coverage:
    """How a warm-up plan covered a run: what it compiled, the misses of your functions after
    it, and the compiles after it of functions that are not yours, by owner (not gated)."""

    warmup: Warmup
    warmup_compiles: int
    misses: tuple[Miss, ...]
    others: dict[Owner, int] = field(default_factory=dict)
    other_functions: dict[Owner, int] = field(default_factory=dict)


def after_warmup(warmup: Warmup) -> After:
    """The workload's events: those that start once the warm-up ended."""
    return lambda event: event.start_seconds >= warmup.ended_seconds


Causes = dict[int, tuple[Cause, ...]]  # a report's: event seq -> causes, primary first


def coverage(session: Session, causes: Causes) -> Coverage | None:
    """The coverage of the session's warm-up plan; None when no plan ran."""
    warmup = session.warmup
    if warmup is None:
        return None
    is_after = after_warmup(warmup)
    warm = sum(1 for e in session.events if e.compiled and e.depth == 0  # the plan's own
               and warmup.started_seconds <= e.start_seconds < warmup.ended_seconds)
    others: Counter[Owner] = Counter()
    functions: dict[Owner, set[str]] = {}
    for e in session.events:
        if e.compiled and e.depth == 0 and is_after(e) and e.owner != Owner.USER:
            others[e.owner] += 1
            functions.setdefault(e.owner, set()).add(function_key(e.function, e.defined_at))
    return Coverage(warmup, warm, misses(session, causes, is_after), dict(others),
                    {owner: len(keys) for owner, keys in functions.items()})


def misses(session: Session, causes: Causes, is_after: After,
           owners: tuple[Owner, ...] = (Owner.USER,)) -> tuple[Miss, ...]:
    """Every top-level compile of a function of ``owners`` after the warm-up, explained
    against the closest signature the warm-up compiled of that function."""
    warm: dict[str, SignatureIndex] = {}
    found: list[Miss] = []
    skipped = _skipped(session)
    for event in session.events:
        if not event.compiled or event.depth:
            continue
        key = function_key(event.function, event.defined_at)
        if not is_after(event):
            if event.signature is not None and event.error is None:
                index = warm.get(key)
                if index is None:
                    index = warm[key] = SignatureIndex(session.base_context)
                index.add(event.signature)
            continue
        if event.owner not in owners:
            continue
        found.append(Miss(event, _causes(session, causes, event, warm.get(key)),
                          skipped.get(event.function), replay_problem(session, event)))
    return tuple(found)


def _skipped(session: Session) -> dict[str, Skipped]:
    warmup = session.warmup
    return {} if warmup is None else {s.function: s for s in warmup.skipped}


def _causes(session: Session, causes: Causes, event: Event, index: SignatureIndex | None
            ) -> tuple[Cause, ...]:
    if index is None or not index.signatures:
        return (Cause(CauseCode.FIRST_COMPILE, detail="the warm-up compiled no signature of "
                      "this function"),)
    if not event.traced or event.signature is None:  # a lowering change: the report's cause
        return causes[event.seq]
    closest = index.signatures[index.nearest(event.signature)]
    return tuple(diff_signatures(event.signature, closest, session.base_context)) or (
        Cause(CauseCode.UNKNOWN, detail="the same signature as one the warm-up compiled: JAX's "
              "caches were cleared or the entry was evicted since"),)


def miss_line(miss: Miss, call: str | None, replayable: bool = True) -> str:
    """``warm-up miss: f compiles at CALL: shape at x (f32[3] -> f32[4])``: one line per miss
    (its primary cause), as reports and the forecast list them; with ``replayable``, why no
    plan could hold it, where that is known."""
    cause = miss.causes[0]
    where = f" at {cause.argument}" if cause.argument else ""
    change = f" ({cause.before} -> {cause.after})" if cause.before or cause.after else ""
    skipped = f"; the plan skipped it here: {miss.skipped.reason}" if miss.skipped else ""
    unplayable = f"; not replayable: {miss.unplayable}" if replayable and miss.unplayable else ""
    return (f"warm-up miss: {miss.event.function} compiles at {call or 'an unknown call'}: "
            f"{cause.code}{where}{change}{skipped}{unplayable}")


def summary_lines(found: Coverage, call: Callable[[Event], str | None]) -> list[str]:
    """The warm-up's lines in a report: what the plan compiled, then each miss (``miss_line``,
    its call named by ``call``), then what compiled after it that the gate does not count."""
    warmup = found.warmup
    seconds = warmup.ended_seconds - warmup.started_seconds
    lines = [f"warm-up: {warmup.plan} compiled {counted(found.warmup_compiles, 'signature')} "
             f"in {seconds:.3f} s"]
    if warmup.skipped:
        lines.append(f"warm-up: {counted(len(warmup.skipped), 'signature')} of the plan skipped "
                     "on this machine: " + "; ".join(f"{s.function}: {s.reason}"
                                                    for s in warmup.skipped[:3]))
    if warmup.error:
        lines.append(f"warm-up: the plan raised, so the workload did not run: {warmup.error}")
    elif found.misses:
        lines.append(f"warm-up: {counted(len(found.misses), 'compile')} of your functions after "
                     "it, each a signature the plan lacks:")
        lines += [miss_line(m, call(m.event)) for m in found.misses]
    else:
        lines.append("warm-up: your functions compiled nothing after it")
    for owner, count in found.others.items():
        who = "JAX's own functions" if owner == Owner.JAX else "libraries' functions"
        lines.append(f"warm-up: {counted(count, 'compile')} of {who} after it "
                     f"({counted(found.other_functions.get(owner, 0), 'function')}; not "
                     "replayable, not gated)")
    return lines


def coverage_notes(session: Session, causes: Causes, labels: Sequence[str],
                   warmup_calls: int) -> list[str]:
    """The forecast's warm-up notes (``forecast --warmup``, ``forecast(warmup=...)``): one line
    per top-level compile of the workload after the first ``warmup_calls`` calls (the warm-up's;
    ``labels``: each call's label, in call order), with the call that first needs it and its
    cause against the closest signature the warm-up compiled (``causes``: its report's)."""
    found = misses(session, causes,
                   lambda e: e.call_index is not None and e.call_index >= warmup_calls,
                   owners=tuple(Owner))
    if not found:
        return [f"warm-up: its {warmup_calls} call(s) cover every signature of the workload; "
                "the workload compiles nothing more"]
    return [f"warm-up: {len(found)} signature(s) of the workload are not covered and compile "
            "at run time:"] + [miss_line(m, labels[m.event.call_index], replayable=False)
                               for m in found if m.event.call_index is not None]
