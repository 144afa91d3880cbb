"""One escaping policy for every output (issue 19): hostile function names, static values,
argument paths, file paths and messages stay inert in every format.

Markdown (reports, gate summaries, merge reports) renders no link, image, autolink, HTML or
emphasis from them; terminal text and CSV shown on a terminal carry no control character; no
printed line starts a GitHub workflow command (``::``); HTML gets no tag from them.
"""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import markdown_it
import msgspec
import pytest
from builders import f32_event, session
from hypothesis import example, given, settings
from hypothesis import strategies as st

from recompile_cli.analysis.hosts.divergence import compare
from recompile_cli.analysis.hosts.merge import merge_reports
from recompile_cli.analysis.report import build_report
from recompile_cli.cli import output
from recompile_cli.gate.evaluate import BudgetRow, GateResult, Rule, Violation
from recompile_cli.render import escape, render
from recompile_cli.render import merged as merged_render
from recompile_cli.render.ci import gate_summary
from recompile_cli.session.model import Environment, TraceError

HOSTILE = ["\x1b[31mred\x1b[0m", "![x](http://e/i.png)", "<img src=x>", "*emph*",
           "[link](http://x)", "::error::pwned", "a\nb", "tick`name``x", "_under_",
           "www.evil.com", "a@b.co", "# heading", "1. item", "~~gone~~", "[x]: http://d"]
NAME = " ".join(HOSTILE)
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # anything but "\n"


def hostile_session(process: int | None = None):
    events = [f32_event(i, f"{value}", static={f"k{value}": repr(value)},
                        argument=f"x[{value!r}]", defined_at=f"/p/{value}.py:3",
                        call_site=f"/p/{value}.py:7 (main)", n=i + 1)
              for i, value in enumerate(HOSTILE)]
    events.append(f32_event(len(events), NAME, error=TraceError("Boom", NAME, NAME)))
    env = Environment(jax_version="0.10.2", python_version="3.11", backend="cpu",
                      hook_mode="private", process_index=process,
                      process_count=None if process is None else 2)
    made = session(events, target=f"prog.py:{NAME}", warnings=(NAME,),
                   target_exception=f"ValueError: {NAME}")
    return msgspec.structs.replace(made, environment=env)


def gate() -> GateResult:
    violation = Violation(NAME, Rule.MAX_COMPILES, f"{NAME}: 3 compiles", f"/p/{NAME}.py:3")
    rows = (BudgetRow(f"prog.py:{NAME}", NAME, "*", 3, 1, 3, None, 0.1, None, (violation,)),)
    return GateResult(rows=rows, violations=(violation,), warnings=(NAME,))


def markdown_outputs() -> dict[str, str]:
    report = build_report(hostile_session())
    merged = merge_reports([("a.json", hostile_session(0)), ("b.json", hostile_session(1))])
    return {"report": render(report, "markdown", True),
            "gate": gate_summary(gate(), markdown=True),
            "merge": merged_render.render(merged, compare(merged.parts), "markdown")}


def terminal_outputs() -> dict[str, str]:
    report = build_report(hostile_session())
    merged = merge_reports([("a.json", hostile_session(0)), ("b.json", hostile_session(1))])
    return {"report": render(report, "table", True),
            "gate": gate_summary(gate(), markdown=False),
            "merge": merged_render.render(merged, compare(merged.parts), "table")}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def html_tags(markdown: str) -> set[str]:
    parser = _Tags()
    parser.feed(markdown_it.MarkdownIt("commonmark").enable("table")
                .enable("strikethrough").render(markdown))
    return set(parser.tags)


OUR_MARKUP = {"p", "h3", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "code",
              "strong", "br"}  # **title**, `code` and line breaks of recompile-cli's own


def assert_inert_markdown(text: str) -> None:
    assert html_tags(text) <= OUR_MARKUP, html_tags(text) - OUR_MARKUP
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
    # GitHub's autolinks (not in CommonMark): no bare scheme, www. or e-mail left whole
    assert "://" not in text and "www." not in text.lower() and not re.search(r"\w@\w", text)
    assert "<img" not in text and "<script" not in text and not CONTROL.search(text)


@pytest.mark.parametrize("which", ["report", "gate", "merge"])
def test_markdown_renders_no_link_image_html_or_emphasis_from_the_data(which):
    text = markdown_outputs()[which]
    assert_inert_markdown(text)
    # the names are still there, shown literally once rendered
    assert "pwned" in text and "heading" in text


def test_only_our_own_bold_title_is_strong():
    text = markdown_outputs()["report"]
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert html.count("<strong>") == 1 and "<em>" not in html and "<del>" not in html


@pytest.mark.parametrize("which", ["report", "gate", "merge"])
def test_terminal_outputs_carry_no_control_characters_and_no_commands(which):
    text = terminal_outputs()[which]
    assert not CONTROL.search(text)
    assert "\\x1b[31m" in text
    printed = escape.no_workflow_commands(text)
    assert not any(line.lstrip().startswith("::") for line in printed.splitlines())


def test_csv_to_a_terminal_has_no_control_characters_and_to_a_file_stays_exact(
        monkeypatch, capsys):
    report = build_report(hostile_session())
    exact = render(report, "csv")
    names = {row["function"] for row in csv.DictReader(io.StringIO(exact))}
    assert "\x1b[31mred\x1b[0m" in names  # the file keeps the data
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    output.echo(exact, csv=True)
    shown = capsys.readouterr().out
    assert not CONTROL.search(shown) and "\\x1b[31m" in shown
    assert not any(line.lstrip().startswith("::") for line in shown.splitlines())


def test_csv_lines_that_would_be_commands_are_quoted_and_keep_their_data():
    text = 'function,n\n::error::pwned,1\n  ::x::y,2\n'
    printed = escape.no_workflow_commands(text, csv=True)
    assert not any(line.lstrip().startswith("::") for line in printed.splitlines())
    assert list(csv.reader(io.StringIO(printed))) == list(csv.reader(io.StringIO(text)))


def test_messages_on_stderr_show_controls_and_start_no_command(capsys):
    output.message(f"error: {NAME}\n::error::pwned")
    err = capsys.readouterr().err
    assert not CONTROL.search(err) and "\\x1b[31m" in err
    assert not any(line.lstrip().startswith("::") for line in err.splitlines())


def test_markdown_escape_keeps_plain_names_as_they_are():
    for plain in ["train_step", "f32[32,8] -> f32[4,8]", "batch['x']", "a.b", "x."]:
        assert escape.markdown(plain) == plain


# Every character that can start an inline or a block construct, a digit for numbered lists,
# blanks for indented code, letters, and a control character.
MARKDOWN_ALPHABET = list("[]()!*_~`<>&|\\#:/.@w1-=+) \t\nab\x1b")
# What a value may render as in each place it is written: recompile-cli's own markup only.
CONTEXTS = {"{}": ["p"], "- {}": ["ul", "li"], "text\n{}": ["p"], "### {}": ["h3"],
            "| a |\n|---|\n| {} |": ["table", "thead", "tr", "th", "tbody", "tr", "td"]}
BLOCKS = {"p", "ul", "ol", "li", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
          "table", "thead", "tbody", "tr", "th", "td", "html"}


class _Blocks(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in BLOCKS:
            self.blocks.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def rendered(markdown: str) -> _Blocks:
    """The block elements (in order) and the text of ``markdown`` as CommonMark with GitHub's
    tables renders it."""
    parser = _Blocks()
    parser.feed(markdown_it.MarkdownIt("commonmark").enable("table").render(markdown))
    return parser


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet=st.sampled_from(MARKDOWN_ALPHABET), max_size=40))
@example("- -")  # rendered as a rule after a bullet's "- " (issue 33)
@example("---")
@example("=")
@example("1) x")
@example("    code")
@example("> quote")
@example("```")
@example("+ x")
def test_any_name_is_inert_in_markdown(name):
    """Where a value starts a line, a bullet, a paragraph's second line, a heading or a table
    cell, it renders as that one element holding its text, literally: no block of its own."""
    shown = escape.markdown(name)
    assert "\n" not in shown and not CONTROL.search(shown)
    assert html_tags(f"- {shown}\n\n| a |\n|---|\n| {shown} |\n") <= OUR_MARKUP
    assert "://" not in shown and "www." not in shown.lower()
    literal = escape.controls(name).strip(" \t")
    for context, blocks in CONTEXTS.items():
        found = rendered(context.format(shown) + "\n")
        if not literal and context == "{}":
            continue  # an empty value is an empty line: nothing at all
        if not literal and context == "- {}":
            blocks = ["ul", "li"]
        assert found.blocks == blocks, (context, shown, found.blocks)
        assert literal in "".join(found.text).replace("\n", " ").strip(), (context, shown)


def test_a_function_named_like_a_rule_renders_no_block_in_any_markdown_output():
    """``- -`` rendered as a horizontal rule in ``check -f markdown`` and the report (issue
    33): in every Markdown output it is text, each line the element recompile-cli made."""
    for name in ("- -", "---", "# x", "> q", "1. x", "=", "+ y"):
        events = [f32_event(i, name, n=n, defined_at="prog.py:3", call_site="prog.py:9 (main)")
                  for i, n in enumerate((3, 4, 5))]
        report = build_report(session(events, target="prog.py"))
        violation = Violation(name, Rule.MAX_COMPILES, f"{name}: 3 compiles, budget 1")
        rows = (BudgetRow("prog.py", name, "*", 3, 1, 3, None, 0.1, None, (violation,)),)
        for text in (render(report, "markdown"),
                     gate_summary(GateResult(rows=rows), markdown=True)):
            found = rendered(text)
            assert not {"hr", "h1", "h2", "blockquote", "ol", "pre"} & set(found.blocks), (
                name, text)
            bullets = sum(line.startswith(("- ", "+ ")) for line in text.splitlines())
            assert found.blocks.count("li") == bullets, (name, text)  # recompile-cli's own
            assert f"{name}: 3 compiles" in "".join(found.text), (name, text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(":, \n\r\x0b\x85\u2028\u3000\"xe")),
               max_size=30))
def test_no_printed_line_starts_a_workflow_command(text):
    for csv_mode in (False, True):
        printed = escape.no_workflow_commands(text, csv_mode)
        assert not any(line.lstrip().startswith("::") for line in printed.splitlines())
