"""Slow calls, analysed: the calls JAX ran through its Python dispatch without compiling
anything (``Session.slow_calls``), one group per function, line responsible and reason (its
signatures inside it: the session keeps one record per signature), with its reason in words,
what it cost against the fast path, the fix that is true for that reason and what it would
save; and the functions whose arguments cost more than ``FLATTEN_SECONDS`` to flatten on every
call.

What a fix saves is the dispatch it removes, never the program's own execution (which the fast
path runs too): a session records each slow call's Python dispatch outside the execution of
its program (``capture.jax.slow_calls``), and that is the avoidable time. Sessions of earlier
versions recorded the whole dispatch with a fast-path baseline measured at the run's end
(``SlowCallWatch.fast_call_seconds``): their avoidable time is the dispatch above it, never
below 0 nor above what was measured. On CPU a host callback makes the execution synchronous
and the dispatch adds to every step; on an accelerator the dispatch may overlap the device's
work, and the saving is then at most that (the fix says "up to"). Pure: no JAX, no printing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import msgspec

from recompile_cli.analysis.shorten import counted
from recompile_cli.session.locations import display
from recompile_cli.session.model import (
    NO_BACKEND,
    PUBLIC_ONLY_CHOSEN,
    CallKind,
    Event,
    Owner,
    Session,
    SlowCalls,
    SlowReason,
    function_key,
)

FLATTEN_SECONDS = 1e-3  # a per-call flatten of the arguments above this is named
NOT_RECORDED = ("slow calls: not recorded in this session (it was saved by a recompile-cli "
                "that did not watch them)")
_PURE_CALLBACK_KEEPS_FAST_PATH = (0, 7, 2)  # jax.pure_callback keeps jit's fast path since


@dataclass(frozen=True, slots=True)
class SlowGroup:
    """One group of slow calls (a function, the line responsible and a reason), analysed:
    ``seconds`` measured, ``avoidable_seconds`` what the fix would save; ``why`` the reason in
    words, ``fix`` what to do and what it would save (None where nothing is known to help);
    ``arguments`` its first signature, ``signatures`` all of them, in the order first seen."""

    function: str
    defined_at: str | None
    owner: Owner
    reason: SlowReason
    calls: int
    seconds: float
    avoidable_seconds: float
    per_call_seconds: float
    call_site: str | None
    line: str | None
    detail: str
    arguments: str
    kind: CallKind
    why: str
    fix: str | None
    process: int | None = None
    signatures: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return function_key(self.function, self.defined_at)


@dataclass(frozen=True, slots=True)
class SlowFunction:
    """One function's slow calls: all its groups, their seconds, and the calls per reason."""

    function: str
    defined_at: str | None
    owner: Owner
    slow_calls: int
    seconds: float
    avoidable_seconds: float
    reasons: dict[SlowReason, int]
    calls: int | None = None  # all its calls, where they were counted


@dataclass(frozen=True, slots=True)
class FlattenFinding:
    """A function whose every call flattens arguments for longer than ``FLATTEN_SECONDS``."""

    function: str
    defined_at: str | None
    seconds: float
    leaves: int
    nodes: int
    custom_nodes: int
    node_type: str | None
    argument: str | None
    argument_nodes: int
    fix: str


@dataclass(frozen=True, slots=True)
class SlowCallReport:
    """The slow calls of a session: ``observable`` (None: not recorded at all), ``note`` (why
    they could not be seen, shown instead of 0), the baseline, the groups (most avoidable time
    first), the functions, and the flatten findings."""

    observable: bool | None = None
    note: str | None = None
    fast_call_seconds: float | None = None
    groups: tuple[SlowGroup, ...] = ()
    functions: tuple[SlowFunction, ...] = ()
    flatten: tuple[FlattenFinding, ...] = ()

    def of(self, owners: tuple[Owner, ...] = (Owner.USER,)) -> list[SlowGroup]:
        return [g for g in self.groups if g.owner in owners]

    @property
    def baseline(self) -> str:
        """How the avoidable seconds were found, in words."""
        if self.fast_call_seconds is None:
            return DISPATCH_ONLY
        return (f"above a fast-path call of {self.fast_call_seconds * 1e6:.1f} us measured in "
                "the same process")


DISPATCH_ONLY = ("the Python dispatch outside the program's execution (which the fast path "
                 "runs too); the fast path's own few microseconds a call are not subtracted")


def analyse_slow_calls(session: Session) -> SlowCallReport:
    """The slow-call part of the report (``Report.slow_calls``)."""
    watch = session.slow_call_watch
    flatten = tuple(_flatten(session))
    if watch is None:
        return SlowCallReport(note=NOT_RECORDED, flatten=flatten)
    if not watch.observable:
        note = ("slow calls: not observable with --hook-mode public-only"
                if watch.reason == PUBLIC_ONLY_CHOSEN else
                f"slow calls: not observable on this JAX ({watch.reason or 'reason unknown'})")
        return SlowCallReport(observable=False, note=note, flatten=flatten)
    baseline = watch.fast_call_seconds
    if baseline is not None and not (math.isfinite(baseline) and baseline >= 0):
        baseline = None
    accelerator = session.environment.backend.lower() not in ("cpu", NO_BACKEND)
    groups = [analyse_group(g, baseline, session.environment.jax_version, accelerator,
                            signatures)
              for g, signatures in merged(session.slow_calls)]
    groups.sort(key=lambda g: (g.owner != Owner.USER, -g.avoidable_seconds, -g.calls))
    return SlowCallReport(observable=True, fast_call_seconds=baseline, groups=tuple(groups),
                          functions=tuple(_functions(groups, session.calls)), flatten=flatten)


def merged(found: tuple[SlowCalls, ...] | list[SlowCalls]
           ) -> list[tuple[SlowCalls, tuple[str, ...]]]:
    """The session's records (one per signature) as one per function, line responsible,
    reason and detail (and process): their calls and seconds summed, the call site of the
    first of them, with their signatures in the order first seen. Records of no call are
    left out."""
    groups: dict[tuple[object, ...], list[SlowCalls]] = {}
    for g in found:
        if g.calls > 0:
            groups.setdefault((g.function, g.defined_at, g.owner, g.reason, g.line, g.detail,
                               g.kind, g.process), []).append(g)
    out = []
    for members in groups.values():
        first = min(members, key=lambda g: g.first_seconds)
        signatures = tuple(dict.fromkeys(g.arguments for g in members if g.arguments))
        out.append((msgspec.structs.replace(
            first, calls=sum(g.calls for g in members),
            seconds=math.fsum(_finite(g.seconds) for g in members)), signatures))
    return out


def _finite(seconds: float) -> float:
    return seconds if math.isfinite(seconds) and seconds > 0 else 0.0


def analyse_group(g: SlowCalls, baseline: float | None, jax_version: str,
                  accelerator: bool = False, signatures: tuple[str, ...] = ()) -> SlowGroup:
    """One group analysed (``baseline``: the fast-path seconds of a call that sessions of
    earlier versions measured, else None; ``accelerator``: the dispatch may overlap the
    device's work, so the fix saves up to the avoidable seconds)."""
    version = _version(jax_version)
    seconds = _finite(g.seconds)
    per_call = seconds / max(g.calls, 1)
    avoidable = seconds if baseline is None else g.calls * max(per_call - baseline, 0.0)
    at = f" at {display(g.line)}" if g.line else ""
    return SlowGroup(
        function=g.function, defined_at=g.defined_at, owner=g.owner, reason=g.reason,
        calls=g.calls, seconds=seconds, avoidable_seconds=min(avoidable, seconds),
        per_call_seconds=per_call, call_site=g.call_site, line=g.line, detail=g.detail,
        arguments=g.arguments, kind=g.kind, why=_why(g, at),
        fix=_fix(g, at, version, min(avoidable, seconds), accelerator), process=g.process,
        signatures=signatures or ((g.arguments,) if g.arguments else ()))


# Each reason in words: ``{what}`` is what holds it there (``jax.debug.callback`` at its line),
# ``{detail}`` the detail the hooks found.
_WHY = {
    SlowReason.UNORDERED_EFFECT: "{what} keeps it off JAX's C++ fast path (an unordered effect)",
    SlowReason.ORDERED_EFFECT: "{what} keeps it off JAX's C++ fast path (an ordered effect)",
    SlowReason.REF_EFFECT: "{what} keeps it off JAX's C++ fast path (mutable array refs)",
    SlowReason.AOT_HOST_CALLBACK: ("an ahead-of-time Compiled with a host callback ({what}) "
                                   "has no C++ fast path: every call runs in Python"),
    SlowReason.DISABLE_JIT: "jax.disable_jit was on: each call ran op by op, without jit",
    SlowReason.PGLE: "profile-guided latency estimation runs are pending ({detail})",
    SlowReason.NO_EXECUTION: "{detail}",
    SlowReason.NON_ARRAY_OUTPUT: "it returns {detail}, which the fast path cannot return",
    SlowReason.FIRST_CALL_RAISED: "{detail}",
    SlowReason.DEBUG_KEY_REUSE: "{detail}: keys are checked in Python at every call",
    SlowReason.UNCOMMITTED_MULTIDEVICE: "{detail}: the fast path refuses such arguments",
    SlowReason.ARG_TYPE: "{detail}, a type the fast path does not take",
    SlowReason.EVICTION: "{detail}",
    SlowReason.UNKNOWN: ("JAX dispatched it in Python for a reason recompile-cli cannot tell "
                         "({detail})"),
}

# The fix of each reason that needs no more than the function's ``{name}`` and the predicted
# ``{effect}`` (the effects' and the AOT callbacks' fixes are made in ``_fix``).
_FIXES = {
    SlowReason.DISABLE_JIT: ("remove `jax.disable_jit` (or JAX_DISABLE_JIT, jax_disable_jit) "
                             "around these calls{effect}"),
    SlowReason.UNCOMMITTED_MULTIDEVICE: ("commit the argument to its devices once, before the "
                                         "calls: `jax.device_put(x, sharding)`{effect}"),
    SlowReason.ARG_TYPE: ("convert the argument to an array once, before the calls "
                          "(`jnp.asarray`){effect}"),
    SlowReason.EVICTION: ("stop making jitted functions (or new signatures) per call: they fill "
                          "JAX's C++ cache, whose size is fixed, and evict the entries of warm "
                          "functions{effect}"),
    SlowReason.FIRST_CALL_RAISED: ("make the first call of each signature succeed (warm up with "
                                   "valid inputs): the entry of a first call that raised stays "
                                   "in Python dispatch{effect}"),
    SlowReason.DEBUG_KEY_REUSE: "turn jax_debug_key_reuse off outside debugging{effect}",
    SlowReason.NO_EXECUTION: "unset jax_no_execution{effect}",
    SlowReason.NON_ARRAY_OUTPUT: "return only jax Arrays from {name}{effect}",
    SlowReason.PGLE: ("expected for the first jax_pgle_profiling_runs calls of each program: "
                      "lower it, or turn jax_enable_pgle off where the profile is not worth "
                      "them"),
}


def _why(g: SlowCalls, at: str) -> str:
    """The reason in words, naming the line responsible where there is one."""
    what = f"`{g.detail}`{at}" if g.detail else f"something{at}"
    return _WHY[g.reason].format(what=what, detail=g.detail)


def _fix(g: SlowCalls, at: str, version: tuple[int, ...], avoidable: float,
         accelerator: bool = False) -> str | None:
    """What to do for this reason (true for it), with the predicted effect."""
    effect = effect_of(g.calls, avoidable, accelerator)
    name = f"`{g.function}`"
    reason = g.reason
    if reason == SlowReason.REF_EFFECT:
        return f"pass and return arrays instead of mutable refs in {name} (`{g.detail}`{at})" + (
            effect)
    if reason in (SlowReason.UNORDERED_EFFECT, SlowReason.ORDERED_EFFECT):
        text = (f"move it out of {name}, or put it behind a static flag (`static_argnames`) "
                "that is off in the steps that need speed")
        if (reason == SlowReason.UNORDERED_EFFECT and "callback" in g.detail
                and version >= _PURE_CALLBACK_KEEPS_FAST_PATH):
            text += (", or use `jax.pure_callback` where its semantics fit (no side effect the "
                     "program relies on): it keeps jit's fast path on JAX >= 0.7.2")
        return text + effect
    if reason == SlowReason.AOT_HOST_CALLBACK:
        if "pure_callback" in g.detail and version >= _PURE_CALLBACK_KEEPS_FAST_PATH:
            return ("call the jitted function instead of the AOT Compiled (`jax.jit` keeps "
                    "its fast path with `jax.pure_callback` on JAX >= 0.7.2; the callback "
                    "still runs, and its run is not counted here)" + effect)
        return f"move `{g.detail}`{at} out of the compiled function" + effect
    template = _FIXES.get(reason)
    return template.format(name=name, effect=effect) if template is not None else None


def effect_of(calls: int, avoidable: float, accelerator: bool = False) -> str:
    """``: 7 slow calls -> 0, saving about 0.012 s``: what a fix of ``calls`` slow calls
    saves (``up to`` where the dispatch may overlap an accelerator's work)."""
    about = "up to" if accelerator else "about"
    return f": {counted(calls, 'slow call')} -> 0, saving {about} {avoidable:.3f} s"


def _functions(groups: list[SlowGroup], calls: dict[str, int]) -> list[SlowFunction]:
    found: dict[str, list[SlowGroup]] = {}
    for g in groups:
        found.setdefault(g.key, []).append(g)
    out = []
    for key, members in found.items():
        first = members[0]
        reasons: Counter[SlowReason] = Counter()
        for g in members:
            reasons[g.reason] += g.calls
        out.append(SlowFunction(
            function=first.function, defined_at=first.defined_at, owner=first.owner,
            slow_calls=sum(g.calls for g in members), seconds=math.fsum(g.seconds for g in members),
            avoidable_seconds=math.fsum(g.avoidable_seconds for g in members),
            reasons=dict(reasons.most_common()), calls=calls.get(key)))
    return out


def _flatten(session: Session) -> list[FlattenFinding]:
    """Per function (not JAX's), its slowest signature to flatten, when above the threshold."""
    worst: dict[str, tuple[float, Event]] = {}
    for e in session.events:
        cost = e.flatten
        if cost is None or e.owner == Owner.JAX or not cost.seconds >= FLATTEN_SECONDS:
            continue
        key = function_key(e.function, e.defined_at)
        if key not in worst or cost.seconds > worst[key][0]:
            worst[key] = (cost.seconds, e)
    out = []
    for seconds, e in sorted(worst.values(), key=lambda item: -item[0]):
        cost = e.flatten
        assert cost is not None
        custom = (f", {cost.custom_nodes:,} of them custom ({cost.node_type})"
                  if cost.custom_nodes and cost.node_type else "")
        heaviest = (f"; `{cost.argument}` carries {cost.argument_nodes:,} of the nodes"
                    if cost.argument else "")
        fix = (f"each call of `{e.function}` flattens {cost.nodes:,} pytree nodes and "
               f"{cost.leaves:,} leaves{custom}{heaviest}: about {seconds * 1e3:.1f} ms per "
               "call before anything runs. Pass fewer, larger arrays (flatten the state once "
               "outside the loop, e.g. `nnx.split` for a Flax NNX model, or keep parameters "
               "in one pytree of arrays)")
        out.append(FlattenFinding(
            function=e.function, defined_at=e.defined_at, seconds=seconds, leaves=cost.leaves,
            nodes=cost.nodes, custom_nodes=cost.custom_nodes, node_type=cost.node_type,
            argument=cost.argument, argument_nodes=cost.argument_nodes, fix=fix))
    return out


def verdict(report: SlowCallReport) -> str | None:
    """The opening line about slow calls: what a recording could not see, or the slow calls
    of your functions; None when there is nothing to say."""
    if report.observable is False:
        return report.note
    yours = [f for f in report.functions if f.owner == Owner.USER]
    if not yours:
        return None
    total = sum(f.slow_calls for f in yours)
    avoidable = math.fsum(f.avoidable_seconds for f in yours)
    parts = []
    for f in yours[:3]:
        of = f" of {f.calls:,}" if f.calls is not None and f.calls >= f.slow_calls else ""
        parts.append(f"{f.function} {f.slow_calls:,}{of} ({', '.join(map(str, f.reasons))})")
    more = f", ... {len(yours) - 3} more" if len(yours) > 3 else ""
    return (f"slow calls: {counted(total, 'call')} in JAX's Python dispatch, nothing compiled: "
            f"{', '.join(parts)}{more}; {avoidable:.3f} s avoidable")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


