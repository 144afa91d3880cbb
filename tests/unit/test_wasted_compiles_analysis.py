"""Wasted compiles from hand-built sessions (``analysis.wasted_compiles``), the fingerprint's
normalisation (``capture.jax.programs.fingerprint.normalise``: text only) and the saved
session's compatibility: an event without a fingerprint is written as before."""

from __future__ import annotations

import json

from builders import ENV, event, sig
from msgspec.structs import replace

from recompile_cli.analysis.report import build_report
from recompile_cli.capture.jax.programs.fingerprint import digest, normalise
from recompile_cli.gate.evaluate import Gated, Gates, Rule, evaluate
from recompile_cli.render import render
from recompile_cli.session import codec
from recompile_cli.session.model import Session


def _session(*events, hook_mode="private"):
    env = replace(ENV, hook_mode=hook_mode)
    return Session(environment=env, target="prog.py", events=tuple(
        replace(e, seq=i) for i, e in enumerate(events)), wall_seconds=10.0)


def _static(value: str, program: str | None, **more):
    return replace(event(sig(static={"cfg": value}, x=_leaf()), **more),
                   program_fingerprint=program)


def _leaf():
    from builders import leaf

    return leaf("f32", 3)


def test_a_static_field_that_does_not_change_the_program_is_named_and_priced():
    report = build_report(_session(
        _static("Config(lr=0.1, log_every=5)", "aaa"),
        _static("Config(lr=0.1, log_every=10)", "aaa"),
        _static("Config(lr=0.2, log_every=10)", "bbb"),  # a real change
        _static("Config(lr=0.2, log_every=20)", "bbb")))
    wasted = report.wasted_compiles
    assert wasted.same_program_as == {1: 0, 3: 2}
    (group,) = wasted.groups
    assert (group.argument, group.compiles, group.events) == ("cfg.log_every", 2, (1, 3))
    assert abs(group.seconds - 2 * 0.12) < 1e-9  # trace, lowering and compile of each
    (row,) = wasted.functions
    assert (row.compiles, row.programs, row.wasted) == (4, 2, 2)


def test_a_static_whose_text_shows_no_fields_is_named_whole():
    report = build_report(_session(_static("3", "aaa"), _static("7", "aaa")))
    (group,) = report.wasted_compiles.groups
    assert group.argument == "cfg" and "take `cfg` out of static_argnums" in group.fix


def test_unknown_fingerprints_other_functions_and_processes_are_never_matched():
    report = build_report(_session(
        _static("1", "aaa"), _static("2", None), _static("3", "aaa", function="g"),
        replace(_static("4", "aaa"), process=1)))
    assert report.wasted_compiles.same_program_as == {}
    assert report.wasted_compiles.unknown == 1


def test_a_compile_whose_key_changed_in_nothing_named_is_not_counted():
    """The same signature compiled again (after jax.clear_caches()): cause unknown."""
    report = build_report(_session(_static("1", "aaa"), _static("1", "aaa")))
    assert report.primary(report.session.events[1]).code == "unknown"
    assert report.wasted_compiles.groups == ()


def test_no_fingerprint_anywhere_says_why():
    assert "earlier recompile-cli" in build_report(
        _session(_static("1", None))).wasted_compiles.note
    public = build_report(_session(_static("1", None), hook_mode="public-only"))
    assert "private hooks" in public.wasted_compiles.note


def test_every_format_and_the_gate():
    report = build_report(_session(_static("C(a=1, b=2)", "aaa"), _static("C(a=1, b=3)", "aaa")))
    text = render(report, "table")
    assert "wasted compiles: 1 compile of your functions bought nothing" in text
    data = json.loads(render(report, "json"))
    assert [e["same_program_as"] for e in data["events"]] == [None, 0]
    assert data["wasted_compiles"]["groups"][0]["argument"] == "cfg.b"
    result = evaluate([Gated("prog.py", report, Gates(max_wasted_compiles=0))])
    assert [v.rule for v in result.every_violation] == [Rule.MAX_WASTED_COMPILES]
    assert evaluate([Gated("prog.py", report, Gates(max_wasted_compiles=1))]).held


def test_an_event_without_a_fingerprint_is_saved_as_before():
    plain = event(sig(x=_leaf()))
    assert b"program_fingerprint" not in codec.encode_event(plain)
    marked = codec.encode_event(replace(plain, program_fingerprint="abc"))
    assert marked.endswith(b',"program_fingerprint":"abc"}')


MODULE = """module @jit_step attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> {jax.arg_info = "x"}) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = call @inner_1(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
  func.func private @inner_1(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
"""


def test_names_are_not_part_of_the_program():
    renamed = (MODULE.replace("@jit_step", "@jit_other").replace("inner_1", "inner_7")
               .replace('"x"', '"cfg.y"').replace('"result"', '"result[0]"'))
    assert normalise(renamed) == normalise(MODULE)
    assert digest(normalise(renamed)) == digest(normalise(MODULE))


def test_what_changes_the_program_changes_the_fingerprint():
    assert digest(normalise(MODULE.replace("tanh", "sine"))) != digest(normalise(MODULE))
    assert digest(normalise(MODULE), "devices=0") != digest(normalise(MODULE), "devices=1")
