"""The one way a gate or guard message is put into words (``analysis.messages``), on hand-built
sessions: each cause named once with its changes in order, sibling leaves that changed alike
collapsed into one, the place said once when every change happened there, and the report's
suggestion carried. No JAX."""

from __future__ import annotations

from builders import leaf, numbered, session, sig
from msgspec.structs import replace

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.messages import advice, collapsed, describe
from recompile_cli.analysis.report import build_report
from recompile_cli.session.model import CauseCode


def batch(n: int, **more) -> object:
    """A batch of three leaves with ``n`` rows (of different widths), and ``more`` leaves."""
    return sig(paths={"batch['inputs']": leaf("f32", n, 8), "batch['mask']": leaf("bool", n, 8),
                      "batch['targets']": leaf("f32", n, 1)}, **more)


def report_of(*signatures, sites=None):
    events = numbered(*signatures)
    if sites:
        events = [replace(e, call_site=site) for e, site in zip(events, sites, strict=True)]
    return build_report(session(events, target="prog.py"))


def test_sibling_leaves_that_changed_alike_are_one_with_their_count():
    report = report_of(batch(16), batch(8))
    text = describe(report, report.session.events[1:])
    assert text == "shape at batch: 3 leaves, dim 0 16 -> 8 (prog.py:10 (<module>))"


def test_each_cause_is_named_once_with_its_changes_in_order():
    report = report_of(batch(16), batch(8), batch(4))
    text = describe(report, report.session.events[1:])
    assert text == ("shape at batch: 3 leaves, dim 0 16 -> 8, then 3 leaves, dim 0 8 -> 4 "
                    "(prog.py:10 (<module>))")
    assert text.count("batch") == 1


def test_changes_at_different_places_say_where_each_happened():
    report = report_of(sig(x=leaf("f32", 3)), sig(x=leaf("f32", 4)), sig(x=leaf("f32", 5)),
                       sites=["a.py:1 (main)", "a.py:2 (main)", "a.py:3 (main)"])
    assert describe(report, report.session.events[1:]) == (
        "shape at x: f32[3] -> f32[4] (a.py:2 (main)), then f32[4] -> f32[5] (a.py:3 (main))")


def test_two_leaves_are_listed_and_other_codes_come_after_their_own():
    report = report_of(sig(x=leaf("f32", 3), y=leaf("f32", 3), z=leaf("f32", 2)),
                       sig(x=leaf("f32", 4), y=leaf("f32", 4), z=leaf("i32", 2)))
    assert describe(report, report.session.events[1:]) == (
        "shape at x: f32[3] -> f32[4], y: f32[3] -> f32[4]; dtype at z: f32[2] -> i32[2] "
        "(prog.py:10 (<module>))")
    assert describe(report, report.session.events[1:], codes=[CauseCode.DTYPE]) == (
        "dtype at z: f32[2] -> i32[2] (prog.py:10 (<module>))")


def test_leaves_that_changed_differently_stay_apart():
    causes = [Cause(CauseCode.SHAPE, f"batch['{k}']", "f32[16,8]", after)
              for k, after in (("a", "f32[8,8]"), ("b", "f32[8,8]"), ("c", "f32[16,4]"))]
    assert collapsed(causes) == [("shape", "batch['a']", "f32[16,8] -> f32[8,8]"),
                                 ("shape", "batch['b']", "f32[16,8] -> f32[8,8]"),
                                 ("shape", "batch['c']", "f32[16,8] -> f32[16,4]")]
    alike = [Cause(CauseCode.WEAK_TYPE, f"opt.hyper['{k}']", "f32[]", "~f32[]") for k in "abc"]
    assert collapsed(alike) == [("weak_type", "opt.hyper", "3 leaves, f32[] -> ~f32[]")]


def test_the_suggestion_is_the_reports_own_for_those_causes():
    report = report_of(batch(32), batch(32), batch(4))
    late = report.session.events[2:]
    [suggestion] = [s.message for s in report.suggestions]
    assert advice(report, "f", late) == f" Suggestion: {suggestion}"
    assert advice(report, "f", late, codes=[CauseCode.DTYPE]) == ""
    assert advice(report, "other", late) == ""
