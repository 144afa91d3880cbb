"""Reports of long runs stay bounded and linear: the HTML page's events table and timeline do
not grow with the run, the JSON report writes one event per line, and the
cause table's value ranges are gathered in one pass. No wall-clock assertions here: the speed
goals are measured side by side in ``benchmarks/run.py``."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import msgspec
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import synthetic

from recompile_cli.analysis.dataframes import events_frame
from recompile_cli.analysis.report import build_report
from recompile_cli.render import render
from recompile_cli.render.html import MAX_EVENT_ROWS
from recompile_cli.render.html.timeline import MAX_EXACT_EVENTS, MAX_ROWS, WIDTH
from recompile_cli.render.json_report import to_dict
from recompile_cli.session.model import Session


@pytest.fixture(scope="module")
def large():
    return build_report(synthetic.build(5_000, functions=50))


def _renamed(session: Session, name: str) -> Session:
    events = tuple(msgspec.structs.replace(e, function=f"{name}{e.function}") for e in session.events)
    return msgspec.structs.replace(session, events=events)


def test_html_lists_the_first_rows_and_says_how_many_there_are(large):
    page = render(large, "html")
    events = page.split('id="events"')[1].split("</table>")[0]
    assert events.count("<tr>") == MAX_EVENT_ROWS + 1  # the header row, then the rows
    shown = sum(1 for e in large.session.events if e.owner == "user" and e.depth == 0
                and (large.primary(e).code != "first_compile" or e.error is not None))
    assert f"The first {MAX_EVENT_ROWS:,} of {shown:,} events" in page


def test_html_timeline_sums_marks_per_pixel_column(large):
    assert len(large.session.events) > MAX_EXACT_EVENTS
    page = render(large, "html")
    svg = page.split('<svg id="timeline"')[1].split("</svg>")[0]
    marks = svg.count("<rect")
    assert 0 < marks <= MAX_ROWS * (WIDTH - 230)
    assert re.search(r"\d[\d,]* events drawn as [\d,]+ marks", page)
    tips = re.findall(r"<title>([^<]*)</title></rect>", svg)
    counted = sum(int(re.search(r": ([\d,]+) events from", t).group(1).replace(",", ""))
                  for t in tips)
    drawn = sum(1 for e in large.session.events if e.depth == 0 and (e.traced or e.compiled))
    assert counted == drawn  # every event is in exactly one mark


def test_html_page_size_does_not_grow_with_the_run():
    small = len(render(build_report(synthetic.build(4_000, functions=20)), "html"))
    big = len(render(build_report(synthetic.build(12_000, functions=20)), "html"))
    assert big < small * 1.2


def test_summed_timeline_escapes_names_in_labels_and_tooltips():
    session = _renamed(synthetic.build(MAX_EXACT_EVENTS + 500, functions=5), "<img src=x>")
    page = render(build_report(session), "html")
    assert "<img" not in page
    assert "&lt;img src=x&gt;fn_0" in page.split('<svg id="timeline"')[1]


def test_timeline_shares_one_row_among_functions_beyond_the_limit():
    session = synthetic.build(MAX_ROWS * 3, functions=MAX_ROWS * 3)
    page = render(build_report(session), "html", show_all=True)
    svg = page.split('<svg id="timeline"')[1].split("</svg>")[0]
    assert svg.count('class="label"') == MAX_ROWS
    assert "other functions" in svg


def test_json_report_is_one_event_per_line_and_reads_back(large):
    text = render(large, "json")
    lines = text.splitlines()
    events = [line for line in lines if line.startswith('    {"seq":')]
    assert len(events) == len(large.session.events)
    assert json.loads(text) == to_dict(large)


def test_json_documents_write_null_for_non_finite_numbers():
    from recompile_cli.session import codec

    assert codec.text(math.nan) == "null"
    assert json.loads(codec.document({"a": [1.0, math.inf], "b": {1: -math.inf}},
                                     long=("a",))) == {"a": [1.0, None], "b": {"1": None}}


def test_cause_table_value_range_over_many_values(large):
    rows = [row for row in large.cause_table if row.code == "shape"]
    assert rows
    for row in rows:
        assert re.fullmatch(r"f32\[\d+,8\] \.\.\. f32\[\d+,8\] \(\d+ values\)", row.values), row
        assert int(re.search(r"\((\d+) values\)", row.values).group(1)) > 3


def test_events_frame_has_one_row_per_event(large):
    frame = events_frame(large)
    assert len(frame) == len(large.session.events)
    assert frame["cause"].tolist() == [large.primary(e).code for e in large.session.events]


@pytest.mark.parametrize("source", ["synthetic", "saved"])
def test_json_report_events_are_the_saved_session_events_plus_their_analysis(large, source):
    """The JSON report's events say exactly what ``session_to_dict`` (what ``--save`` writes)
    says, plus kind, cause and causes, and the compile cost's two headline numbers."""
    from recompile_cli.session.files import load_session, session_to_dict

    report = large if source == "synthetic" else build_report(
        load_session(Path(__file__).resolve().parents[1] / "data" / "session.json"))
    written = json.loads(render(report, "json"))["events"]
    saved = json.loads(json.dumps(session_to_dict(report.session)["events"]))
    assert len(written) == len(saved) == len(report.session.events) > 0
    for line, event in zip(written, saved, strict=True):
        analysis = ("kind", "cause", "causes", "equations", "constants_bytes",
                    "same_program_as")
        assert {k: v for k, v in line.items() if k not in analysis} == event
        cost = event.get("cost") or {}
        assert line["equations"] == cost.get("equations")
        assert line["cause"] == line["causes"][0]
