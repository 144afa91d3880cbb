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
from recompile_cli.analysis.warmup.plan import Planned, planned_of, replay_problem
from recompile_cli.session.model import (
    CauseCode,
    Event,
    HookMode,
    Owner,
    Session,
    Signature,
    function_key,
)
from recompile_cli.session.warmup import FirstCall, Skipped, Warmup

After = Callable[[Event], bool]  # True for an event of the workload (after the warm-up)


@dataclass(frozen=True, slots=True)
class Miss:
    """A compile of the workload that the warm-up did not cover, and why (``causes``, primary
    first); ``skipped`` when the plan had that function's signature but skipped it here."""

    event: Event
    causes: tuple[Cause, ...]
    skipped: Skipped | None = None
    unplayable: str | None = None  # why no plan could hold it (``replay_problem``)
    nearest: Signature | None = None  # the closest signature the warm-up compiled
    planned: Planned | None = None  # what a plan would hold to make it (its line to add)
    fix: str = ""  # what to add to the plan, or what would have recorded it (``remedy``)


@dataclass(frozen=True, slots=True)
class Coverage:
    """How a warm-up plan covered a run: what it compiled, the misses of your functions after
    it, and the compiles after it of functions that are not yours, by owner (not gated)."""

    warmup: Warmup
    warmup_compiles: int
    misses: tuple[Miss, ...]
    others: dict[Owner, int] = field(default_factory=dict)
    other_functions: dict[Owner, int] = field(default_factory=dict)
    # each first call that warmed its function's signatures, with that call's compile
    first_calls: tuple[tuple[FirstCall, Event | None], ...] = ()


def after_warmup(warmup: Warmup) -> After:
    """The workload's events: those that start once the warm-up ended, but the first call of
    a function warmed at its first call, and what that warm-up compiled."""
    if not warmup.first_calls:
        return lambda event: event.start_seconds >= warmup.ended_seconds
    ends = {call.function: call.ended_seconds for call in warmup.first_calls}
    spans = [(call.started_seconds, call.ended_seconds) for call in warmup.first_calls]

    def is_after(event: Event) -> bool:
        start = event.start_seconds
        if start < warmup.ended_seconds or start < ends.get(
                function_key(event.function, event.defined_at), 0.0):
            return False
        return not any(begin <= start < end for begin, end in spans)

    return is_after


def _warming(warmup: Warmup, event: Event) -> bool:
    """Whether ``event`` is a compile of the warm-up's (the plan's, or a first call's)."""
    start = event.start_seconds
    return warmup.started_seconds <= start < warmup.ended_seconds or any(
        call.started_seconds <= start < call.ended_seconds for call in warmup.first_calls)


def _first_call_sites(session: Session, warmup: Warmup
                      ) -> tuple[tuple[FirstCall, Event | None], ...]:
    """Each first call's warm-up with the event of the call that made it (the last top-level
    event of that function that started before it)."""
    out = []
    for call in warmup.first_calls:
        found = None
        for e in session.events:
            if e.start_seconds >= call.started_seconds:
                break
            if e.depth == 0 and function_key(e.function, e.defined_at) == call.function:
                found = e
        out.append((call, found))
    return tuple(out)


Causes = dict[int, tuple[Cause, ...]]  # a report's: event seq -> causes, primary first


def coverage(session: Session, causes: Causes) -> Coverage | None:
    """The coverage of the session's warm-up plan; None when no plan ran."""
    warmup = session.warmup
    if warmup is None:
        return None
    is_after = after_warmup(warmup)
    warm = sum(1 for e in session.events if e.compiled and e.depth == 0  # the plan's own
               and _warming(warmup, e))
    others: Counter[Owner] = Counter()
    functions: dict[Owner, set[str]] = {}
    for e in session.events:
        if e.compiled and e.depth == 0 and is_after(e) and e.owner != Owner.USER:
            others[e.owner] += 1
            functions.setdefault(e.owner, set()).add(function_key(e.function, e.defined_at))
    return Coverage(warmup, warm, misses(session, causes, is_after), dict(others),
                    {owner: len(keys) for owner, keys in functions.items()},
                    _first_call_sites(session, warmup))


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
        index = warm.get(key)
        warmed = index is not None and bool(index.signatures)
        nearest = (index.signatures[index.nearest(event.signature)]
                   if index is not None and warmed and event.signature is not None else None)
        problem = replay_problem(session, event)
        planned = planned_of(session, event)  # a jit no module holds: its first call's
        skip = skipped.get(event.function)
        found.append(Miss(event, _causes(session, causes, event, warmed, nearest), skip,
                          problem, nearest, planned, remedy(session, planned, problem, skip)))
    return tuple(found)


def remedy(session: Session, planned: Planned | None, problem: str | None,
           skipped: Skipped | None) -> str:
    """What would have covered a miss besides the plan's lines to add (``planned``: the
    report writes them): the option that would have recorded it, or the change that makes it
    replayable."""
    if skipped is not None:
        return (f"the plan has it but skipped it on this machine ({skipped.reason}): run the "
                "plan where those devices are")
    if planned is not None:
        return ("record a run that makes this call (run --save RUN.json) and write the plan "
                "again (recompile-cli warmup RUN.json -o PLAN.py)")
    if session.environment.hook_mode == HookMode.PUBLIC_ONLY:
        return "record with JAX >= 0.9 (--hook-mode private): this run has no signature to plan"
    if problem is not None and problem.startswith("the jitted object cannot be imported"):
        return ("no module holds this jit (made inside a function), so a plan warms it at its "
                "first call, with the signatures a recorded run made: record a run that makes "
                "this call (run --save RUN.json) and write the plan again, or keep the jit at "
                "module level")
    if problem is not None and problem.startswith("argument "):
        return ("make that argument writable (a static value as a module-level object, a "
                f"frozen dataclass or a NamedTuple): {problem}")
    return f"not replayable: {problem or 'no replay was recorded'}"


def _skipped(session: Session) -> dict[str, Skipped]:
    warmup = session.warmup
    return {} if warmup is None else {s.function: s for s in warmup.skipped}


def _causes(session: Session, causes: Causes, event: Event, warmed: bool,
            closest: Signature | None) -> tuple[Cause, ...]:
    if not warmed:
        return (Cause(CauseCode.FIRST_COMPILE, detail="the warm-up compiled no signature of "
                      "this function"),)
    if not event.traced or closest is None or event.signature is None:
        return causes[event.seq]  # a lowering change: the report's cause
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
    if warmup.at_first_call:
        lines = [f"warm-up: {warmup.plan} warms each function at its first call (the script "
                 f"has no main guard): {counted(found.warmup_compiles, 'signature')} compiled"]
    else:
        lines = [f"warm-up: {warmup.plan} compiled {counted(found.warmup_compiles, 'signature')}"
                 f" in {seconds:.3f} s"]
    for first, trigger in found.first_calls:
        name = first.function.partition("@")[0]
        problems = [*(f"skipped {s.signature or name}: {s.reason}" for s in first.skipped),
                    *(f"failed {s.signature or name}: {s.reason}" for s in first.failed)]
        site = call(trigger) if trigger is not None else None
        lines.append(f"warm-up at first call: {name} at {site or 'an unknown call'} warmed "
                     f"{counted(first.compiled, 'signature')} of it in "
                     f"{first.ended_seconds - first.started_seconds:.3f} s"
                     + (f" ({'; '.join(problems[:3])})" if problems else ""))
    called = {first.function for first, _ in found.first_calls}
    never = [key.partition("@")[0] for key in warmup.waiting if key not in called]
    if never and warmup.error is None:
        lines.append(f"warm-up: not called, so not warmed: {', '.join(never[:8])}"
                     + (f", ... {len(never) - 8} more" if len(never) > 8 else ""))
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
