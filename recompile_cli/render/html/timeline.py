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
from dataclasses import dataclass, field

from recompile_cli.analysis.report import Report
from recompile_cli.render.escape import html as escape
from recompile_cli.session.locations import display as location
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


def _latest(stages: list[tuple[str, float, float]]) -> float | None:
    """When the last of the stages ends (``-inf`` with none); ``None`` unless every stage has a
    finite start and length (an edited session may hold anything)."""
    latest = -math.inf
    try:
        for _, start, seconds in stages:
            if not (math.isfinite(start) and math.isfinite(seconds)):
                return None
            stop = start + seconds
            if stop > latest:
                latest = stop
    except TypeError:
        return None
    return latest


Stages = tuple[tuple[str, float, float], ...]  # (stage, start, seconds), as Event.stages()


@dataclass
class _Drawn:
    """The events drawn, each one's stages and row key. Stages are kept as tuples of numbers
    and texts, which the garbage collector stops tracking: a run of 100,000 events then keeps
    no new tracked objects (lists would cost a full collection over the whole session)."""

    events: list[Event] = field(default_factory=list)
    stages: list[Stages] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)  # the row key of each event


def _collect(report: Report, show_all: bool) -> tuple[_Drawn, float]:
    """The events that traced or compiled at top level with finite times, each one's row key
    (``process/`` + its function key, or ``jax`` for JAX's own unless ``show_all``), and the
    end of the run. One pass over the events; each function key is made once."""
    session = report.session
    drawn = _Drawn()
    keys: dict[tuple[str, str | None, int | None, bool], str] = {}
    end = session.wall_seconds if _finite(session.wall_seconds) else 0.0
    for e in session.events:
        if e.depth != 0 or not (e.traced or e.compiled):
            continue
        stages = e.stages()
        latest = _latest(stages)
        if latest is None:
            continue
        if latest > end:
            end = latest
        jax = e.owner == Owner.JAX and not show_all
        lane = keys.get((e.function, e.defined_at, e.process, jax))
        if lane is None:
            prefix = "" if e.process is None else f"{e.process}/"  # a merged session
            lane = prefix + ("jax" if jax else function_key(e.function, e.defined_at))
            keys[e.function, e.defined_at, e.process, jax] = lane
        drawn.events.append(e)
        drawn.stages.append(tuple(stages))
        drawn.lanes.append(lane)
    return drawn, end


def timeline(report: Report, show_all: bool) -> str:
    """One row per function that traced or compiled at top level (JAX's own functions share one
    row unless ``show_all``); a bar per stage, at its real time."""
    drawn, end = _collect(report, show_all)
    if not drawn.events:
        return "<p>No trace or compile to show.</p>"
    end = end or 1.0
    events = drawn.events
    order: dict[str, str] = {}  # row key -> label, in the order the rows are drawn
    first = sorted(range(len(events)), key=lambda i: (
        events[i].process or 0, events[i].owner != Owner.USER, events[i].start_seconds))
    for i in first:
        key = drawn.lanes[i]
        if key not in order:
            e = events[i]
            label = ("JAX internals" if e.owner == Owner.JAX and not show_all
                     else e.function if e.owner == Owner.USER else f"{e.function} ({e.owner})")
            order[key] = label if e.process is None else f"process {e.process}: {label}"
    if len(order) > MAX_ROWS:
        kept = list(order)[:MAX_ROWS - 1]
        other = len(order) - len(kept)
        order = {key: order[key] for key in kept}
        order[_OTHER] = f"{other} other functions"
    rows = {key: i for i, key in enumerate(order)}
    spare = rows.get(_OTHER, 0)
    row_of = [rows.get(key, spare) for key in drawn.lanes]  # of each drawn event

    scale = (WIDTH - LABEL - 10) / end
    height = ROW * len(rows) + 30
    parts = [(f'<svg id="timeline" width="{WIDTH}" '
              f'height="{height}" role="img" aria-label="compiles over the run per function">')]
    for key, label in order.items():
        y = rows[key] * ROW
        whole = f"<title>{escape(label)}</title>" if len(label) > 32 else ""
        parts.append(f'<text x="4" y="{y + 15}" class="label">{escape(_shorten(label))}{whole}'
                     "</text>")
        parts.append(f'<line x1="{LABEL}" x2="{WIDTH - 10}" y1="{y + ROW - 2}" '
                     f'y2="{y + ROW - 2}" class="grid"/>')
    if len(events) <= MAX_EXACT_EVENTS:
        note = _exact(report, drawn, row_of, scale, parts)
    else:
        note = _summed(drawn, row_of, list(order.values()), scale, parts)
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


def _exact(report: Report, drawn: _Drawn, row_of: list[int], scale: float,
           parts: list[str]) -> str:
    """A bar per stage of each event, with the event's own tooltip."""
    for e, stages, row in zip(drawn.events, drawn.stages, row_of, strict=True):
        y = row * ROW + 3
        cause = report.primary(e)
        for stage, start, seconds in stages:
            x, w = LABEL + max(start, 0.0) * scale, max(seconds * scale, 1.5)
            tip = (f"#{e.seq} {e.function}: {stage} {seconds * 1000:.1f} ms; {cause.code}"
                   + (f" at {cause.argument}: {cause.before} -> {cause.after}"
                      if cause.argument else "")
                   + (f" ({location(e.call_site)})" if location(e.call_site) else ""))
            parts.append(_bar(x, y, w, stage, tip))
    return ""


def _summed(drawn: _Drawn, row_of: list[int], labels: list[str], scale: float,
            parts: list[str]) -> str:
    """Per row and pixel column: the seconds of each stage and the events that start there;
    runs of columns with the same main stage become one bar.

    This loop runs once per stage of every event (300,000 times for 100,000 events), so it
    stays flat: ``a if a > b else b`` in place of ``max``, and a stage within one pixel column
    (the usual case) skips the loop over columns."""
    last = WIDTH - LABEL - 11
    # row -> column -> [trace s, lower s, compile s, events starting here]
    cells: list[dict[int, list[float]]] = [{} for _ in labels]
    slots = {stage: i for i, stage in enumerate(_STAGES)}
    for stages, index in zip(drawn.stages, row_of, strict=True):
        row = cells[index]
        first = True
        for stage, start, seconds in stages:
            start = 0.0 if start < 0.0 else start  # max(start, 0.0), the same result
            seconds = 0.0 if seconds < 0.0 else seconds
            x0, x1 = start * scale, (start + seconds) * scale
            lo, hi = int(x0), int(x1)
            lo, hi = last if last < lo else lo, last if last < hi else hi
            slot = slots[stage]
            if lo == hi:
                cell = row.get(lo)
                if cell is None:
                    cell = row[lo] = [0.0, 0.0, 0.0, 0.0]
                cell[slot] += seconds
                if first:
                    cell[3] += 1
            else:
                for column in range(lo, hi + 1):
                    cell = row.get(column)
                    if cell is None:
                        cell = row[column] = [0.0, 0.0, 0.0, 0.0]
                    cell[slot] += seconds * max(min(x1, column + 1) - max(x0, column), 0.0) / (
                        x1 - x0)
                    if first and column == lo:
                        cell[3] += 1
            first = False
    marks = 0
    for index, row in enumerate(cells):
        y = index * ROW + 3
        run: list[int] = []
        run_stage = ""
        for column in sorted(row):
            main = _main_stage(row[column])
            if run and (column != run[-1] + 1 or run_stage != main):
                parts.append(_run_bar(labels[index], row, run, y, scale))
                marks += 1
                run = []
            if not run:
                run_stage = main
            run.append(column)
        if run:
            parts.append(_run_bar(labels[index], row, run, y, scale))
            marks += 1
    return (f" &mdash; {len(drawn.events):,} events drawn as {marks:,} marks: each mark sums "
            "the events in its stretch of the run and takes the colour of the stage that took "
            "the most time there (its tooltip has the figures)")


def _main_stage(cell: list[float]) -> str:
    """The stage with the most seconds; the first of equals (as ``max`` picks)."""
    best = 1 if cell[1] > cell[0] else 0
    return _STAGES[2 if cell[2] > cell[best] else best]


def _run_bar(label: str, row: dict[int, list[float]], run: list[int], y: int,
             scale: float) -> str:
    totals = [sum(row[c][i] for c in run) for i in range(4)]
    stage = _main_stage(totals)
    start, stop = run[0] / scale, (run[-1] + 1) / scale
    tip = (f"{label}: {int(totals[3]):,} events from {start:.2f} s to {stop:.2f} s; trace "
           f"{totals[0]:.3f} s, lower {totals[1]:.3f} s, compile {totals[2]:.3f} s")
    return _bar(LABEL + run[0], y, max(float(len(run)), 1.5), stage, tip)
