"""Sessions built by hand, for both test layers: ``leaf("f32", 3, 4)``, ``sig(x=...)``,
``event(...)``, ``f32_event(seq, "f", n=4)``, ``session([...])``, the causes of a list of calls
(``explain``, ``last``, ``brief``), and ready-made reports with hostile names and values, missing
locations, and many rows.

No JAX: the analysis works on ``recompile_cli.session.model`` data only. ``tests/`` is on
``sys.path`` through the root ``conftest.py``, so ``from builders import ...`` works everywhere.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from msgspec.structs import replace

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.explain import explain_events
from recompile_cli.analysis.report import Report, build_report
from recompile_cli.session.model import (
    Change,
    Environment,
    Event,
    Leaf,
    Session,
    Signature,
    StaticClass,
    TraceError,
)

ENV = Environment(jax_version="0.10.2", python_version="3.11.2", backend="cpu",
                  hook_mode="private")

# Hostile text: a spreadsheet formula, an HTML script, an ANSI colour escape and a bell.
FORMULA = "=cmd|' /C calc'!A0"
SCRIPT = "<script>alert(1)</script>"
ESC, BEL = "\x1b[31m", "\x07"

DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
          "i8": "int8", "i32": "int32", "i64": "int64", "u8": "uint8", "bool": "bool"}


def leaf(dtype: str = "f32", *shape: int, weak: bool = False, sharding: str | None = None
         ) -> Leaf:
    """``leaf("f32", 3, 4)`` is f32[3,4]; ``leaf("f32", weak=True)`` a Python float."""
    return Leaf(shape=tuple(shape), dtype=DTYPES.get(dtype, dtype), weak_type=weak,
                sharding=sharding)


def sig(*, static: dict[str, str] | None = None, structure: dict[str, str] | None = None,
        positional: int | None = None, keywords: tuple[str, ...] = (),
        context: dict[str, str] | None = None, fid: int = 1, kind: str = "function",
        paths: dict[str, Leaf] | None = None, classes: dict[str, StaticClass] | None = None,
        **leaves: Leaf) -> Signature:
    """A signature. Keyword arguments are leaves at top-level paths (``x=leaf(...)``); ``paths``
    takes any path (``"batch['x']"``). Each top-level argument's structure defaults to ``*``
    (one array); ``positional`` defaults to every argument not passed by keyword; ``classes``
    are the statics' equality classes (``StaticClass``), none by default (compared by text)."""
    all_leaves = {**leaves, **(paths or {})}
    tops = {_top(path) for path in all_leaves}
    structure = {name: "*" for name in sorted(tops)} if structure is None else structure
    static = static or {}
    if positional is None:
        positional = len(set(structure) | set(static)) - len(keywords)
    return Signature(leaves=all_leaves, static=dict(static), structure=dict(structure),
                     positional=positional, keywords=tuple(keywords), context=context or {},
                     function_id=fid, function_kind=kind, static_classes=dict(classes or {}))


def _top(path: str) -> str:
    for i, ch in enumerate(path):
        if ch in "[.":
            return path[:i]
    return path


def event(signature: Signature | None = None, *, function: str = "f", seq: int = 0,
          traced: bool = True, compiled: bool = True, error: TraceError | None = None,
          lowering_changes: tuple[Change, ...] | None = None, owner: str = "user",
          depth: int = 0, defined_at: str | None = "prog.py:3",
          call_site: str | None = "prog.py:10 (<module>)", start: float | None = None,
          seconds: float | None = None) -> Event:
    """One call of ``function`` that traced (and by default compiled).

    It starts at ``start`` (default: ``seq`` seconds). By default the trace and the lowering
    take 0.01 s and the compile 0.1 s; ``seconds`` gives each phase that duration instead (no
    lowering or compile when not ``compiled``) and places the lowering and the compile right
    after the trace, as the recorder does, for the timeline and the Perfetto trace.
    """
    start = float(seq) if start is None else start
    lower_start = compile_start = None
    if seconds is None:
        trace, lower, compile_ = 0.01, 0.01, 0.1 if compiled else 0.0
    else:
        trace, lower, compile_ = seconds, seconds if compiled else 0.0, seconds if compiled else 0.0
        if compiled:
            lower_start, compile_start = start + seconds, start + 2 * seconds
    return Event(seq=seq, function=function, defined_at=defined_at, owner=owner,
                 call_site=call_site, call_index=None, depth=depth, traced=traced,
                 compiled=compiled, start_seconds=start, trace_seconds=trace,
                 lower_seconds=lower, compile_seconds=compile_, signature=signature,
                 lowering_changes=lowering_changes, error=error,
                 lower_start_seconds=lower_start, compile_start_seconds=compile_start)


def f32_event(seq: int, function: str, *, n: int = 3, static: dict[str, str] | None = None,
              argument: str = "x", start: float | None = None, seconds: float = 0.01,
              defined_at: str | None = None, call_site: str | None = None,
              owner: str = "user", error: TraceError | None = None) -> Event:
    """One trace and compile of ``function`` with an ``f32[n]`` argument (plus statics), for
    the report tests: calls 0.05 s apart, each phase ``seconds`` long, no location unless
    given, and no compile when the trace failed with ``error``."""
    signature = Signature(leaves={argument: leaf("f32", n)}, static=dict(static or {}))
    return event(signature, function=function, seq=seq, compiled=error is None, error=error,
                 owner=owner, defined_at=defined_at, call_site=call_site,
                 start=seq * 0.05 if start is None else start, seconds=seconds)


def numbered(*items: Event | Signature) -> list[Event]:
    """Events in order, ``seq`` 0, 1, 2...; a bare ``Signature`` is a traced-and-compiled call
    of ``f``."""
    out = []
    for seq, item in enumerate(items):
        ev = event(item) if isinstance(item, Signature) else item
        out.append(replace(ev, seq=seq))
    return out


def explain(*items: Event | Signature, base: dict[str, str] | None = None
            ) -> list[tuple[Cause, ...]]:
    """The causes of each event, in order."""
    events = numbered(*items)
    causes = explain_events(events, base or {})
    return [causes[e.seq] for e in events]


def last(*items: Event | Signature, base: dict[str, str] | None = None) -> tuple[Cause, ...]:
    """The causes of the last event."""
    return explain(*items, base=base)[-1]


def brief(cause: Cause) -> tuple:
    """What a user reads first: (code, argument, before, after)."""
    return cause.code, cause.argument, cause.before, cause.after


def session(events: list[Event], *, target: str = "prog.py:main",
            wall_seconds: float | None = None, **fields) -> Session:
    """A session of ``events`` on ``ENV``; by default the run ends 0.1 s after the last event.
    ``fields``: the other ``Session`` fields (``calls``, ``warnings``, ...)."""
    if wall_seconds is None:
        wall_seconds = max((e.end_seconds for e in events), default=0.0) + 0.1
    return Session(ENV, target, tuple(events), wall_seconds, **fields)


# Ready-made reports -------------------------------------------------------------------------
def hostile_report() -> Report:
    """Function names, static values, argument names, paths, warnings and exception messages
    that try to break out of every format."""
    name = FORMULA
    defined = f"/p/a|b`c\n{SCRIPT}.py:3"
    site = f"/p/x,y:z%{ESC}.py:7 (main)"
    static = "m|`<i>\n"
    values = ["'a'", f"'{SCRIPT}|`x`\n::error::pwned %{BEL}'", "'@SUM(1)'"]
    events = [f32_event(i, name, static={static: value}, defined_at=defined, call_site=site)
              for i, value in enumerate(values)]
    events.append(f32_event(3, f"{SCRIPT}{ESC}\u202e", error=TraceError(
        "Boom" + ESC, f"msg\n::error::injected %0A <b>{BEL}", "x|y")))
    events.append(f32_event(4, "-2+3+cmd|' /C calc'!A0", start=-0.5, call_site="+1.py:2"))
    return build_report(session(events, target=f"prog.py:f|`{SCRIPT}\x1b]0;title{BEL}",
                           warnings=(f"warn\n::error::w {SCRIPT}",),
                           target_exception="Ex\x1b[2J\n::error file=a::boom"))


def missing_locations_report() -> Report:
    """A function with no known location and no call site next to one with both, so that
    pandas holds NaN where the session had None."""
    events = [f32_event(0, "lost", n=3), f32_event(1, "lost", n=4),
              f32_event(2, "lost", n=5, error=TraceError("TypeError", "bad", None)),
              f32_event(3, "found", n=3, defined_at="/p/found.py:1", call_site="/p/main.py:9"),
              f32_event(4, "found", n=4, defined_at="/p/found.py:1", call_site="/p/main.py:9")]
    return build_report(session(events))


def many_rows_report() -> Report:
    """Three functions whose order differs by count, compiles and seconds: ``fa`` compiles 12
    times (cheaply), ``fc`` 3 times, ``fb`` twice (expensively)."""
    events, seq = [], 0
    for line, (name, compiles, seconds) in enumerate([("fa", 12, 0.001), ("fb", 2, 0.2),
                                                       ("fc", 3, 0.01)]):
        for n in range(compiles):
            events.append(f32_event(seq, name, n=n + 1, seconds=seconds, start=seq * 0.5,
                                    defined_at=f"/p/{name}.py:1",
                                    call_site=f"/p/main.py:{line}"))
            seq += 1
    return build_report(session(events))


def write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    """``text`` (dedented) written to ``tmp_path / name``: a spec or budget file for a test."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path
