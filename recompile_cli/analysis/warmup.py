"""Warm-up coverage: which compiles of a workload come after its warm-up, each a signature the
warm-up does not cover, with the call that first needs it and why (its cause against what
compiled before). Pure: ``forecast --warmup`` (``cli``) and ``forecast(warmup=...)`` (``api``)
add these notes to the forecast session's warnings.
"""

from __future__ import annotations

from collections.abc import Sequence

from recompile_cli.analysis.report import Report, build_report
from recompile_cli.session.model import Event, Session


def coverage_notes(session: Session, labels: Sequence[str], warmup_calls: int) -> list[str]:
    """One line per top-level compile of the workload after the first ``warmup_calls`` calls
    (``labels``: each call's label, in call order): a signature the warm-up does not cover, the
    call that first needs it, and why (its cause)."""
    report = build_report(session)
    missed = [e for e in session.events if e.compiled and e.depth == 0
              and e.call_index is not None and e.call_index >= warmup_calls]
    if not missed:
        return [f"warm-up: its {warmup_calls} call(s) cover every signature of the workload; "
                "the workload compiles nothing more"]
    return [f"warm-up: {len(missed)} signature(s) of the workload are not covered and compile "
            "at run time:"] + [_miss(report, e, labels[e.call_index])
                               for e in missed if e.call_index is not None]


def _miss(report: Report, event: Event, call: str) -> str:
    cause = report.primary(event)
    where = f" at {cause.argument}" if cause.argument else ""
    change = f" ({cause.before} -> {cause.after})" if cause.before or cause.after else ""
    return (f"warm-up miss: {event.function} compiles at {call}: "
            f"{cause.code}{where}{change}")
