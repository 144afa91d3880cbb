"""The HTML report's compile timeline: an inline SVG with one row per function and a bar per
trace, lower and compile stage at its real time.

Its size does not grow with the run: at most ``MAX_ROWS`` rows (the rest share an "other
functions" row), and when there are more than ``MAX_EXACT_EVENTS`` events, the bars of each row
are summed per pixel column, and neighbouring columns whose main stage is the same are drawn as
one mark, whose tooltip gives the events and the seconds of each stage it holds; so a run of
100,000 events draws a few thousand marks at most, not 300,000 rectangles.

Every value from the session goes through ``escape.html``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from recompile_cli.analysis.report import Report
from recompile_cli.render.escape import html as escape
from recompile_cli.render.table import location
from recompile_cli.session.model import Event, Owner, function_key

STAGE_COLOURS = {"trace": "#4e79a7", "lower": "#f28e2b", "compile": "#e15759"}
_STAGES = tuple(STAGE_COLOURS)
ROW, LABEL, WIDTH = 22, 220, 960
MAX_ROWS = 40
MAX_EXACT_EVENTS = 2_000
_OTHER = "\0other"  # the row key of the functions beyond MAX_ROWS (no function key has \0)


def _shorten(label: str, width: int = 32) -> str:
    return label if len(label) <= width else label[:width - 1] + "\u2026"


def _finite(*numbers_: float) -> bool:
    return all(isinstance(n, (int, float)) and math.isfinite(n) for n in numbers_)


def _drawable(stages: list[tuple[str, float, float]]) -> bool:
    """Every stage has a finite start and length (an edited session may hold anything)."""
    try:
        return all(math.isfinite(start) and math.isfinite(seconds) for _, start, seconds in stages)
    except TypeError:
        return False


def timeline(report: Report, show_all: bool) -> str:
    """One row per function that traced or compiled at top level (JAX's own functions share one
    row unless ``show_all``); a bar per stage, at its real time."""
    session = report.session
    staged = [(e, stages) for e in session.events if e.depth == 0 and (e.traced or e.compiled)
              for stages in (e.stages(),)
              if _drawable(stages)]
    if not staged:
        return "<p>No trace or compile to show.</p>"
    events = [e for e, _ in staged]
    keys: dict[tuple[str, str | None], str] = {}

    def key_of(e: Event) -> str:
        lane = "" if e.process is None else f"{e.process}/"  # a merged session: per process
        if e.owner == Owner.JAX and not show_all:
            return lane + "jax"
        found = keys.get((e.function, e.defined_at))
        if found is None:
            found = keys[e.function, e.defined_at] = function_key(e.function, e.defined_at)
        return lane + found

    order: dict[str, str] = {}
    for e in sorted(events, key=lambda e: (e.process or 0, e.owner != Owner.USER,
                                           e.start_seconds)):
        key = key_of(e)
        if key not in order:
            label = ("JAX internals" if e.owner == Owner.JAX and not show_all
                     else e.function if e.owner == Owner.USER else f"{e.function} ({e.owner})")
            order[key] = label if e.process is None else f"process {e.process}: {label}"
    if len(order) > MAX_ROWS:
        kept = list(order)[:MAX_ROWS - 1]
        other = len(order) - len(kept)
        order = {key: order[key] for key in kept}
        order[_OTHER] = f"{other} other functions"
    rows = {key: i for i, key in enumerate(order)}

    def row_of(e: Event) -> int:
        return rows.get(key_of(e), rows.get(_OTHER, 0))

    wall = session.wall_seconds if _finite(session.wall_seconds) else 0.0
    end = max(wall, max(start + seconds for _, stages in staged
                        for _, start, seconds in stages)) or 1.0
    scale = (WIDTH - LABEL - 10) / end
    height = ROW * len(rows) + 30
    parts = [(f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
              f'height="{height}" role="img" aria-label="compiles over the run per function">')]
    for key, label in order.items():
        y = rows[key] * ROW
        whole = f"<title>{escape(label)}</title>" if len(label) > 32 else ""
        parts.append(f'<text x="4" y="{y + 15}" class="label">{escape(_shorten(label))}{whole}'
                     "</text>")
        parts.append(f'<line x1="{LABEL}" x2="{WIDTH - 10}" y1="{y + ROW - 2}" '
                     f'y2="{y + ROW - 2}" class="grid"/>')
    draw = _exact if len(staged) <= MAX_EXACT_EVENTS else _summed
    note = draw(report, staged, row_of, list(order.values()), scale, parts)
    axis_y = height - 12
    for i in range(6):
        t = end * i / 5
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        parts.append(f'<text x="{LABEL + t * scale:.1f}" y="{axis_y}" class="axis" '
                     f'text-anchor="{anchor}">{t:.2f} s</text>')
    parts.append("</svg>")
    legend = " ".join(f'<span class="key" style="background:{c}"></span>{s}'
                      for s, c in STAGE_COLOURS.items())
    return "".join(parts) + f'<p class="legend">{legend}{note}</p>'


def _bar(x: float, y: int, w: float, stage: str, tip: str) -> str:
    return (f'<rect class="stage {stage}" x="{x:.1f}" y="{y}" width="{w:.1f}" '
            f'height="{ROW - 8}" fill="{STAGE_COLOURS[stage]}"><title>{escape(tip)}</title>'
            "</rect>")


Staged = list[tuple[Event, list[tuple[str, float, float]]]]


def _exact(report: Report, staged: Staged, row_of: Callable[[Event], int],
           labels: list[str], scale: float, parts: list[str]) -> str:
    """A bar per stage of each event, with the event's own tooltip."""
    for e, stages in staged:
        y = row_of(e) * ROW + 3
        cause = report.primary(e)
        for stage, start, seconds in stages:
            x, w = LABEL + max(start, 0.0) * scale, max(seconds * scale, 1.5)
            tip = (f"#{e.seq} {e.function}: {stage} {seconds * 1000:.1f} ms; {cause.code}"
                   + (f" at {cause.argument}: {cause.before} -> {cause.after}"
                      if cause.argument else "")
                   + (f" ({location(e.call_site)})" if location(e.call_site) else ""))
            parts.append(_bar(x, y, w, stage, tip))
    return ""


def _summed(report: Report, staged: Staged, row_of: Callable[[Event], int],
            labels: list[str], scale: float, parts: list[str]) -> str:
    """Per row and pixel column: the seconds of each stage and the events that start there;
    runs of columns with the same main stage become one bar."""
    last = WIDTH - LABEL - 11
    # row -> column -> [trace s, lower s, compile s, events starting here]
    cells: list[dict[int, list[float]]] = [{} for _ in labels]
    slots = {stage: i for i, stage in enumerate(_STAGES)}
    for e, stages in staged:
        row = cells[row_of(e)]
        for n, (stage, start, seconds) in enumerate(stages):
            start, seconds = max(start, 0.0), max(seconds, 0.0)
            x0, x1 = start * scale, (start + seconds) * scale
            lo, hi = min(int(x0), last), min(int(x1), last)
            slot = slots[stage]
            for column in range(lo, hi + 1):
                cell = row.get(column)
                if cell is None:
                    cell = row[column] = [0.0, 0.0, 0.0, 0.0]
                if lo == hi:
                    cell[slot] += seconds
                else:
                    cell[slot] += seconds * max(min(x1, column + 1) - max(x0, column), 0.0) / (
                        x1 - x0)
                if n == 0 and column == lo:
                    cell[3] += 1
    marks = 0
    for index, row in enumerate(cells):
        y = index * ROW + 3
        run: list[int] = []
        for column in sorted(row):
            main = _main_stage(row[column])
            if run and (column != run[-1] + 1 or _main_stage(row[run[0]]) != main):
                parts.append(_run_bar(labels[index], row, run, y, scale))
                marks += 1
                run = []
            run.append(column)
        if run:
            parts.append(_run_bar(labels[index], row, run, y, scale))
            marks += 1
    return (f" &mdash; {len(staged):,} events drawn as {marks:,} marks: each mark sums the "
            "events in its stretch of the run and takes the colour of the stage that took the "
            "most time there (its tooltip has the figures)")


def _main_stage(cell: list[float]) -> str:
    return _STAGES[max(range(3), key=lambda i: cell[i])]


def _run_bar(label: str, row: dict[int, list[float]], run: list[int], y: int,
             scale: float) -> str:
    totals = [sum(row[c][i] for c in run) for i in range(4)]
    stage = _main_stage(totals)
    start, stop = run[0] / scale, (run[-1] + 1) / scale
    tip = (f"{label}: {int(totals[3]):,} events from {start:.2f} s to {stop:.2f} s; trace "
           f"{totals[0]:.3f} s, lower {totals[1]:.3f} s, compile {totals[2]:.3f} s")
    return _bar(LABEL + run[0], y, max(float(len(run)), 1.5), stage, tip)
