"""Hostile names and values stay inert in every output format; missing locations, long names and
the diff table render properly. All sessions are built by hand (``builders``): no JAX runs."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pandas as pd
import pytest
from builders import (
    BEL,
    ESC,
    FORMULA,
    SCRIPT,
    f32_event,
    hostile_report,
    missing_locations_report,
)
from builders import session as make_session

from recompile_cli.analysis.compare import FunctionChange, NewCause
from recompile_cli.analysis.report import build_report
from recompile_cli.gate.evaluate import BudgetRow, GateResult, Rule, Violation
from recompile_cli.render import FORMATS, escape, render
from recompile_cli.render import table as terminal
from recompile_cli.render.ci import gate_summary, github_annotations, junit_xml
from recompile_cli.render.csv import render_files
from recompile_cli.render.diff import render_diff

RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]")  # anything but "\n"
ALL_FORMATS = list(FORMATS)


@pytest.fixture(scope="module")
def report():
    return hostile_report()


# -- checks shared by the tests -----------------------------------------------------------------

def assert_no_new_command_lines(text: str) -> None:
    """No value starts a line of its own, such as a GitHub workflow command."""
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line


def assert_simple_tables_aligned(text: str) -> None:
    """In every tabulate ``simple`` table, the two-space gaps between the columns (read from the
    dashes under the header) are blank on every line down to the table's end."""
    lines = text.splitlines()
    tables = 0
    for i, rule in enumerate(lines):
        if not re.fullmatch(r"-+(  -+)+", rule):
            continue
        tables += 1
        gaps = [m.start() for m in re.finditer("  ", rule)]
        for line in [lines[i - 1], *_until_blank(lines[i + 1:])]:
            for gap in gaps:
                assert line[gap:gap + 2].strip() == "", (gap, line)
    assert tables


def _until_blank(lines):
    """A table's lines: up to a blank line or the summary lines under it."""
    for line in lines:
        if not line.strip() or line.startswith(("+ ", "... ")):
            return
        yield line


def unescaped_pipes(line: str) -> int:
    """Pipes that end a Markdown table cell: not preceded by an odd number of backslashes."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))


def assert_markdown_tables_keep_columns(text: str) -> None:
    header_pipes = None
    rows = 0
    for line in text.splitlines():
        if not line.startswith("|"):
            header_pipes = None
            continue
        if header_pipes is None:
            header_pipes = unescaped_pipes(line)
        assert unescaped_pipes(line) == header_pipes, line
        rows += 1
    assert rows


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


# -- 1. hostile values --------------------------------------------------------------------------

def test_terminal_table_shows_control_characters_escaped(report):
    text = render(report, "table")
    assert not RAW_CONTROL.search(text)
    assert "\\x1b[31m" in text and "\\x07" in text and "\\u202e" in text
    assert FORMULA in text and SCRIPT in text  # shown as they are, only inert
    assert_no_new_command_lines(text)
    assert_simple_tables_aligned(text)
    assert "The target raised: Ex\\x1b[2J\\n::error file=a::boom" in text


def test_markdown_cells_and_bullets_are_escaped(report):
    text = render(report, "markdown")
    assert not RAW_CONTROL.search(text)
    assert "<script" not in text and "&lt;script&gt;" in text
    assert_markdown_tables_keep_columns(text)
    assert_no_new_command_lines(text)
    assert "=cmd\\|' /C calc'!A0" in text  # pipe escaped
    assert "m\\|\\`&lt;i&gt;\\\\n" in text  # pipe, backtick, HTML and the newline escaped
    assert "- warn\\\\n::error::w &lt;script&gt;" in text
    # recompile-cli's own code spans survive where the values bring no backtick
    assert "branch with `jax.lax.cond` / `jnp.where`" in render(
        build_report(make_session([f32_event(i, "f", static={"k": str(i + 1)}) for i in range(3)])),
        "markdown")


def test_csv_text_never_starts_a_formula_and_numbers_stay_numbers(report):
    texts = {"events.csv (stdout)": render(report, "csv"), **render_files(report)}
    for text in texts.values():
        rows = list(csv.reader(io.StringIO(text)))
        for row in rows[1:]:
            for value in row:
                if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
                    float(value)  # only a number may start like a formula
    events = pd.read_csv(io.StringIO(texts["events.csv"]))
    assert list(events["function"][:1]) == ["'" + FORMULA]
    assert "'-2+3+cmd|' /C calc'!A0" in list(events["function"])
    assert "'+1.py:2" in list(events["call_site"])
    assert "'@SUM(1)'" in list(events["after"])  # starts with a quote already: left alone
    assert events["start_seconds"].dtype == float and events["start_seconds"].min() == -0.5
    functions = pd.read_csv(io.StringIO(texts["functions.csv"]))
    assert functions["compiles"].dtype.kind == "i"
    causes = pd.read_csv(io.StringIO(texts["causes.csv"]))
    assert "'" + FORMULA in list(causes["function"])


def test_html_gets_no_markup_from_the_data(report):
    page = render(report, "html")
    parsed = _Elements()
    parsed.feed(page)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div", "b",
                    "span", "table", "thead", "tbody", "tr", "th", "td", "svg", "text", "line",
                    "rect", "circle", "ul", "li", "script", "details", "summary"}, tags
    assert [tag for tag, _ in parsed.tags].count("script") == 1  # the page's own
    assert "alert" not in "".join(parsed.scripts)
    assert not [name for _, attrs in parsed.tags for name, _ in attrs if name.startswith("on")]
    text = "".join(parsed.text)
    assert SCRIPT in text and FORMULA in text and "\\x1b[31m" in text  # shown, as text
    assert not RAW_CONTROL.search(page)
    for table in ("causes", "functions", "events"):
        assert f'<table class="sortable" id="{table}">' in page


def test_chrome_trace_is_strict_json(report):
    trace = json.loads(render(report, "chrome-trace"), parse_constant=_reject)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert FORMULA in names
    nan = make_session([f32_event(0, "f"), f32_event(1, "f", n=4, seconds=float("nan"))])
    trace = json.loads(render(build_report(nan), "chrome-trace"), parse_constant=_reject)
    assert any(e.get("dur", 0) is None for e in trace["traceEvents"])
    json.loads(render(build_report(nan), "json"), parse_constant=_reject)


def _reject(constant):
    raise AssertionError(f"{constant} is not JSON")


HOSTILE_VIOLATION = Violation(
    function=FORMULA, rule=Rule.MAX_COMPILES,
    message=f"{FORMULA}: 3 compiles\n::error::forged %0A 100% {SCRIPT}{ESC}\r{BEL}",
    call_site="/p/a,b:c%.py:12 (main)")


def _github_decode(text: str) -> str:
    for code, char in [("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")]:
        text = text.replace(code, char)
    return text


def test_annotations_are_one_workflow_command_each():
    plain = Violation("g", Rule.FAIL_ON, "g: 1 event(s)", None)
    lines = github_annotations([HOSTILE_VIOLATION, plain])
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("::error ") and "\n" not in line and "\r" not in line
        assert not RAW_CONTROL.search(line)
    props, message = lines[0][len("::error "):].split("::", 1)
    fields = dict(p.split("=", 1) for p in props.split(","))
    assert {k: _github_decode(v) for k, v in fields.items()} == {
        "file": "/p/a,b:c%.py", "line": "12", "title": "recompile-cli max_compiles"}
    # GitHub decodes the message back to the text, line breaks included; other control
    # characters are shown escaped
    assert _github_decode(message) == (f"{FORMULA}: 3 compiles\n::error::forged %0A 100% "
                                       f"{SCRIPT}\\x1b[31m\r\\x07")
    assert lines[1] == "::error title=recompile-cli fail_on::g: 1 event(s)"


def _rows():
    return [BudgetRow(f"prog.py:f|`{ESC}", FORMULA + BEL, "*", 3, 1, 3, None, 0.1, None,
                      (HOSTILE_VIOLATION,))]


def _summary(rows, violations, improvements=(), warnings=(), markdown=False) -> str:
    return gate_summary(GateResult(rows=tuple(rows), violations=tuple(violations),
                                   improvements=tuple(improvements), warnings=tuple(warnings)),
                        markdown=markdown)


def _junit(rows, violations, suite) -> str:
    return junit_xml(GateResult(rows=tuple(rows), violations=tuple(violations)), suite)


def test_junit_xml_stays_well_formed():
    text = _junit(_rows(), [HOSTILE_VIOLATION], f"suite{ESC}")
    root = ET.fromstring(text.encode())
    cases = root.findall("testcase")
    assert root.get("name") == "suite\\x1b[31m" and len(cases) == 2
    assert cases[0].get("name") == FORMULA + "\\x07"
    failure = cases[0].find("failure")
    assert failure.get("message").startswith(f"{FORMULA}: 3 compiles\n::error::forged")
    assert SCRIPT in failure.text and "\\x1b[31m" in failure.text


def test_gate_summary_is_inert_on_the_terminal_and_in_markdown():
    terminal = _summary(_rows(), [HOSTILE_VIOLATION], [f"better {ESC}"], [f"w|`\n{BEL}"])
    assert not RAW_CONTROL.search(terminal)
    assert_no_new_command_lines(terminal)
    assert "\\x1b[31m" in terminal
    markdown = _summary(_rows(), [HOSTILE_VIOLATION], [f"better {ESC}"], [f"w|`\n{BEL}"],
                        markdown=True)
    assert not RAW_CONTROL.search(markdown) and "<script" not in markdown
    assert_no_new_command_lines(markdown)
    assert_markdown_tables_keep_columns(markdown)
    assert "- w\\|\\`\\\\n\\\\x07" in markdown


def test_diff_is_inert_and_every_column_has_a_header():
    changes = [FunctionChange(f"prog.py:{FORMULA}{ESC}", (1, 3), (1, 3), (0.1, 0.3)),
               FunctionChange("prog.py:same", (2, 2), (2, 2), (0.2, 0.2))]
    causes = [NewCause(f"f{BEL}", "static_value", "k\n::error::x", "'a'", f"'{ESC}'", 2)]
    text = render_diff(changes, causes, "old.json", f"new{ESC}.json")
    assert not RAW_CONTROL.search(text)
    assert_no_new_command_lines(text)
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    header, spans = lines[rule - 1], [m.span() for m in re.finditer("-+", lines[rule])]
    assert [header[a:b].strip() for a, b in spans] == [
        "function", "traces", "trace change", "compiles", "compile change", "compile s"]
    row = next(line for line in lines if line.startswith("prog.py:=cmd"))
    assert [row[a:b].strip() for a, b in spans][1:5] == ["1 -> 3", "+2", "1 -> 3", "+2"]
    assert "- f\\x07: static_value at k\\n::error::x: 'a' -> '\\x1b[31m' (x2)" in text


def test_escape_helpers():
    assert escape.markdown("a\\|b") == "a\\\\\\|b" and unescaped_pipes(
        "| " + escape.markdown("a\\|b") + " |") == 2
    assert escape.markdown("f32[3] -> f32[4]") == "f32[3] -> f32[4]"
    assert escape.markdown("<a>&") == "&lt;a&gt;&amp;"
    assert escape.markdown_prose("use `x|y` here") == "use `x|y` here"
    assert escape.markdown_prose("odd ` count `x`") == "odd \\` count \\`x\\`"
    assert [escape.csv_text(v) for v in ["-1", "+2.5", "-1e-3", "-1+2", "@A1", "\tx", "a", 3]] \
        == ["-1", "+2.5", "-1e-3", "'-1+2", "'@A1", "'\tx", "a", 3]
    assert escape.github_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert escape.github_data("a:b,c%\r\n\x1b") == "a:b,c%25%0D%0A\\x1b"
    assert escape.xml("a\x00\x1b\tb") == "a\\x00\\x1b\tb"
    assert escape.terminal("\x9b\x7f\n\t") == "\\x9b\\x7f\\n\\t"
    assert escape.text(None) == escape.text(float("nan")) == escape.text(pd.NA) == ""


# -- 2. missing locations -----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_unknown_location_and_call_site_render_in_every_format(fmt):
    report = missing_locations_report()
    assert any(f.defined_at is None for f in report.functions)
    text = render(report, fmt)
    assert "lost" in text and not re.search(r"\bnan\b", text, re.IGNORECASE)
    if fmt in ("json", "chrome-trace"):
        data = json.loads(text, parse_constant=_reject)
        if fmt == "json":
            lost = next(f for f in data["functions"] if f["name"] == "lost")
            assert lost["defined_at"] is None
    if fmt == "csv":
        for content in render_files(report).values():
            pd.read_csv(io.StringIO(content))


def test_unknown_location_cells_are_empty_in_the_table():
    text = render(missing_locations_report(), "table")
    row = next(line for line in text.splitlines() if line.startswith("lost "))
    assert row.split()[:3] == ["lost", "3", "2"]  # no location, no calls: empty cells
    assert_simple_tables_aligned(text)


# -- 5. long names ------------------------------------------------------------------------------

def test_long_names_are_cut_in_the_middle_never_wrapped_inside_a_word():
    name = "compute_the_loss_of_the_whole_model_over_every_batch_of_data"
    assert len(name) == 60
    static = "'" + "v" * 70 + "'"
    events = [f32_event(0, name, static={"mode": "'a'"}, call_site="/p/main.py:3"),
              f32_event(1, name, n=4, static={"mode": static}, call_site="/p/main.py:3")]
    report = build_report(make_session(events))
    wide = terminal.render(report, width=250).splitlines()
    assert sum(name in line for line in wide) >= 4  # headline, causes, functions, events
    assert any(static in line for line in wide)  # one word, so never split
    text = terminal.render(report, width=100)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 100
    # too wide for 100 columns: both ends kept, the middle cut, never a word split over lines
    cut_name = re.compile(r"compute_\w*\.\.\.\w*data")
    assert sum(bool(cut_name.search(line)) or name in line for line in lines) >= 4
    assert any(re.search(r"'v+\.\.\.v+'", line) for line in lines)
    assert not any(re.fullmatch(r"\s*v+'?", line) for line in lines)
    assert_simple_tables_aligned(text)
    # values with spaces still wrap, at the spaces (so at the arrows)
    long_values = [f"'{word} {word}'" for word in ("alpha" * 5, "omega" * 5)]
    events = [f32_event(i, "f", static={"mode": value}) for i, value in enumerate(long_values)]
    text = render(build_report(make_session(events)), "table")
    assert "'alphaalphaalphaalphaalpha" in text and "omegaomegaomegaomegaomega'" in text
    assert_simple_tables_aligned(text)
