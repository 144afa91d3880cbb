"""The session file format (``session.codec``): save without analysing, the JSON report built
on it, strict JSON, atomic writes, loading that checks every field of sessions and events logs,
and files written by the 0.1.0 release that still load unchanged."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import sys
from pathlib import Path

import msgspec
import pytest

from recompile_cli.analysis.report import build_report
from recompile_cli.errors import SessionFileError
from recompile_cli.render import json_report
from recompile_cli.session import files
from recompile_cli.session.files import load_session, save_session, session_to_dict
from recompile_cli.session.model import CauseCode, Environment, Event, HookMode, Owner, Session

DATA = Path(__file__).resolve().parent.parent / "data"
SESSION = DATA / "session.json"
RELEASE = DATA / "release_0_1_0"  # written by recompile-cli 0.1.0 (run train_loop.py)


@pytest.fixture(scope="module")
def report_data() -> dict:
    return json.loads(SESSION.read_text())


@pytest.fixture(scope="module")
def session() -> Session:
    return load_session(SESSION)


def test_session_file_error_moved_with_a_reexport():
    from recompile_cli import errors

    assert files.SessionFileError is errors.SessionFileError


def test_save_and_load_round_trip(tmp_path, session):
    path = tmp_path / "saved.json"
    save_session(session, path)
    saved = json.loads(path.read_text())
    assert "functions" not in saved and "suggestions" not in saved  # not analysed
    assert not {"kind", "cause", "causes"} & set(saved["events"][0])
    assert load_session(path) == session


@pytest.mark.parametrize("name", ["saved_session.json", "report.json", "events_log.jsonl"])
def test_files_of_the_0_1_0_release_load_unchanged(name):
    """Saved by the 0.1.0 release: the --save session, the JSON report and the events log of
    one run load as the same session, and its analysis reads as that release reported it."""
    session = load_session(RELEASE / name)
    assert session == load_session(RELEASE / "saved_session.json")
    assert len(session.events) == 54 and session.target == (
        "sample_programs/train_loop.py --epochs 1")
    assert session.environment.hook_mode is HookMode.PRIVATE
    assert session.environment.process_index is None and session.processes == ()
    assert {e.owner for e in session.events} == {Owner.USER, Owner.JAX}
    step = [e for e in session.events if e.function == "train_step"]
    assert [(e.traced, e.compiled) for e in step] == [(True, True), (True, True)]
    assert step[1].signature is not None
    assert step[1].signature.leaves["batch['x']"].short == "f32[4,8]"
    report = build_report(session)
    assert (report.totals.traces, report.totals.compiles) == (54, 16)
    assert [(c.code, c.argument, c.before, c.after) for c in report.causes[step[1].seq]] == [
        (CauseCode.SHAPE, "batch['x']", "f32[32,8]", "f32[4,8]"),
        (CauseCode.SHAPE, "batch['y']", "f32[32,1]", "f32[4,1]")]
    old = json.loads((RELEASE / "report.json").read_text())
    new = json_report.to_dict(report)
    assert list(new)[:len(old)] == list(old)  # the report's fields, in the same order
    assert list(new)[len(old):] == ["compile_cost", "slow_calls", "eager_lines",
                                    "wasted_compiles"]  # 0.3, 0.4, 0.5, 0.6
    # every total as it was, the new ones (first compiles, re-compiles, by owner) after them
    assert list(new["totals"])[:len(old["totals"])] == list(old["totals"])
    assert {key: new["totals"][key] for key in old["totals"]} == old["totals"]
    assert _kept(old["cause_table"], new["cause_table"])  # rows gained ``kind`` at their end
    for before, after in zip(old["events"], new["events"], strict=True):
        assert _kept(before, after)  # every field as it was (new ones may follow, nested too)


def _kept(old: object, new: object) -> bool:
    """Every field of ``old`` is in ``new`` as it was; ``new`` may have more, at any depth
    (``Signature`` gained fields at its end)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return all(key in new and _kept(value, new[key]) for key, value in old.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(map(_kept, old, new))
    return old == new


def test_json_report_is_the_session_plus_the_analysis(session, report_data):
    saved = session_to_dict(session)
    report = json_report.to_dict(build_report(session))
    # the keys of the saved report (tests/data/session.json), in its order; the newest,
    # wasted_compiles, last
    assert list(report) == list(report_data) and list(report)[-1] == "wasted_compiles"
    for key, value in saved.items():
        if key == "events":
            for plain, full in zip(value, report["events"], strict=False):
                assert {k: v for k, v in full.items() if k not in (
                    "kind", "cause", "causes", "equations", "constants_bytes",
                    "same_program_as")} == plain
        elif key == "totals":
            assert report["totals"]["wall_seconds"] == value["wall_seconds"]
        else:
            assert report[key] == value
    assert list(report) == list(report_data)
    totals = report_data["totals"]  # totals added since (persistent-cache misses) may follow
    assert {key: report["totals"][key] for key in totals} == totals
    for key in ("functions", "cause_table", "suggestions"):
        assert report[key] == report_data[key], key


def _with_nan(session: Session) -> Session:
    first = msgspec.structs.replace(session.events[0], trace_seconds=math.nan,
                                compile_seconds=math.inf)
    return msgspec.structs.replace(session, events=(first, *session.events[1:]),
                               wall_seconds=math.nan)


def test_nan_and_infinity_are_written_as_null(tmp_path, session):
    broken = _with_nan(session)
    path = tmp_path / "nan.json"
    save_session(broken, path)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text, parse_constant=lambda token: pytest.fail(token))
    assert data["totals"]["wall_seconds"] is None
    assert data["events"][0]["trace_seconds"] is None
    report = build_report(broken)
    functions = (dataclasses.replace(report.functions[0], lower_seconds=math.nan),
                 *report.functions[1:])
    causes = tuple(dataclasses.replace(row, seconds=math.inf) for row in report.cause_table)
    report = dataclasses.replace(report, functions=functions, cause_table=causes)
    rendered = json_report.render(report)
    assert "NaN" not in rendered and "Infinity" not in rendered
    data = json.loads(rendered)
    assert data["functions"][0]["lower_seconds"] is None
    assert data["cause_table"][0]["seconds"] is None
    assert data["totals"]["wall_seconds"] is None


def test_save_is_atomic_and_makes_folders(tmp_path, session):
    path = tmp_path / "new" / "folder" / "s.json"
    save_session(session, path)
    assert load_session(path) == session
    path.write_text("old")
    save_session(session, path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.json"]  # no temporary left


def test_save_to_an_unwritable_path(tmp_path, session):
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(SessionFileError, match="Cannot write the session to"):
        save_session(session, tmp_path / "dir.json")
    assert [p.name for p in tmp_path.iterdir()] == ["dir.json"]


# -- bad sessions -------------------------------------------------------------------------------
def _set(data: dict, path: tuple, value) -> dict:
    data = copy.deepcopy(data)
    node = data
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()


@pytest.mark.parametrize("path, value, field, words", [
    (("events", 3, "seq"), "x", "events[3].seq", "expected `int`, got `str`"),
    (("events", 3, "seq"), 3.0, "events[3].seq", "expected `int`, got `float`"),
    (("events", 3, "seq"), True, "events[3].seq", "expected `int`, got `bool`"),
    (("events", 3, "signature", "leaves", "key", "shape"), ["a"],
     "events[3].signature.leaves[...].shape[0]", "expected `int`, got `str`"),
    (("events", 3, "signature", "leaves", "key", "shape"), [True],
     "events[3].signature.leaves[...].shape[0]", "expected `int`, got `bool`"),
    (("events", 3, "signature", "leaves", "key", "shape"), "3",
     "events[3].signature.leaves[...].shape", "expected `array`, got `str`"),
    (("events", 3, "signature", "leaves", "key", "weak_type"), 0,
     "events[3].signature.leaves[...].weak_type", "expected `bool`, got `int`"),
    (("events", 3, "signature", "static"), {"n": 3},
     "events[3].signature.static[...]", "expected `str`, got `int`"),
    (("events", 3, "signature", "function_kind"), "generator",
     "events[3].signature.function_kind", "invalid enum value 'generator'"),
    (("events",), {}, "events", "expected `array`, got `object`"),
    (("events", 2), [], "events[2]", "expected `object`, got `array`"),
    (("events", 1, "traced"), "true", "events[1].traced", "expected `bool`, got `str`"),
    (("events", 1, "traced"), 1, "events[1].traced", "expected `bool`, got `int`"),
    (("events", 1, "start_seconds"), None, "events[1].start_seconds",
     "expected `float`, got `null`"),
    (("events", 1, "call_index"), 1.5, "events[1].call_index",
     "expected `int | null`, got `float`"),
    (("events", 1, "owner"), "someone", "events[1].owner", "invalid enum value 'someone'"),
    (("events", 1, "function"), _DELETE, "events[1]", "object missing required field `function`"),
    (("events", 1, "seq"), 0, "events[1].seq", "also the seq of events[0]"),
    (("events", 1, "seq"), -4, "events[1].seq", "non-negative"),
    (("environment",), "cpu", "environment", "expected `object`, got `str`"),
    (("environment", "backend"), 3, "environment.backend", "expected `str`, got `int`"),
    (("environment", "hook_mode"), "loud", "environment.hook_mode", "invalid enum value"),
    (("calls",), {"f": "many"}, "calls[...]", "expected `int`, got `str`"),
    (("warnings",), "oops", "warnings", "expected `array`, got `str`"),
    (("totals", "wall_seconds"), "1", "totals.wall_seconds", "expected `float`, got `str`"),
    (("stale_captures",), [{"function": "f"}], "stale_captures[0]", "missing required field"),
    # stored values out of range (issue 29): refused with the field, never shown as a figure
    (("events", 1, "cache_saved_seconds"), 7e64, "events[1].cache_saved_seconds",
     "expected `float` <= 100000000.0"),
    (("events", 1, "cache_saved_seconds"), -35.062, "events[1].cache_saved_seconds",
     "expected `float` >= 0.0"),
    (("events", 1, "compile_seconds"), -1.0, "events[1].compile_seconds", ">= 0.0"),
    (("events", 1, "trace_seconds"), 1e300, "events[1].trace_seconds", "<= 100000000.0"),
    (("events", 1, "start_seconds"), -0.5, "events[1].start_seconds", ">= 0.0"),
    (("events", 1, "call_index"), -1, "events[1].call_index", ">= 0"),
    (("events", 1, "depth"), 10 ** 400, "events[1].depth", "<= 1000000000000"),
    (("calls",), {"f": -3}, "calls[...]", "expected `int` >= 0"),
    (("totals", "wall_seconds"), -1.0, "totals.wall_seconds", ">= 0.0"),
])
def test_wrong_field_types_name_the_field(tmp_path, report_data, path, value, field, words):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_set(report_data, path, value)))
    with pytest.raises(SessionFileError) as info:
        load_session(bad)
    message = str(info.value)
    assert message.startswith(f"{bad}, field {field}: ") and words in message, message
    assert "record the session again" in message


def test_unknown_fields_are_ignored(tmp_path, report_data, session):
    """A field this release does not know (one a later release adds) does not stop a load."""
    path = tmp_path / "newer.json"
    data = _set(_set(report_data, ("events", 1, "colour"), "red"), ("flavour",), {"x": 1})
    path.write_text(json.dumps(data))
    assert load_session(path) == session


def test_wrong_schema_version_keeps_its_message(report_data):
    with pytest.raises(SessionFileError, match=r"has schema_version 99; this recompile-cli reads "
                                               r"version 1\. Record it again"):
        files.codec.decode_session(json.dumps({**report_data, "schema_version": 99}).encode(),
                                   "old.json")


@pytest.mark.parametrize("content, words", [
    (b'{"events": [], "environment": \xff}', "line 1: not UTF-8 text (byte 0xff"),
    (b'{"schema_version": 1, "environment": {},\n "events": [NaN]}',
     "is not JSON (JSON is malformed: invalid character on line 2)"),
    (b'{"events": [], "environment": {}} x', "is not JSON (JSON is malformed: trailing"),
    (b"[" * 100000 + b"]" * 100000, "is not a recompile-cli report"),
    (b'{"events": ' + b"[" * 100000 + b"]" * 100000 + b"}", "is not JSON (nested too deeply)"),
    (b"[]", "is not a recompile-cli report"),
    (b"", "is not JSON"),
])
def test_files_that_are_not_sessions(tmp_path, content, words):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(SessionFileError) as info:
        load_session(path)
    assert str(path) in str(info.value) and words in str(info.value)


def test_a_huge_file_is_refused_unread(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as file:
        file.truncate(2000)
    with pytest.raises(SessionFileError, match="larger than 1,000 bytes, the limit"):
        load_session(path, max_bytes=1000)
    assert files.MAX_SESSION_BYTES == 1024 ** 3


def test_a_missing_file(tmp_path):
    with pytest.raises(SessionFileError, match="Cannot read"):
        load_session(tmp_path / "none.json")


# -- events logs --------------------------------------------------------------------------------
def _log_lines(session: Session) -> list[str]:
    saved = session_to_dict(session)
    lines = [json.dumps({"type": "header", "schema_version": 1,
                         "environment": saved["environment"], "target": saved["target"],
                         "base_context": saved["base_context"]})]
    lines += [json.dumps({"type": "event", "id": e["seq"], "event": e})
              for e in saved["events"]]
    lines.append(json.dumps({"type": "end", "wall_seconds": session.wall_seconds,
                             "calls": saved["calls"], "warnings": saved["warnings"],
                             "stale_captures": saved["stale_captures"],
                             "target_exception": None}))
    return lines


def _load_log(tmp_path, lines: list[str]) -> Session:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return load_session(path)


def test_events_log_round_trip(tmp_path, session):
    loaded = _load_log(tmp_path, _log_lines(session))
    assert loaded.events == session.events and loaded.wall_seconds == session.wall_seconds


def test_events_log_cut_short_keeps_what_was_whole(tmp_path, session):
    lines = _log_lines(session)[:6]
    lines[-1] = lines[-1][:30]
    loaded = _load_log(tmp_path, lines)
    assert len(loaded.events) == 4 and "did not finish" in loaded.warnings[0]
    # blank lines after the tear (an editor's, a copy's) are not records after it (issue 44)
    loaded = _load_log(tmp_path, [*lines, "", "  "])
    assert len(loaded.events) == 4 and "did not finish" in loaded.warnings[0]


@pytest.mark.parametrize("change, words", [
    (lambda lines: [lines[0][:20]], "only record, its header, is cut short"),
    (lambda lines: [lines[0][:20], *lines[1:]], "line 1: not a JSON record"),
    (lambda lines: lines[1:], "line 1: the events log does not start with its header"),
    (lambda lines: [lines[0].replace('"schema_version": 1', '"schema_version": 7'), *lines[1:]],
     "has schema_version 7"),
    (lambda lines: [lines[0].replace('"target": ', '"target": 5, "x": '), *lines[1:]],
     "line 1, field target: expected `str`, got `int`"),
    (lambda lines: [*lines[:2], '{"type": "oops"}', *lines[2:]],
     "line 3: not an event, warm-up, slow-call or end record (type 'oops')"),
    (lambda lines: [*lines[:2], "[1, 2]", *lines[2:]], "line 3: not an event, warm-up, slow-call or end record"),
    (lambda lines: [*lines[:4], lines[4].replace('"seq": 3', '"seq": "3"'), *lines[5:]],
     "line 5, field event.seq: expected `int`, got `str`"),
    (lambda lines: [*lines[:4], lines[4].replace('"id": 3', '"id": [3]'), *lines[5:]],
     "line 5, field id: expected `int`, got `array`"),
    (lambda lines: [*lines[:-1], '{"type": "end", "wall_seconds": 1}'],
     "line 56: object missing required field `calls`"),
    (lambda lines: [*lines[:4], lines[4].replace('"compile_seconds": ', '"compile_seconds": -'),
                    *lines[5:]], "line 5, field event.compile_seconds: expected `float` >= 0.0"),
    (lambda lines: [*lines[:-1], re.sub(r'"wall_seconds": [^,]+', '"wall_seconds": 1e99',
                                        lines[-1])],
     "line 56, field wall_seconds: expected `float` <= 100000000.0"),
])
def test_damaged_events_logs(tmp_path, session, change, words):
    with pytest.raises(SessionFileError) as info:
        _load_log(tmp_path, change(_log_lines(session)))
    assert "events.jsonl" in str(info.value) and words in str(info.value), str(info.value)


def test_a_problem_in_a_late_event_of_a_long_session_is_named(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import synthetic

    data = session_to_dict(synthetic.build(1_000, functions=5))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data, indent=1))
    assert load_session(path) == synthetic.build(1_000, functions=5)
    data["events"][876]["signature"]["leaves"]["y"]["shape"] = [8.0]
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match=re.escape(
            "field events[876].signature.leaves[...].shape[0]: expected `int`, got `float`")):
        load_session(path)
    data["events"][876]["signature"]["leaves"]["y"]["shape"] = [8]
    data["events"][950]["seq"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match=r"events\[950\]\.seq: 3 is also the seq"):
        load_session(path)


def test_process_fields_are_written_only_when_set(tmp_path, session):
    """A single-process session leaves out the process fields (as 0.1.0 wrote it); a process of
    a distributed job, or a merged session, writes them and reads them back."""
    assert list(Event.__struct_fields__)[-1] == "process"
    assert list(Environment.__struct_fields__)[-3:] == [
        "process_index", "process_count", "host"]
    text = files.session_text(session)
    assert '"process' not in text and '"host"' not in text
    distributed = msgspec.structs.replace(
        session, events=tuple(msgspec.structs.replace(e, process=1) for e in session.events),
        environment=msgspec.structs.replace(session.environment, process_index=1,
                                        process_count=2, host="node-1"))
    path = tmp_path / "p1.json"
    save_session(distributed, path)
    data = json.loads(path.read_text())
    assert data["environment"]["host"] == "node-1"
    assert {e["process"] for e in data["events"]} == {1}
    assert load_session(path) == distributed


def test_a_loaded_session_keeps_one_copy_of_each_repeated_name(tmp_path):
    """Function names, definitions, call sites, dtypes and cost lines repeat in many events: a
    loaded session holds one string of each, not one per event (memory per event); a name that
    is a str subclass (a user's ``__name__``) is kept as it is, never an error."""
    from builders import f32_event

    from recompile_cli.session.model import LineCost

    class Name(str):
        pass

    events = [f32_event(i, "step", defined_at="/p/train.py:3", call_site="/p/train.py:9 (main)")
              for i in range(3)]
    saved = tmp_path / "s.json"
    save_session(Session(environment=Environment("0.10.2", "3.11", "cpu", HookMode.PRIVATE),
                         target="train.py", events=tuple(events), wall_seconds=1.0), saved)
    loaded = load_session(saved).events
    for name in ("function", "defined_at", "call_site"):
        assert len({id(getattr(e, name)) for e in loaded}) == 1, name
    dtypes = {id(leaf.dtype) for e in loaded if e.signature for leaf in e.signature.leaves.values()}
    assert len(dtypes) == 1
    lines = {id(LineCost(location="/p/" + "train.py:3", equations=1).location) for _ in range(2)}
    assert len(lines) == 1
    odd = Event(0, Name("step"), Name("/p/train.py:3"), Owner.USER, None, None, 0, True, True,
                0.0)
    assert (type(odd.function), type(odd.defined_at), odd.call_site) == (Name, Name, None)
