"""The HTML report's pictures, as inline SVG (nothing loaded from the network):

* ``compile_seconds_chart``: compile seconds per function of yours, each bar split by the cause
  of its compiles (a first compile is its own colour), JAX's and libraries' compiles in one
  grey bar below;
* ``sweep_chart``: for a shape sweep (``analysis.sweeps``), the sizes seen along the varying
  dimension as dots on a number line, and the proposed bucket edges as lines.

Their size is bounded (``MAX_BARS`` bars, one dot per distinct size). Every text from the
session goes through ``escape.html``, in labels and tooltips alike.
"""

from __future__ import annotations

from collections import defaultdict

from recompile_cli.analysis.report import Report
from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.sweeps import Sweep
from recompile_cli.render.escape import html as escape
from recompile_cli.session.model import CauseCode, Owner, function_key

MAX_BARS = 12
LABEL, BAR, ROW = 210, 560, 24
CAUSE_COLOURS: dict[str, str] = {
    CauseCode.FIRST_COMPILE: "#bab0ac", CauseCode.SHAPE: "#e15759", CauseCode.DTYPE: "#f28e2b",
    CauseCode.WEAK_TYPE: "#edc948", CauseCode.STATIC_VALUE: "#4e79a7",
    CauseCode.TREE_STRUCTURE: "#76b7b2", CauseCode.ARG_PASSING: "#59a14f",
    CauseCode.NEW_FUNCTION: "#b07aa1", CauseCode.TRACING_CONTEXT: "#ff9da7",
    CauseCode.SHARDING: "#9c755f", CauseCode.DERIVED_JAXPR: "#86bcb6",
    CauseCode.UNKNOWN: "#79706e"}
_NOT_YOURS = "#d4d4d4"


def _short(text: str, width: int = 30) -> str:
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def compile_seconds_chart(report: Report) -> str:
    """Compile seconds per function, split by cause; ``""`` when nothing compiled."""
    by_function: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    compiles: dict[str, int] = defaultdict(int)
    names: dict[str, str] = {}
    others = 0.0
    for event in report.session.events:
        if not event.compiled:
            continue
        if event.owner != Owner.USER:
            others += event.compile_seconds
            continue
        key = function_key(event.function, event.defined_at)
        names[key] = event.function
        by_function[key][report.primary(event).code] += event.compile_seconds
        compiles[key] += 1
    if not by_function and not others:
        return ""
    ranked = sorted(by_function, key=lambda k: -sum(by_function[k].values()))
    rows: list[tuple[str, list[tuple[str, float]], str]] = [
        (names[k], sorted(by_function[k].items(), key=lambda item: -item[1]),
         counted(compiles[k], "compile")) for k in ranked[:MAX_BARS]]
    rest = ranked[MAX_BARS:]
    if rest:
        merged: dict[str, float] = defaultdict(float)
        for k in rest:
            for code, seconds in by_function[k].items():
                merged[code] += seconds
        rows.append((f"{len(rest)} more of yours", sorted(merged.items(), key=lambda i: -i[1]),
                     counted(sum(compiles[k] for k in rest), "compile")))
    if others:
        rows.append(("not yours (JAX, libraries)", [("not yours", others)], ""))
    largest = max(sum(s for _, s in segments) for _, segments, _ in rows) or 1.0
    codes = list(dict.fromkeys(code for _, segments, _ in rows for code, _ in segments
                               if code != "not yours"))
    height = ROW * len(rows) + 34
    parts = [f'<svg class="chart" id="compile-chart" '
             f'width="{LABEL + BAR + 170}" height="{height}" role="img" '
             'aria-label="compile seconds per function, by cause">']
    x = LABEL
    for code in codes:  # the legend
        colour = CAUSE_COLOURS.get(code, "#79706e")
        parts.append(f'<rect x="{x}" y="4" width="11" height="11" fill="{colour}"/>'
                     f'<text class="axis" x="{x + 15}" y="14">{escape(code)}</text>')
        x += 24 + 7 * len(code)
    for i, (label, segments, note) in enumerate(rows):
        y = 26 + i * ROW
        total = sum(s for _, s in segments)
        parts.append(f'<text class="label" x="{LABEL - 8}" y="{y + 15}" text-anchor="end">'
                     f"<title>{escape(label)}</title>{escape(_short(label))}</text>")
        left = float(LABEL)
        for code, seconds in segments:
            width = BAR * seconds / largest
            colour = (_NOT_YOURS if code == "not yours"
                      else CAUSE_COLOURS.get(code, "#79706e"))
            parts.append(f'<rect class="bar" x="{left:.1f}" y="{y + 3}" width="{width:.1f}" '
                         f'height="{ROW - 7}" fill="{colour}"><title>{escape(label)}: '
                         f"{escape(code)}, {seconds:.3f} s</title></rect>")
            left += width
        parts.append(f'<text class="axis" x="{left + 6:.1f}" y="{y + 15}">{total:.3f} s'
                     f"{escape(', ' + note) if note else ''}</text>")
    parts.append("</svg>")
    return "".join(parts)


def sweep_chart(sweep: Sweep) -> str:
    """The sizes a sweep took (dots) and the proposed bucket edges (lines) on one axis."""
    top = max(max(sweep.edges), max(sweep.sizes))
    width, left, axis_y = 760, 20, 46

    def at(value: int) -> float:
        return left + (width - 2 * left) * value / top

    where = f"{sweep.function}: {sweep.argument} dim {sweep.dim}"
    parts = [f'<svg class="chart sweep" width="{width}" '
             f'height="86" role="img" aria-label="{escape(where)}: sizes and bucket edges">',
             f'<line class="axisline" x1="{left}" y1="{axis_y}" x2="{width - left}" '
             f'y2="{axis_y}" stroke="#888"/>']
    for edge in sweep.edges:
        x = at(edge)
        parts.append(f'<line class="edge" x1="{x:.1f}" y1="{axis_y - 26}" x2="{x:.1f}" '
                     f'y2="{axis_y + 10}" stroke="#4e79a7" stroke-dasharray="3,2">'
                     f"<title>bucket edge {edge}</title></line>"
                     f'<text class="axis" x="{x:.1f}" y="{axis_y + 22}" text-anchor="middle">'
                     f"{edge}</text>")
    for size in sweep.sizes:
        parts.append(f'<circle class="size" cx="{at(size):.1f}" cy="{axis_y}" r="3.5" '
                     f'fill="#e15759"><title>size {size}</title></circle>')
    parts.append(f'<text class="label" x="{left}" y="14">{escape(where)}: '
                 f"{counted(len(sweep.sizes), 'size')} seen (dots), "
                 f"{counted(len(sweep.edges), 'bucket')} of {escape(sweep.scheme)} "
                 "(lines)</text></svg>")
    return "".join(parts)
