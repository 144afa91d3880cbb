"""Chrome trace / Perfetto JSON (the Trace Event Format): load it in ui.perfetto.dev or
chrome://tracing.

One track (thread) per function; its trace, lower and compile stages are complete events
(``"ph": "X"``) at their real start times, in microseconds since the start of the run; every
re-compilation gets an instant marker (``"ph": "i"``) carrying its cause and argument diff; a
counter track (``"ph": "C"``) counts compiles cumulatively.

Strict JSON: a time that is not a finite number (from an edited saved session) is ``null``.
"""

from __future__ import annotations

import math
from typing import Any

from recompile_cli.analysis.report import Report, event_kind
from recompile_cli.session.codec import document
from recompile_cli.session.model import CauseCode, Event, Owner

_PID = 1
_US = 1e6


def render(report: Report, show_all: bool = False) -> str:
    return document(trace_events(report), long=("traceEvents",))


def trace_events(report: Report) -> dict[str, Any]:
    session = report.session
    tracks: dict[tuple[str, str | None], int] = {}  # one per function_key
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "name": "process_name",
         "args": {"name": f"recompile-cli: {session.target}"}}]
    timed: list[dict[str, Any]] = []
    compiles = 0
    for e in session.events:
        key = (e.function, e.defined_at)
        if key not in tracks:
            tracks[key] = len(tracks) + 1
            label = f"{e.function} ({e.owner})" if e.owner != Owner.USER else e.function
            events.append({"ph": "M", "pid": _PID, "tid": tracks[key], "name": "thread_name",
                           "args": {"name": label}})
        tid = tracks[key]
        args = _args(report, e)
        for name, start, seconds in e.stages():
            timed.append({"ph": "X", "pid": _PID, "tid": tid, "name": f"{name} {e.function}",
                          "cat": name, "ts": _us(start), "dur": _us(seconds), "args": args})
        cause = report.primary(e)
        if e.depth == 0 and (cause.code != CauseCode.FIRST_COMPILE or e.error is not None):
            timed.append({"ph": "i", "s": "t", "pid": _PID, "tid": tid,
                          "name": f"{cause.code}: {e.function}", "cat": "recompile",
                          "ts": _us(e.start_seconds), "args": args})
        if e.compiled and e.compile_start_seconds is not None:
            compiles += 1
            timed.append({"ph": "C", "pid": _PID, "name": "compiles",
                          "ts": _us(e.compile_start_seconds + e.compile_seconds),
                          "args": {"compiles": compiles}})
    timed.sort(key=lambda item: (not math.isfinite(item["ts"]),
                                 item["ts"] if math.isfinite(item["ts"]) else 0.0))
    return {"traceEvents": events + timed, "displayTimeUnit": "ms",
            "otherData": {"jax_version": session.environment.jax_version,
                          "backend": session.environment.backend,
                          "wall_seconds": session.wall_seconds}}


def _args(report: Report, e: Event) -> dict[str, Any]:
    cause = report.primary(e)
    args: dict[str, Any] = {"seq": e.seq, "kind": event_kind(e), "cause": cause.code,
                            "call_site": e.call_site, "defined_at": e.defined_at}
    if cause.argument:
        args["argument"] = cause.argument
    if cause.before or cause.after:
        args["change"] = f"{cause.before} -> {cause.after}"
    if e.error is not None:
        args["error"] = f"{e.error.type}: {e.error.message}"
    return args


def _us(seconds: float) -> float:
    return round(seconds * _US, 3)
