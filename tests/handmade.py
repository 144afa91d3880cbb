"""Sessions built by hand for the report tests: hostile names and values, missing locations,
long names, and tables with many rows."""

from __future__ import annotations

from recompile_cli.analysis.report import Report, analyse
from recompile_cli.session.model import (
    Environment,
    Event,
    Leaf,
    Session,
    Signature,
    TraceError,
)

ENV = Environment(jax_version="0.10.2", python_version="3.11.2", backend="cpu",
                  hook_mode="private")

FORMULA = "=cmd|' /C calc'!A0"
SCRIPT = "<script>alert(1)</script>"
ESC, BEL = "\x1b[31m", "\x07"


def event(seq: int, function: str, *, n: int = 3, static: dict[str, str] | None = None,
          start: float | None = None, seconds: float = 0.01, defined_at: str | None = None,
          call_site: str | None = None, owner: str = "user", error: TraceError | None = None,
          argument: str = "x") -> Event:
    """One trace and compile of ``function`` with an ``f32[n]`` argument (plus statics)."""
    start = seq * 0.05 if start is None else start
    signature = Signature(leaves={argument: Leaf((n,), "float32")}, static=dict(static or {}))
    compiled = error is None
    return Event(seq, function, defined_at, owner, call_site, None, 0, True, compiled, start,
                 trace_seconds=seconds, lower_seconds=seconds if compiled else 0.0,
                 compile_seconds=seconds if compiled else 0.0, signature=signature,
                 lower_start_seconds=start + seconds if compiled else None,
                 compile_start_seconds=start + 2 * seconds if compiled else None, error=error)


def session(events: list[Event], **fields) -> Session:
    wall = max((e.end_seconds for e in events), default=0.0) + 0.1
    return Session(ENV, fields.pop("target", "prog.py:main"), tuple(events), wall, **fields)


def hostile_report() -> Report:
    """Function names, static values, argument names, paths, warnings and exception messages
    that try to break out of every format."""
    name = FORMULA
    defined = f"/p/a|b`c\n{SCRIPT}.py:3"
    site = f"/p/x,y:z%{ESC}.py:7 (main)"
    static = "m|`<i>\n"
    values = ["'a'", f"'{SCRIPT}|`x`\n::error::pwned %{BEL}'", "'@SUM(1)'"]
    events = [event(i, name, static={static: value}, defined_at=defined, call_site=site)
              for i, value in enumerate(values)]
    events.append(event(3, f"{SCRIPT}{ESC}\u202e", error=TraceError(
        "Boom" + ESC, f"msg\n::error::injected %0A <b>{BEL}", "x|y")))
    events.append(event(4, "-2+3+cmd|' /C calc'!A0", start=-0.5, call_site="+1.py:2"))
    return analyse(session(events, target=f"prog.py:f|`{SCRIPT}\x1b]0;title{BEL}",
                           warnings=(f"warn\n::error::w {SCRIPT}",),
                           target_exception="Ex\x1b[2J\n::error file=a::boom"))


def missing_locations_report() -> Report:
    """A function with no known location and no call site next to one with both, so that
    pandas holds NaN where the session had None."""
    events = [event(0, "lost", n=3), event(1, "lost", n=4),
              event(2, "lost", n=5, error=TraceError("TypeError", "bad", None)),
              event(3, "found", n=3, defined_at="/p/found.py:1", call_site="/p/main.py:9"),
              event(4, "found", n=4, defined_at="/p/found.py:1", call_site="/p/main.py:9")]
    return analyse(session(events))


def many_rows_report() -> Report:
    """Three functions whose order differs by count, compiles and seconds: ``fa`` compiles 12
    times (cheaply), ``fc`` 3 times, ``fb`` twice (expensively)."""
    events, seq = [], 0
    for line, (name, compiles, seconds) in enumerate([("fa", 12, 0.001), ("fb", 2, 0.2),
                                                       ("fc", 3, 0.01)]):
        for n in range(compiles):
            events.append(event(seq, name, n=n + 1, seconds=seconds, start=seq * 0.5,
                                defined_at=f"/p/{name}.py:1", call_site=f"/p/main.py:{line}"))
            seq += 1
    return analyse(session(events))
