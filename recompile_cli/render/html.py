"""A self-contained HTML report: summary, cost-ranked causes, a compile timeline per function
(inline SVG), events with their argument diffs, suggestions and warnings. No network access is
needed to open it: styles, script and picture are all inside the file.

Every value from the session (names, values, paths, messages) is written through
``escape.html``, in text, tables, SVG labels and tooltips alike; nothing from it becomes markup.
Click a column header to sort its table (again to reverse)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from recompile_cli.analysis.report import Report
from recompile_cli.render.escape import html as escape
from recompile_cli.render.escape import is_missing
from recompile_cli.render.table import (
    cause_rows,
    event_rows,
    function_rows,
    hidden_functions,
    location,
    warnings,
)
from recompile_cli.session.model import Event, function_key

_STAGE_COLOURS = {"trace": "#4e79a7", "lower": "#f28e2b", "compile": "#e15759"}
_ROW, _LABEL, _WIDTH = 22, 220, 960


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
    sections += ["<h2>Timeline</h2>", _timeline(report, show_all)]
    sections += ["<h2>Functions</h2>", _table(*function_rows(report, show_all), "functions")]
    if not show_all:
        sections += [f'<p class="hidden">{escape(line)}</p>' for line in hidden_functions(report)]
    headers, rows = event_rows(report, show_all)
    if rows:
        sections += ["<h2>Recompilation events</h2>", _table(headers, rows, "events")]
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


def _shorten(label: str, width: int = 32) -> str:
    return label if len(label) <= width else label[:width - 1] + "\u2026"


def _finite(*numbers_: float) -> bool:
    return all(isinstance(n, (int, float)) and math.isfinite(n) for n in numbers_)


def _timeline(report: Report, show_all: bool) -> str:
    """One row per function that traced or compiled at top level (JAX's own functions share one
    row unless ``show_all``); a bar per stage, at its real time."""
    session = report.session
    events = [e for e in session.events if e.depth == 0 and (e.traced or e.compiled)
              and all(_finite(start, seconds) for _, start, seconds in e.stages())]
    if not events:
        return "<p>No trace or compile to show.</p>"

    def row_of(e: Event) -> str:
        if e.owner == "jax" and not show_all:
            return "jax"
        return function_key(e.function, e.defined_at)

    order: dict[str, str] = {}
    for e in sorted(events, key=lambda e: (e.owner != "user", e.start_seconds)):
        order.setdefault(row_of(e), "JAX internals" if row_of(e) == "jax" else
                         e.function if e.owner == "user" else f"{e.function} ({e.owner})")
    rows = {key: i for i, key in enumerate(order)}
    wall = session.wall_seconds if _finite(session.wall_seconds) else 0.0
    end = max(wall, max(e.end_seconds for e in events)) or 1.0
    scale = (_WIDTH - _LABEL - 10) / end
    height = _ROW * len(rows) + 30
    parts = [(f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
              f'height="{height}" role="img" aria-label="compiles over the run per function">')]
    for key, label in order.items():
        y = rows[key] * _ROW
        whole = f"<title>{escape(label)}</title>" if len(label) > 32 else ""
        parts.append(f'<text x="4" y="{y + 15}" class="label">{escape(_shorten(label))}{whole}'
                     "</text>")
        parts.append(f'<line x1="{_LABEL}" x2="{_WIDTH - 10}" y1="{y + _ROW - 2}" '
                     f'y2="{y + _ROW - 2}" class="grid"/>')
    for e in events:
        y = rows[row_of(e)] * _ROW + 3
        cause = report.primary(e)
        for stage, start, seconds in e.stages():
            x, w = _LABEL + max(start, 0.0) * scale, max(seconds * scale, 1.5)
            tip = (f"#{e.seq} {e.function}: {stage} {seconds * 1000:.1f} ms; {cause.code}"
                   + (f" at {cause.argument}: {cause.before} -> {cause.after}"
                      if cause.argument else "")
                   + (f" ({location(e.call_site)})" if location(e.call_site) else ""))
            parts.append(f'<rect class="stage {stage}" x="{x:.1f}" y="{y}" width="{w:.1f}" '
                         f'height="{_ROW - 8}" fill="{_STAGE_COLOURS[stage]}">'
                         f"<title>{escape(tip)}</title></rect>")
    axis_y = height - 12
    for i in range(6):
        t = end * i / 5
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        parts.append(f'<text x="{_LABEL + t * scale:.1f}" y="{axis_y}" class="axis" '
                     f'text-anchor="{anchor}">{t:.2f} s</text>')
    parts.append("</svg>")
    legend = " ".join(f'<span class="key" style="background:{c}"></span>{s}'
                      for s, c in _STAGE_COLOURS.items())
    return "".join(parts) + f'<p class="legend">{legend}</p>'


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
