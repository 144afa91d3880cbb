"""The Python API on real JAX: record(), analyse(), DataFrames, sessions and the displays."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pandas as pd
import pytest
from jax_support import requires_private_hooks

import recompile_cli
from recompile_cli.analysis.dataframes import EVENT_COLUMNS
from recompile_cli.analysis.report import CAUSE_COLUMNS, FUNCTION_COLUMNS
from recompile_cli.analysis.report import build_report as cli_analyse
from recompile_cli.render import render


@jax.jit
def step(x):
    return x * 2.0


def two_shapes() -> None:
    step(jnp.ones(3))
    step(jnp.ones(3))
    step(jnp.ones(4))


def test_import_is_cheap_and_side_effect_free():
    import subprocess

    code = ("import sys, recompile_cli; "
            "print(sorted(m for m in ('jax', 'pandas', 'IPython') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@requires_private_hooks
def test_record_block_gives_a_frozen_session_and_the_cli_report():
    with recompile_cli.record("two shapes") as rec:
        assert rec.running
        two_shapes()
        assert rec.report.compiles("step") == 2  # the recording so far
    assert not rec.running
    session = rec.session
    assert isinstance(session, recompile_cli.Session)
    assert session.target == "two shapes"
    report = rec.report
    assert report.compiles("step") == 2
    assert report.causes("step") == ["first_compile", "shape"]
    assert report.text() == render(cli_analyse(session), "table")
    assert repr(report) == report.text()


def test_record_starts_from_clean_caches_unless_asked_not_to():
    step(jnp.ones(3))  # compiled before the recording
    with recompile_cli.record() as rec:
        step(jnp.ones(3))
    assert rec.report.compiles("step") == 1
    step(jnp.ones(3))
    with recompile_cli.record(keep_caches=True) as kept:
        step(jnp.ones(3))
    assert kept.report.compiles("step") == 0


def test_default_label_is_the_blocks_file_and_line():
    with recompile_cli.record() as rec:
        pass
    assert re.fullmatch(r".*test_api\.py:\d+", rec.session.target)


@requires_private_hooks
def test_record_as_decorator_bare_and_with_a_label():
    @recompile_cli.record
    def run():
        two_shapes()
        return "done"

    assert run() == "done"
    assert run.recording.session.target.endswith("run")
    assert run.recording.report.causes("step") == ["first_compile", "shape"]

    recording = recompile_cli.record("labelled")

    @recording
    def again():
        step(jnp.ones(5))

    again()
    assert recording.session.target == "labelled"
    assert recording.report.compiles("step") == 1


def test_an_exception_is_recorded_and_propagates():
    with pytest.raises(ZeroDivisionError), recompile_cli.record() as rec:
        step(jnp.ones(2))
        1 / 0
    assert "ZeroDivisionError" in rec.session.target_exception
    assert rec.report.compiles("step") == 1


def test_a_recording_cannot_nest_in_itself():
    rec = recompile_cli.record()
    with rec, pytest.raises(RuntimeError, match="already running"):
        rec.__enter__()


def test_session_before_recording_is_an_error():
    with pytest.raises(RuntimeError, match="nothing recorded"):
        recompile_cli.record().session


@requires_private_hooks
def test_to_pandas_gives_the_csv_tables():
    with recompile_cli.record() as rec:
        two_shapes()
    frames = rec.report.to_pandas()
    assert list(frames.functions.columns) == FUNCTION_COLUMNS
    assert list(frames.events.columns) == EVENT_COLUMNS
    assert list(frames.causes.columns) == CAUSE_COLUMNS
    row = frames.causes.iloc[0]
    assert (row["function"], row["code"], row["argument"], row["values"]) == (
        "step", "shape", "x", "f32[3] -> f32[4]")
    events = frames.events[frames.events["function"] == "step"]
    assert list(events["cause"]) == ["first_compile", "shape"]
    # the same from the module-level function, on the CLI's Report too
    same = recompile_cli.to_pandas(rec.report.report)
    pd.testing.assert_frame_equal(same.causes, frames.causes)
    frames.causes.loc[0, "code"] = "changed"  # copies: the report is unchanged
    assert rec.report.cause_table.loc[0, "code"] == "shape"


@requires_private_hooks
def test_save_load_analyse_round_trip(tmp_path):
    with recompile_cli.record() as rec:
        two_shapes()
    path = tmp_path / "run.json"
    recompile_cli.save_session(rec.session, path)
    loaded = recompile_cli.load_session(path)
    report = recompile_cli.analyse(loaded)
    assert isinstance(report, recompile_cli.RecompileReport)
    pd.testing.assert_frame_equal(report.cause_table, rec.report.cause_table)
    assert report.causes("step") == ["first_compile", "shape"]
    rec.report.save(tmp_path / "again.json")
    assert recompile_cli.load_session(tmp_path / "again.json") == loaded


@requires_private_hooks
def test_check_evaluates_the_cli_gate():
    with recompile_cli.record() as rec:
        two_shapes()
    assert rec.report.check(max_compiles=2).violations == []
    failed = rec.report.check(max_compiles=1)
    [violation] = failed.violations
    assert violation.message.startswith("step: 2 compiles, budget 1. Excess: shape at x")
    assert "Gate FAILED" in failed._repr_html_()
    assert failed.text().startswith("recompile-cli gate: FAILED - step: 2 compiles")
    assert rec.report.check(step=1).violations
    assert rec.report.check(fail_on=["shape"]).violations


@requires_private_hooks
def test_paths_the_api_returns_are_relative_to_the_working_folder(monkeypatch):
    """``Violation.call_site`` is what its message says, relative (issue 33), as are the
    DataFrames' paths; the saved session keeps them as recorded."""
    with recompile_cli.record() as rec:
        two_shapes()
    here, line = Path(__file__).resolve(), two_shapes.__code__.co_firstlineno + 3
    monkeypatch.chdir(here.parent)
    [violation] = rec.report.check(max_compiles=1).violations
    assert violation.call_site == f"{here.name}:{line} (two_shapes)"
    assert f"({here.name}:{line} (two_shapes))" in violation.message
    assert list(rec.report.cause_table["call_site"]) == [f"{here.name}:{line} (two_shapes)"]
    assert rec.report.functions.set_index("name").loc["step", "defined_at"].startswith(
        f"{here.name}:")
    assert f"{here}:{line} (two_shapes)" in {e.call_site for e in rec.session.events}


@requires_private_hooks
def test_html_display_is_a_self_contained_fragment_with_causes_and_suggestions():
    with recompile_cli.record() as rec:
        two_shapes()
    html = rec.report._repr_html_()
    assert html.startswith('<div class="recompile-cli">') and html.rstrip().endswith("</div>")
    for text in ("Re-compilations by cost", "step", "shape", "f32[3] -&gt; f32[4]",
                 "Suggestions", "pad to 4", "Functions"):
        assert text in html
    assert "<script" not in html and "http" not in html
    assert "<html" not in html  # a fragment, not a page


def test_html_display_escapes_hostile_names():
    def hostile(x):
        return x + 1

    hostile.__name__ = hostile.__qualname__ = "<img src=x onerror=alert(1)>"
    fn = jax.jit(hostile)
    with recompile_cli.record('<b onmouseover="x">') as rec:
        fn(jnp.ones(2))
        fn(jnp.ones(3))
    html = rec.report._repr_html_()
    assert "<img" not in html and "<b " not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_pretty_repr_is_the_terminal_report():
    pretty = pytest.importorskip("IPython.lib.pretty")
    with recompile_cli.record() as rec:
        two_shapes()
    assert pretty.pretty(rec.report) == rec.report.text().rstrip("\n")


@requires_private_hooks
def test_show_all_lists_jax_internals():
    with recompile_cli.record() as rec:
        step(jnp.ones(3))
    all_report = recompile_cli.RecompileReport(rec.report.report, show_all=True)
    assert "owner" in all_report.text() and "(--all lists them)" not in all_report.text()
    assert "(--all lists them)" in rec.report.text()


def test_public_only_hook_mode():
    with recompile_cli.record(hook_mode="public-only") as rec:
        two_shapes()
    assert rec.session.environment.hook_mode == "public-only"
    assert rec.report.totals["compiles"] >= 2


@requires_private_hooks
def test_one_name_where_a_list_is_expected_is_one_item_not_its_characters():
    """check(fail_on="shape") gates on shape (it used to match nothing: 's', 'h', ...), and
    guard(functions="train_step") guards train_step (it used to guard one-letter globs)."""

    @jax.jit
    def train_step(x):
        return x * 2

    with recompile_cli.record() as rec:
        train_step(jnp.ones(2))
        train_step(jnp.ones(3))
    gated = rec.report.check(fail_on="shape")
    assert [str(v.rule) for v in gated.violations] == ["fail_on"]
    with pytest.raises(ValueError, match="fail_on: unknown cause code"):
        rec.report.check(fail_on=["bogus"])
    with pytest.raises(TypeError, match="analyse\\(session\\) takes a Session"):
        recompile_cli.analyse("run.json")
    with pytest.raises(recompile_cli.RecompileLimitExceeded), \
            recompile_cli.guard(max_compiles=1, on="raise", functions="train_step"):
        train_step(jnp.ones(4))
        train_step(jnp.ones(5))
