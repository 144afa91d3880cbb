"""The HTML report has one renderer: the page (``--format html``) and the notebook's inline
report (``render.html.fragment``) show the same sections, warnings and stale captures included;
the fragment has no script, and every value from the session stays text."""

from __future__ import annotations

import re

from builders import SCRIPT, f32_event, hostile_report, many_rows_report, session

from recompile_cli.analysis.report import build_report
from recompile_cli.api import RecompileReport
from recompile_cli.render import render
from recompile_cli.session.model import CaptureScope, StaleCapture

STALE_ADVICE = ("stale capture: step reads global <code>scale</code>, traced as 2.0 but now "
                "3.0; the compiled step still uses 2.0")


def stale_capture_report():
    """``step`` compiled twice, and a global it read changed after its trace."""
    where = "/p/model.py:3"
    stale = StaleCapture("step", where, "scale", CaptureScope.GLOBAL, "2.0", "3.0")
    events = [f32_event(0, "step", n=3, defined_at=where),
              f32_event(1, "step", n=4, defined_at=where)]
    return build_report(session(events, warnings=("the run was interrupted",),
                           stale_captures=(stale,)))


def inline(report) -> str:
    """What a notebook shows for the report."""
    return RecompileReport(report)._repr_html_()


def _headings(html: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", html)


def test_a_stale_capture_is_shown_in_the_page_and_in_the_notebook():
    report = stale_capture_report()
    for html in (render(report, "html"), inline(report)):
        warnings = html.split("<h2>Warnings</h2>")[1]
        assert STALE_ADVICE in warnings and "the run was interrupted" in warnings


def test_the_notebook_shows_the_sections_of_the_page_without_a_script():
    report = many_rows_report()
    page, fragment = render(report, "html"), inline(report)
    assert _headings(page) == ["Suggestions", "Re-compilations by cost",
                               "Compile seconds by cause", "Shape sweeps", "Timeline",
                               "Functions", "Recompilation events"]
    assert _headings(fragment) == _headings(page)
    assert ('<details class="section" id="events-section"><summary><h2>Recompilation events'
            '</h2> <span class="count">(14)</span></summary>') in fragment  # folded
    assert fragment.startswith('<div class="recompile-cli"><style>')
    assert fragment.endswith("</div>")
    assert "<script" not in fragment and "<html" not in fragment and "http" not in fragment
    assert page.count("<script>") == 1 and 'id="timeline"' in fragment


def test_the_page_leads_with_the_fix_and_folds_long_tables():
    """Summary, then suggestions, then the ranked causes; tables of more than ``FOLD_ROWS``
    rows, the timeline and the events start folded; a short table starts open."""
    from recompile_cli.render.html import FOLD_ROWS

    page = render(many_rows_report(), "html")
    order = [page.index(marker) for marker in (
        'id="summary"', "<h2>Suggestions</h2>", "<h2>Re-compilations by cost</h2>",
        'id="compile-chart"', "<h2>Timeline</h2>", "<h2>Functions</h2>",
        "<h2>Recompilation events</h2>")]
    assert order == sorted(order)
    assert '<details class="section" id="timeline-section">' in page
    assert '<details class="section" id="events-section">' in page  # 14 > FOLD_ROWS rows
    assert '<details class="section" id="functions-section" open>' in page  # 3 rows
    assert '<details class="section" id="causes-section" open>' in page
    assert FOLD_ROWS == 10
    short = render(stale_capture_report(), "html")
    assert '<details class="section" id="events-section" open>' in short  # 2 events


def test_suggestions_render_code_spans_not_backticks():
    page = render(many_rows_report(), "html")
    suggestions = page.split("<h2>Suggestions</h2>", 1)[1].split("</ul>", 1)[0]
    assert "<code>x</code>" in suggestions and "`" not in suggestions


def test_pictures_compile_seconds_by_cause_and_the_sweep_with_bucket_edges():
    page = render(many_rows_report(), "html")
    chart = page.split('id="compile-chart"', 1)[1].split("</svg>", 1)[0]
    # a bar per function, split by cause: fb (2 compiles of 0.2 s) is the widest
    assert chart.count('class="label"') == 3
    assert "<title>fb: shape, 0.200 s</title>" in chart
    assert "<title>fb: first_compile, 0.200 s</title>" in chart
    assert ">shape</text>" in chart and ">first_compile</text>" in chart  # the legend
    sweep = page.split('class="chart sweep"', 1)[1].split("</svg>", 1)[0]
    # fa took the sizes 1..12: 12 dots, power-of-two bucket edges 1, 2, 4, 8, 16
    assert sweep.count('class="size"') == 12
    assert [int(e) for e in re.findall(r"<title>bucket edge (\d+)</title>", sweep)] == [
        1, 2, 4, 8, 16]
    assert "fa: x dim 0: 12 sizes seen (dots), 5 buckets of powers of two (lines)" in sweep


def test_a_public_only_page_says_so_first():
    from builders import ENV
    from msgspec.structs import replace

    events = [f32_event(0, "step", n=3), f32_event(1, "step", n=4)]
    old_jax = replace(ENV, hook_mode="public-only", jax_version="0.4.30")
    report = build_report(replace(session(events), environment=old_jax))
    page = render(report, "html")
    note = ('<p class="mode">public-only mode (JAX 0.4.30 lacks the internals of JAX &gt;= 0.9)'
            ": counts and times only; causes are unknown")
    assert note in page and page.index(note) < page.index('id="summary"')
    assert {c.code for causes in report.causes.values() for c in causes} <= {
        "first_compile", "unknown"}


def test_the_notebook_fragment_escapes_every_value():
    fragment = inline(hostile_report())
    assert SCRIPT not in fragment and "&lt;script&gt;alert(1)&lt;/script&gt;" in fragment
    assert "\x07" not in fragment and "\\x07" in fragment  # a control character, shown
