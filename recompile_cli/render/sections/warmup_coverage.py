"""The warm-up section of a report (a run after a warm-up plan: ``Session.warmup``): the lines
of the terminal and Markdown report, and the JSON report's ``warmup_coverage`` field. The
findings are ``analysis.warmup.coverage``'s; the renderers escape the lines as they write them.
"""

from __future__ import annotations

from typing import Any

from recompile_cli.analysis.report import Report
from recompile_cli.analysis.warmup.coverage import summary_lines
from recompile_cli.analysis.warmup.plan import signature_label
from recompile_cli.session.locations import relative, relative_in


def text_lines(report: Report) -> list[str]:
    """The section's lines (unescaped), empty without a warm-up plan."""
    found = report.warmup_coverage
    if found is None:
        return []
    return [relative_in(line) for line in summary_lines(found, lambda e: relative(e.call_site))]


def json_section(report: Report) -> dict[str, Any] | None:
    """``{"plan", "compiled", "skipped", "error", "misses": [...], "others": {...}}``; None
    without a warm-up plan."""
    found = report.warmup_coverage
    if found is None:
        return None
    warmup = found.warmup
    return {
        "plan": warmup.plan, "compiled": found.warmup_compiles,
        "seconds": warmup.ended_seconds - warmup.started_seconds,
        "skipped": warmup.skipped, "error": warmup.error,
        "compiles_after": len(found.misses),
        "misses": [{"seq": m.event.seq, "function": m.event.function,
                    "defined_at": m.event.defined_at, "call_site": m.event.call_site,
                    "signature": signature_label(m.event.signature), "causes": m.causes,
                    "skipped": m.skipped} for m in found.misses],
        "others_after": {str(owner): count for owner, count in found.others.items()},
    }
