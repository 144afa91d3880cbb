"""Slow calls without JAX: hand-built sessions analysed, ranked, gated, rendered in every
format, streamed to an events log and read back (cut short too), and merged."""

from __future__ import annotations

import json
import math

import msgspec
import pytest
from builders import ENV, event, f32_event, leaf, sig

from recompile_cli.analysis.hosts.merge import merge_reports, split
from recompile_cli.analysis.report import RowKind, build_report
from recompile_cli.analysis.slow_calls import FLATTEN_SECONDS, NOT_RECORDED, verdict
from recompile_cli.gate.evaluate import Gated, Gates, evaluate
from recompile_cli.gate.limits import Budget
from recompile_cli.gate.rules import Rule
from recompile_cli.render import FORMATS, render
from recompile_cli.render.csv import render_files
from recompile_cli.session.events_log import EventLog
from recompile_cli.session.files import load_session, save_session
from recompile_cli.session.model import (
    PUBLIC_ONLY_CHOSEN,
    CallKind,
    FlattenCost,
    Owner,
    Session,
    SlowCalls,
    SlowCallWatch,
    SlowReason,
)

WATCHED = SlowCallWatch(True, fast_call_seconds=5e-6)


def slow(reason: SlowReason = SlowReason.UNORDERED_EFFECT, calls: int = 100,
         seconds: float = 0.01, function: str = "step", **fields: object) -> SlowCalls:
    values: dict[str, object] = dict(
        function=function, defined_at="prog.py:3", owner=Owner.USER, reason=reason,
        calls=calls, seconds=seconds, call_site="prog.py:20 (<module>)", line="prog.py:5",
        detail="jax.debug.callback", arguments="x: f32[8]")
    values.update(fields)
    return SlowCalls(**values)  # type: ignore[arg-type]


def session(*groups: SlowCalls, watch: SlowCallWatch | None = WATCHED,
            events: tuple = ()) -> Session:
    return Session(environment=ENV, target="prog.py", events=events, wall_seconds=1.0,
                   slow_calls=groups, slow_call_watch=watch)


def test_the_cost_is_the_dispatch_above_the_baseline_and_never_negative_or_absurd():
    report = build_report(session(
        slow(calls=100, seconds=0.01),  # 100 us per call over a 5 us baseline
        slow(SlowReason.EVICTION, calls=10, seconds=1e-5, function="cheap"),  # 1 us a call
        slow(SlowReason.UNKNOWN, calls=5, seconds=math.nan, function="odd")))
    found = {g.function: g for g in report.slow_calls.groups}
    assert found["step"].avoidable_seconds == pytest.approx(100 * (1e-4 - 5e-6))
    assert found["step"].per_call_seconds == pytest.approx(1e-4)
    assert found["cheap"].avoidable_seconds == 0.0  # below the baseline: nothing, not < 0
    assert found["odd"].seconds == found["odd"].avoidable_seconds == 0.0
    assert [g.function for g in report.slow_calls.groups] == ["step", "cheap", "odd"]
    # a session of this version: its seconds are the dispatch outside the execution already
    unmeasured = build_report(session(slow(), watch=SlowCallWatch(True)))
    (group,) = unmeasured.slow_calls.groups
    assert group.avoidable_seconds == group.seconds == 0.01
    assert "outside the program's execution" in unmeasured.slow_calls.baseline
    assert "did not finish" not in unmeasured.slow_calls.baseline


@pytest.mark.parametrize("reason", list(SlowReason))
def test_every_reason_has_its_words_and_a_fix_true_for_it(reason):
    (group,) = build_report(session(slow(reason))).slow_calls.groups
    assert group.why and "{" not in group.why
    if reason in (SlowReason.UNKNOWN,):
        assert group.fix is None  # nothing is known to help: no fix is guessed
    else:
        assert group.fix and "{" not in group.fix
    if reason not in (SlowReason.PGLE, SlowReason.UNKNOWN):
        assert "100 slow calls -> 0" in group.fix
    if reason in (SlowReason.UNORDERED_EFFECT, SlowReason.ORDERED_EFFECT):
        assert "`jax.debug.callback` at prog.py:5" in group.why


def test_pure_callback_is_advised_only_where_it_keeps_the_fast_path():
    def fix(version: str, **fields: object) -> str | None:
        env = msgspec.structs.replace(ENV, jax_version=version)
        report = build_report(msgspec.structs.replace(session(slow(**fields)), environment=env))
        return report.slow_calls.groups[0].fix

    assert "jax.pure_callback" in (fix("0.10.2") or "")
    assert "jax.pure_callback" not in (fix("0.6.2") or "")
    aot = {"reason": SlowReason.AOT_HOST_CALLBACK, "detail": "jax.pure_callback",
           "kind": CallKind.AOT}
    assert "call the jitted function instead" in (fix("0.10.2", **aot) or "")
    assert "move `jax.pure_callback`" in (fix("0.6.2", **aot) or "")


def test_slow_calls_are_ranked_with_the_recompiles_by_seconds():
    first, recompile = f32_event(0, "f", n=3), f32_event(1, "f", n=4)  # 0.03 s each
    report = build_report(session(slow(seconds=1.0), slow(seconds=1e-3, function="tiny"),
                                  slow(function="lib", owner=Owner.JAX),
                                  events=(first, recompile)))
    rows = [(r.kind, r.function) for r in report.cause_table]
    assert rows == [(RowKind.SLOW_CALLS, "step"), (RowKind.RECOMPILE, "f"),
                    (RowKind.SLOW_CALLS, "tiny")]  # JAX's own groups are not listed
    assert report.cause_table[0].values == "jax.debug.callback"


def test_the_verdict_names_yours_or_says_what_could_not_be_seen():
    report = build_report(session(slow(), slow(SlowReason.DISABLE_JIT, function="other",
                                               calls=3)))
    line = verdict(report.slow_calls)
    assert line is not None and line.startswith("slow calls: 103 calls in JAX's Python dispatch")
    assert "step 100 (unordered_effect)" in line and "other 3 (disable_jit)" in line
    blind = build_report(session(watch=SlowCallWatch(False, "this JAX lacks X")))
    assert verdict(blind.slow_calls) == "slow calls: not observable on this JAX (this JAX lacks X)"
    chosen = build_report(session(watch=SlowCallWatch(False, PUBLIC_ONLY_CHOSEN)))
    assert "with --hook-mode public-only" in (verdict(chosen.slow_calls) or "")
    old = build_report(session(watch=None))  # saved before slow calls were watched
    assert verdict(old.slow_calls) is None and old.slow_calls.note == NOT_RECORDED
    assert verdict(build_report(session()).slow_calls) is None  # observable, none: no line


def gate(report_session: Session, gates: Gates):
    return evaluate([Gated("prog.py", build_report(report_session), gates)])


def test_a_limit_on_slow_calls_fails_at_the_line_responsible():
    result = gate(session(slow(calls=3)), Gates(max_slow_calls=2))
    (violation,) = result.every_violation
    assert violation.rule == Rule.MAX_SLOW_CALLS and violation.call_site == "prog.py:5"
    assert violation.message.startswith("step: 3 slow calls (run through JAX's Python dispatch")
    assert [(row.function, row.slow_calls, row.max_slow_calls) for row in result.rows] == [
        ("step", 3, 2)]
    assert gate(session(slow(calls=2)), Gates(max_slow_calls=2)).held
    budget = Gates(budgets=(Budget("st*", max_slow_calls=0),))
    assert not gate(session(slow(calls=1)), budget).held  # a function with slow calls only


@pytest.mark.parametrize("watch", [SlowCallWatch(False, "this JAX lacks X"), None])
def test_a_limit_on_slow_calls_that_could_not_be_seen_fails(watch):
    result = gate(session(watch=watch), Gates(max_slow_calls=5))
    assert not result.held
    (violation,) = result.violations
    assert violation.rule == Rule.NOT_RECORDED and "cannot be checked" in violation.message
    assert gate(session(watch=watch), Gates(max_compiles=5)).held  # other gates unaffected
    allowed = gate(session(watch=watch), Gates(max_slow_calls=5, allow_unrecorded=True))
    assert allowed.held and any("cannot be checked" in w for w in allowed.warnings)
    budget = Gates(budgets=(Budget("*", max_slow_calls=0, allow_unrecorded=True),))
    assert gate(session(watch=watch), budget).held  # the budget's own allow_unrecorded


def test_every_format_shows_them(tmp_path):
    report = build_report(session(slow(), slow(function="jaxs", owner=Owner.JAX)))
    for fmt in set(FORMATS) - {"chrome-trace", "csv"}:  # csv: its own file, below
        assert "unordered_effect" in render(report, fmt), fmt
    terminal = render(report, "table")
    assert "Slow calls (" in terminal and "+ jax: 100 slow calls of 1 function" in terminal
    data = json.loads(render(report, "json"))["slow_calls"]
    assert (data["observable"], data["calls"], len(data["groups"])) == (True, 200, 2)
    assert data["functions"][0]["reasons"] == {"unordered_effect": 100}
    assert "step,prog.py:3,user,unordered_effect,100," in render_files(report)["slow_calls.csv"]


def test_the_events_log_streams_them_and_a_cut_short_log_keeps_them(tmp_path):
    path = tmp_path / "log.jsonl"
    log = EventLog(path)
    log.header(ENV, "prog.py", {}, SlowCallWatch(True))
    log.slow_calls(0, slow(calls=1))
    log.slow_calls(1, slow(function="other", calls=4))
    log.slow_calls(0, slow(calls=50))  # the last record of an id wins; no end record yet
    killed = load_session(path)
    assert [(g.function, g.calls) for g in killed.slow_calls] == [("step", 50), ("other", 4)]
    assert killed.slow_call_watch == SlowCallWatch(True)
    log.end(session(slow(calls=50), slow(function="other", calls=4)))
    finished = load_session(path)
    assert finished.slow_call_watch == WATCHED  # the end record brings the baseline
    saved = tmp_path / "saved.json"
    save_session(finished, saved)
    assert load_session(saved).slow_calls == finished.slow_calls
    with open(path, "ab") as file:
        file.write(b'{"type":"slow_calls","id":2,"group":{"function":"x"')  # cut mid-line
    assert load_session(path).slow_calls == finished.slow_calls


def test_merged_processes_keep_their_own_slow_calls():
    one = msgspec.structs.replace(session(slow(calls=7)), target="prog.py --rank 0")
    two = msgspec.structs.replace(session(slow(calls=9)), target="prog.py --rank 1", wall_seconds=2.0)
    merged = merge_reports([("a.json", one), ("b.json", two)]).session
    assert sorted((g.process, g.calls) for g in merged.slow_calls) == [(0, 7), (1, 9)]
    assert merged.slow_call_watch == WATCHED
    back = split(merged, "m.json")
    assert [[g.calls for g in s.slow_calls] for _, s in back] == [[7], [9]]


def test_a_flatten_above_the_threshold_names_the_function_and_its_argument():
    cost = FlattenCost(leaves=7600, nodes=15_201, custom_nodes=7600, seconds=0.017,
                       argument="model", argument_nodes=15_200, node_type="flax.Param")
    slow_one = msgspec.structs.replace(event(sig(x=leaf("f32", 3))), flatten=cost)
    quick = msgspec.structs.replace(event(sig(x=leaf("f32", 3)), function="g", seq=1),
                                flatten=msgspec.structs.replace(cost, seconds=FLATTEN_SECONDS / 2))
    report = build_report(session(events=(slow_one, quick)))
    (finding,) = report.slow_calls.flatten
    assert (finding.function, finding.argument, finding.custom_nodes) == ("f", "model", 7600)
    assert "15,201 pytree nodes" in finding.fix and "17.0 ms per call" in finding.fix
    assert "Dispatch cost of the arguments" in render(report, "table")


def test_one_group_per_function_line_and_reason_with_its_signatures_inside():
    """Issue 43: one callback line showed as 5 rows with 5 identical fixes (one per signature)."""
    records = [slow(calls=4, seconds=0.004, arguments=f"x: f32[{n}]", first_seconds=0.1 * n)
               for n in range(1, 6)]
    records += [slow(calls=2, seconds=0.002, arguments="x: f32[1]", line="prog.py:9",
                     first_seconds=0.05),  # another line of the same function
                slow(SlowReason.ARG_TYPE, calls=3, detail="`x` is a Foo", line=None)]
    report = build_report(session(*records))
    groups = {(g.line, g.reason): g for g in report.slow_calls.groups}
    assert len(groups) == 3
    merged = groups[("prog.py:5", SlowReason.UNORDERED_EFFECT)]
    assert (merged.calls, merged.seconds) == (20, pytest.approx(0.02))
    assert merged.signatures == tuple(f"x: f32[{n}]" for n in range(1, 6))
    assert merged.arguments == "x: f32[1]"  # its first signature
    assert "20 slow calls -> 0" in (merged.fix or "")
    assert groups[("prog.py:9", SlowReason.UNORDERED_EFFECT)].calls == 2
    (function,) = report.slow_calls.functions
    assert function.slow_calls == 25
    text = render(report, "table")
    assert text.count("Fix: move it out of `step`") == 2  # one per line, not per signature
    assert "20 calls (5 signatures)" in text


def test_the_saving_is_the_dispatch_and_up_to_it_on_an_accelerator():
    """A session of this version records the dispatch outside the execution: all of it is
    avoidable; on an accelerator the dispatch may overlap the device's work ("up to")."""
    cpu = build_report(session(slow(calls=10, seconds=0.005), watch=SlowCallWatch(True)))
    (group,) = cpu.slow_calls.groups
    assert group.avoidable_seconds == pytest.approx(0.005)
    assert "saving about 0.005 s" in (group.fix or "")
    gpu = msgspec.structs.replace(session(slow(calls=10, seconds=0.005),
                                          watch=SlowCallWatch(True)),
                                  environment=msgspec.structs.replace(ENV, backend="gpu"))
    (group,) = build_report(gpu).slow_calls.groups
    assert "saving up to 0.005 s" in (group.fix or "")


def test_a_finished_runs_json_never_says_it_did_not_finish():
    for watch in (SlowCallWatch(True), SlowCallWatch(True, fast_call_seconds=5e-6)):
        for groups in ((), (slow(),)):
            text = render(build_report(session(*groups, watch=watch)), "json")
            assert "did not finish" not in text
            assert json.loads(text)["slow_calls"]["baseline"]
