"""The HTML report has one renderer: the page (``--format html``) and the notebook's inline
report (``render.html.fragment``) show the same sections, warnings and stale captures included;
the fragment has no script, and every value from the session stays text."""

from __future__ import annotations

import re

from builders import SCRIPT, f32_event, hostile_report, many_rows_report, session

from recompile_cli.analysis.report import analyse
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
    return analyse(session(events, warnings=("the run was interrupted",),
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
    assert _headings(page) == ["Re-compilations by cost", "Timeline", "Functions",
                               "Recompilation events", "Suggestions"]
    assert _headings(fragment) == [h for h in _headings(page) if h != "Recompilation events"]
    assert "<summary><b>Recompilation events</b> (14)</summary>" in fragment  # folded
    assert fragment.startswith('<div class="recompile-cli"><style>')
    assert fragment.endswith("</div>")
    assert "<script" not in fragment and "<html" not in fragment and "http" not in fragment
    assert page.count("<script>") == 1 and 'id="timeline"' in fragment


def test_the_notebook_fragment_escapes_every_value():
    fragment = inline(hostile_report())
    assert SCRIPT not in fragment and "&lt;script&gt;alert(1)&lt;/script&gt;" in fragment
    assert "\x07" not in fragment and "\\x07" in fragment  # a control character, shown
