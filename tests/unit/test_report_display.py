"""What the human reports show, on hand-built sessions: the headline leads with your functions
(first compiles called first compiles, JAX's and libraries' compiles second), the tables fit the
terminal's width, columns that say nothing are left out, advice quotes values as code in HTML,
and paths below the working folder are shown relative to it."""

from __future__ import annotations

import dataclasses
import re

import msgspec
import pytest
from builders import ENV, f32_event, hostile_report, many_rows_report, session

from recompile_cli.analysis.report import build_report
from recompile_cli.api import RecompileReport
from recompile_cli.render import escape, fit, render
from recompile_cli.render import table as terminal
from recompile_cli.session.model import TraceError

JAX_OP = "/venv/lib/python3.11/site-packages/jax/_src/dispatch.py:101"
FLAX_FN = "/venv/lib/python3.11/site-packages/flax/core/scope.py:12"


def mixed_report():
    """``step`` compiles twice (a new shape); JAX's eager op compiles 3 times; a flax function
    only re-traces (0 compiles)."""
    events = [f32_event(0, "broadcast_in_dim", n=1, owner="jax", defined_at=JAX_OP),
              f32_event(1, "step", n=3, defined_at="prog.py:3", call_site="prog.py:9 (main)"),
              f32_event(2, "broadcast_in_dim", n=2, owner="jax", defined_at=JAX_OP),
              f32_event(3, "step", n=4, defined_at="prog.py:3", call_site="prog.py:9 (main)"),
              f32_event(4, "broadcast_in_dim", n=3, owner="jax", defined_at=JAX_OP),
              f32_event(5, "<lambda>", n=3, owner="library", defined_at=FLAX_FN)]
    retrace = msgspec.structs.replace(f32_event(6, "<lambda>", n=4, owner="library",
                                            defined_at=FLAX_FN), compiled=False,
                                  lower_seconds=0.0, compile_seconds=0.0)
    first = msgspec.structs.replace(events[-1], compiled=False, lower_seconds=0.0,
                                compile_seconds=0.0)
    return build_report(session([*events[:-1], first, retrace]))


def test_the_headline_leads_with_your_functions_then_what_is_not_yours():
    report = mixed_report()
    lines = terminal.render(report, width=100).splitlines()
    assert lines[1] == "step: 2 compiles, 1 re-compile (shape)"
    assert lines[2].startswith("not yours: jax 3 compiles of 1 function (")  # flax: 0 compiles
    assert lines[3].startswith("in all, ") and "5 compiles, 0 errors" in lines[3]
    text = "\n".join(lines)
    assert "re-traced and re-compiled" not in text and "flax 0" not in text
    assert "+ flax: 1 internal function (0 compiled): 2 traces, 0 compiles" in text
    markdown = render(report, "markdown").splitlines()
    assert markdown[1] == "step: 2 compiles, 1 re-compile (shape)  "  # a Markdown line break
    # the JSON totals keep their fields and add the split: first compiles never re-compiles
    totals = RecompileReport(report).totals
    assert (totals["compiles"], totals["first_compiles"], totals["recompiles"]) == (5, 2, 3)
    user = totals["by_owner"]["user"]
    assert (user["compiles"], user["first_compiles"], user["recompiles"]) == (2, 1, 1)
    assert totals["by_owner"]["library"]["compiles"] == 0
    assert list(totals)[:3] == ["traces", "compiles", "errors"]


def test_the_html_cards_and_the_notebook_lead_with_your_functions():
    report = mixed_report()
    for html in (render(report, "html"), RecompileReport(report)._repr_html_()):
        cards = re.findall(r'<div class="stat( other)?"><b>([^<]*)</b><span>([^<]*)</span>', html)
        assert cards[:3] == [("", "2", "your compiles"), ("", "1", "re-compiles"),
                             ("", "1", "first compiles")]
        assert ("", "0", "traces raised") in cards
        assert (" other", "3", "compiles not yours") in cards
        assert (" other", "5", "compiles in all") in cards
        assert '<ul class="headline"><li>step: 2 compiles, 1 re-compile (shape)</li></ul>' in html


def test_a_first_compile_is_never_a_re_compile():
    one = build_report(session([f32_event(0, "f", n=3)]))
    assert terminal.render(one, width=100).splitlines()[1] == "f: 1 compile, no re-compile"
    assert (one.totals.first_compiles, one.totals.recompiles) == (1, 0)
    assert "No re-compilation of your functions" in render(one, "html")


def test_a_trace_that_raised_is_no_re_compile():
    events = [f32_event(0, "f", n=3),
              f32_event(1, "f", n=4, error=TraceError("TypeError", "bad operand", "x"))]
    report = build_report(session(events))
    assert report.cause_table == ()  # not a shape re-compile
    text = terminal.render(report, width=100)
    assert text.splitlines()[1] == "f: 1 compile, 1 trace raised (TypeError)"
    assert "Re-compilations by cost" not in text
    assert re.search(r"^1 +f +.*error: TypeError", text, re.MULTILINE)  # still an event
    assert report.totals.by_owner["user"].errors == 1


def test_library_functions_that_did_not_compile_are_no_re_compilations():
    report = mixed_report()
    assert [(row.function, row.code) for row in report.cause_table] == [("step", "shape")]


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("make", [mixed_report, many_rows_report, hostile_report])
def test_every_line_fits_the_terminal(make, width):
    text = terminal.render(make(), width=width)
    assert max(len(line) for line in text.splitlines()) <= width, text


def test_long_values_are_shortened_in_the_middle_and_locations_lose_their_folders():
    deep = "/home/someone/projects/research/experiments/2024/models/transformer/train.py"
    events = [f32_event(i, "train_the_whole_model_for_one_step", n=n, defined_at=f"{deep}:3",
                        call_site=f"{deep}:90 (main)") for i, n in enumerate((3, 4, 5))]
    text = terminal.render(build_report(session(events)), width=100)
    assert ".../train.py:3" in text and ".../train.py:90" in text
    assert "train_the_whole_model_for_one_step" in text  # names kept while locations give way
    assert max(len(line) for line in text.splitlines()) <= 100


def test_columns_that_say_nothing_are_left_out():
    events = [f32_event(0, "f", n=3, defined_at="prog.py:3"),
              f32_event(1, "f", n=4, defined_at="prog.py:3")]
    plain = terminal.render(build_report(session(events)), width=200)
    header = next(line for line in plain.splitlines() if line.startswith("function "))
    assert "calls" not in header and "errors" not in header and "compiles" in header
    counted = terminal.render(build_report(session(events, calls={"f@prog.py:3": 5})), width=200)
    header = next(line for line in counted.splitlines() if line.startswith("function "))
    assert "calls" in header
    markdown = render(build_report(session(events)), "markdown")
    assert re.search(r"\|\s+compiles\s+\|", markdown) and not re.search(r"\|\s+calls\s", markdown)


def test_the_width_is_the_terminal_s(monkeypatch):
    monkeypatch.setenv("COLUMNS", "77")
    assert fit.terminal_width() == 77
    monkeypatch.delenv("COLUMNS")
    assert fit.terminal_width() is None  # pytest's stdout is no terminal: no limit


def test_advice_quotes_values_as_code_in_html_and_nothing_else_becomes_markup():
    assert escape.html_prose("pad `x` to `<b>`") == "pad <code>x</code> to <code>&lt;b&gt;</code>"
    assert escape.html_prose("a `b` c`") == "a `b` c`"  # unpaired: shown as it is
    events = [f32_event(i, "f", static={"k": str(i)}) for i in range(3)]
    report = build_report(session(events))
    advice = dataclasses.replace(report.suggestions[0],
                                 message="make `k` static; not `<script>alert(1)</script>`")
    report = dataclasses.replace(report, suggestions=(advice,))
    for html in (render(report, "html"), RecompileReport(report)._repr_html_()):
        assert "make <code>k</code> static" in html
        assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in html
        assert "`" not in html.split("<h2>Suggestions</h2>")[1].split("</ul>")[0]


def test_paths_below_the_working_folder_are_shown_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = str(tmp_path)
    events = [f32_event(i, "f", static={"k": str(i)}, defined_at=f"{here}/prog.py:3")
              for i in range(3)]
    env = msgspec.structs.replace(ENV, compilation_cache_dir=f"{here}/cache")
    report = build_report(msgspec.structs.replace(
        session(events, warnings=(f"could not read {here}/data.txt",),
                target_exception=f"f raised at {here}/prog.py:7: bad"), environment=env))
    advice = dataclasses.replace(report.suggestions[0],
                                 message=f"the function object is made at {here}/prog.py:5")
    report = dataclasses.replace(report, suggestions=(advice,))
    for fmt in ("table", "markdown", "html"):
        text = render(report, fmt)
        assert here not in text, fmt
        assert "made at prog.py:5" in text and "raised at prog.py:7" in text
        assert "could not read data.txt" in text
    assert "persistent cache cache: 0 hits" in render(report, "table")


def test_many_functions_of_yours_are_summed_up_after_the_five_most_re_compiled():
    events, seq = [], 0
    for k in range(7):  # f0 compiles once, f1 twice, ... f6 seven times
        for n in range(k + 1):
            events.append(f32_event(seq, f"f{k}", n=n + 1, defined_at=f"prog.py:{k + 1}"))
            seq += 1
    lines = terminal.render(build_report(session(events)), width=100).splitlines()
    assert lines[1:8] == [
        "f6: 7 compiles, 6 re-compiles (shape)", "f5: 6 compiles, 5 re-compiles (shape)",
        "f4: 5 compiles, 4 re-compiles (shape)", "f3: 4 compiles, 3 re-compiles (shape)",
        "f2: 3 compiles, 2 re-compiles (shape)", "... 2 more of yours: 3 compiles, 1 re-compile",
        "yours: 28 compiles of 7 functions (7 first compiles, 21 re-compiles), 0 errors; 0.280 s"
        " compile"]


def test_functions_traced_only_inside_another_compile_nothing_of_their_own():
    inner = msgspec.structs.replace(f32_event(0, "inner", defined_at="prog.py:2"), depth=1,
                                compiled=False, lower_seconds=0.0, compile_seconds=0.0)
    report = build_report(session([inner]))
    assert terminal.render(report, width=100).splitlines()[1] == (
        "none of your functions was compiled")
    assert build_report(session([])).totals.by_owner == {}
    assert terminal.render(build_report(session([])), width=100).splitlines()[1] == (
        "no function of yours was traced or compiled")
