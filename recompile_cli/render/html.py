"""A self-contained HTML report: summary, cost-ranked causes, a compile timeline per function
(inline SVG), events with their argument diffs, suggestions and warnings. No network access is
needed to open it: styles, script and picture are all inside the file.

Every value from the session (names, values, paths, messages) is written through
``escape.html``, in text, tables, SVG labels and tooltips alike; nothing from it becomes markup.
Click a column header to sort its table (again to reverse).

The page stays the same size however long the run: the events table lists its first
``MAX_EVENT_ROWS`` rows and says how many there are, and the timeline (``render.timeline``) has
a bounded number of rows and marks."""

from __future__ import annotations

import numbers
from typing import Any

from recompile_cli.analysis.report import Report
from recompile_cli.render.escape import html as escape
from recompile_cli.render.escape import is_missing
from recompile_cli.render.table import (
    cause_rows,
    count_events,
    event_rows,
    function_rows,
    hidden_functions,
    warnings,
)
from recompile_cli.render.timeline import timeline

# The events table lists this many rows at most, so that the page stays quick to open and sort
# however long the run; the page says how many there are and where to find them all.
MAX_EVENT_ROWS = 1_000


def render(report: Report, show_all: bool = False) -> str:
    session, totals = report.session, report.totals
    env = session.environment
    sections = [
        f"<h1>recompile-cli: {escape(session.target)}</h1>",
        (f'<p class="env">jax {escape(env.jax_version)}, {escape(env.backend)}, hook mode '
         f"{escape(env.hook_mode)}</p>"),
        '<div class="summary" id="summary">' + "".join(
            f'<div class="stat"><b>{escape(value)}</b><span>{label}</span></div>'
            for label, value in [
                ("traces", totals["traces"]), ("compiles", totals["compiles"]),
                ("errors", totals["errors"]),
                ("compile s", f"{totals['compile_seconds']:.3f}"),
                ("wall s", f"{totals['wall_seconds']:.3f}")]) + "</div>",
    ]
    if session.target_exception:
        sections.append(f'<p class="error">The target raised: '
                        f"{escape(session.target_exception)}</p>")
    if not report.cause_table.empty:
        sections += ["<h2>Re-compilations by cost</h2>", _table(*cause_rows(report), "causes")]
    sections += ["<h2>Timeline</h2>", timeline(report, show_all)]
    sections += ["<h2>Functions</h2>", _table(*function_rows(report, show_all), "functions")]
    if not show_all:
        sections += [f'<p class="hidden">{escape(line)}</p>' for line in hidden_functions(report)]
    headers, rows = event_rows(report, show_all, MAX_EVENT_ROWS)
    if rows:
        sections += ["<h2>Recompilation events</h2>", _table(headers, rows, "events")]
        total = count_events(report, show_all)
        if total > len(rows):
            sections.append(
                f'<p class="hidden" id="events-more">The first {len(rows):,} of {total:,} '
                "events (a click on a header sorts these); <code>recompile-cli report SESSION "
                "--format csv</code> or <code>--format json</code> lists them all.</p>")
    if report.suggestions:
        sections += ["<h2>Suggestions</h2>", "<ul>" + "".join(
            f"<li><b>{escape(s.function)}</b>: {escape(s.message)}</li>"
            for s in report.suggestions) + "</ul>"]
    notes = warnings(report)
    if notes:
        sections += ["<h2>Warnings</h2>", "<ul>" + "".join(
            f"<li>{escape(w)}</li>" for w in notes) + "</ul>"]
    return _PAGE.format(title=escape(f"recompile-cli: {session.target}"),
                        body="\n".join(sections))


def _table(headers: list[str], rows: list[list[Any]], name: str) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "\n".join("<tr>" + "".join(_cell(value) for value in row) + "</tr>" for row in rows)
    return (f'<table class="sortable" id="{escape(name)}">\n<thead>\n<tr>{head}</tr>\n</thead>'
            f"\n<tbody>\n{body}\n</tbody>\n</table>")


def _cell(value: object) -> str:
    if is_missing(value):
        return "<td></td>"
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        text = f"{value:.3f}" if isinstance(value, float) else str(value)
        return f'<td class="num">{escape(text)}</td>'
    return f"<td>{escape(value)}</td>"


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }}
h1 {{ font-size: 20px; margin-bottom: 0; }} h2 {{ font-size: 16px; margin-top: 28px; }}
.env {{ color: #666; margin-top: 4px; }}
.summary {{ display: flex; gap: 12px; }}
.stat {{ border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 80px; }}
.stat b {{ display: block; font-size: 20px; }} .stat span {{ color: #666; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #ddd; padding: 3px 8px; }}
th {{ background: #f4f4f4; cursor: pointer; text-align: left; }}
th[aria-sort="descending"]::after {{ content: " \\25BC"; }}
th[aria-sort="ascending"]::after {{ content: " \\25B2"; }}
td {{ font-family: ui-monospace, monospace; white-space: pre-wrap; }}
td.num {{ text-align: right; }}
.error {{ color: #b00020; }} .hidden {{ color: #666; margin: 4px 0; }}
svg .label {{ font-size: 12px; }} svg .axis {{ font-size: 11px; fill: #666; }}
svg .grid {{ stroke: #eee; }}
.key {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }}
</style></head>
<body>
{body}
<script>
// Click a column header to sort its own table by that column: largest first, then (click
// again) smallest first. Numbers compare as numbers ("x3", "0.041"), the rest as text.
// The page is complete without script.
const sortKey = text => {{
  const match = /^x?(-?(?:\\d+\\.?\\d*|\\.\\d+)(?:e[-+]?\\d+)?)$/i.exec(text.trim());
  return match ? [0, parseFloat(match[1])] : [text.trim() === "" ? 2 : 1, text.trim()];
}};
const compareKeys = (a, b) => (a[0] === 0 ? a[1] - b[1] : a[1].localeCompare(b[1]));
document.querySelectorAll("table.sortable").forEach(table => {{
  const headers = Array.from(table.tHead ? table.tHead.rows[0].cells : []);
  headers.forEach(th => {{
    th.addEventListener("click", () => {{
      const column = th.cellIndex;
      const order = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
      headers.forEach(other => other.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", order);
      const body = table.tBodies[0];
      const rows = Array.from(body.rows, (row, index) => ({{row, index,
        key: sortKey(row.cells[column] ? row.cells[column].textContent : "")}}));
      rows.sort((a, b) => {{
        if (a.key[0] !== b.key[0]) return a.key[0] - b.key[0];  // numbers, text, then empty
        const c = compareKeys(a.key, b.key);
        return (order === "descending" ? -c : c) || a.index - b.index;
      }});
      rows.forEach(({{row}}) => body.appendChild(row));
    }});
  }});
}});
document.body.dataset.ready = "true";
</script>
</body></html>
"""
