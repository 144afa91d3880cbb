"""The warm-up section of a report (a run after a warm-up plan: ``Session.warmup``): the lines
of the terminal and Markdown report, the table of what each compile after the warm-up lacked
(``text_section``: its call, the argument and value the plan lacked, the nearest signature the
warm-up compiled, and the lines to add to the plan, written by ``render.warmup_plan``), and the
JSON report's ``warmup_coverage`` field. The findings are ``analysis.warmup.coverage``'s; the
renderers escape the lines as they write them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recompile_cli.analysis.report import Report
from recompile_cli.analysis.warmup.coverage import Miss, summary_lines
from recompile_cli.analysis.warmup.plan import Unwritable, signature_label
from recompile_cli.render.fit import Table
from recompile_cli.render.warmup_plan import block_name, signature_source
from recompile_cli.session.locations import relative, relative_in

TITLE = "Compiles after the warm-up (what the plan lacked)"
HEADERS = ["#", "function", "call", "argument", "plan lacked", "nearest warmed",
           "nearest warmed signature"]
MAX_ROWS = 30


def text_lines(report: Report) -> list[str]:
    """The section's lines (unescaped), empty without a warm-up plan."""
    found = report.warmup_coverage
    if found is None:
        return []
    return [relative_in(line) for line in summary_lines(found, lambda e: relative(e.call_site))]


def rows(report: Report) -> Table:
    """One row per compile of yours after the warm-up: its call, the argument (leaf) and value
    the plan lacked against the nearest signature the warm-up compiled, and that signature."""
    found = report.warmup_coverage
    listed = [] if found is None or found.warmup.error else list(found.misses[:MAX_ROWS])
    out = []
    for number, miss in enumerate(listed, 1):
        cause = miss.causes[0]
        more = len(miss.causes) - 1
        argument = (cause.argument or str(cause.code)) + (f" (+{more} more)" if more else "")
        out.append([number, miss.event.function, relative(miss.event.call_site) or "",
                    argument, cause.after or "", cause.before or "",
                    signature_label(miss.nearest) if miss.nearest is not None else "(none)"])
    return HEADERS, out


def plan_line(miss: Miss) -> str | None:
    """The lines to add to the plan's block of the function for ``miss`` (None: not
    replayable, ``Miss.fix`` says what would have recorded it)."""
    if miss.planned is None:
        return None
    try:
        return signature_source(miss.planned)
    except (Unwritable, ValueError):
        return None


def text_section(report: Report, heading: str, text: Callable[[Any], str],
                 table: Callable[[Table], str], wrap: Callable[[list[str]], list[str]]
                 ) -> list[str]:
    """The table, then per row what to add to the plan (its lines, in which block) or what
    would have recorded it; empty when nothing of yours compiled after the warm-up."""
    found = rows(report)
    if not found[1]:
        return []
    assert report.warmup_coverage is not None
    misses = report.warmup_coverage.misses
    lines = ["", heading.format(TITLE), table(found)]
    if len(misses) > MAX_ROWS:
        lines.append(f"... {len(misses) - MAX_ROWS} more (see --format json)")
    for number, miss in enumerate(misses[:MAX_ROWS], 1):
        code = plan_line(miss)
        if code is None:
            lines += ["", *wrap([f"{number}. {text(relative_in(miss.fix))}"])]
            continue
        assert miss.planned is not None
        lines += ["", *wrap([f"{number}. add to the plan's {block_name(miss.planned)}() (or "
                             f"{text(relative_in(miss.fix))}):"])]
        lines += ["    " + text(line) for line in code.splitlines()]
    return lines


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
                    "skipped": m.skipped,
                    "nearest": (signature_label(m.nearest) if m.nearest is not None else None),
                    "plan_block": block_name(m.planned) if m.planned is not None else None,
                    "plan_line": plan_line(m), "fix": m.fix} for m in found.misses],
        "others_after": {str(owner): count for owner, count in found.others.items()},
    }
