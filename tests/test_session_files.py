"""The session file format: save without analysing, the JSON report built on it, strict JSON,
atomic writes, and loading that checks every field of sessions and events logs."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path

import pytest

from recompile_cli.analysis.report import analyse
from recompile_cli.errors import SessionFileError
from recompile_cli.fileio import strict_json
from recompile_cli.render import json_report
from recompile_cli.session import files
from recompile_cli.session.files import (
    load_session,
    save_session,
    session_from_dict,
    session_to_dict,
)
from recompile_cli.session.model import (
    Change,
    Environment,
    Event,
    Leaf,
    Session,
    Signature,
    StaleCapture,
    TraceError,
)

SESSION = Path(__file__).parent / "data" / "session.json"


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


def test_json_report_is_the_session_plus_the_analysis(session, report_data):
    saved = json.loads(strict_json(session_to_dict(session)))
    report = json_report.to_dict(analyse(session))
    assert list(report) == list(report_data)  # same keys, same order as before
    for key, value in saved.items():
        if key == "events":
            for plain, full in zip(value, report["events"], strict=False):
                assert {k: v for k, v in full.items() if k not in ("kind", "cause",
                                                                   "causes")} == plain
        elif key == "totals":
            assert report["totals"]["wall_seconds"] == value["wall_seconds"]
        else:
            assert report[key] == value
    assert report == report_data


def _with_nan(session: Session) -> Session:
    first = dataclasses.replace(session.events[0], trace_seconds=math.nan,
                                compile_seconds=math.inf)
    return dataclasses.replace(session, events=(first, *session.events[1:]),
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
    report = analyse(broken)
    functions = report.functions.copy()
    functions.loc[0, "lower_seconds"] = math.nan  # NaN in pandas rows
    causes = report.cause_table.copy()
    causes["seconds"] = math.inf
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


def test_every_model_field_is_in_the_schema():
    """A field added to the model without adding it to the loader's schema fails here."""
    for cls, schema in [(Event, files._EVENT), (Signature, files._SIGNATURE),
                        (Leaf, files._LEAF), (Change, files._CHANGE),
                        (TraceError, files._TRACE_ERROR), (Environment, files._ENVIRONMENT),
                        (StaleCapture, files._STALE)]:
        names = {f.name for f in dataclasses.fields(cls)}
        assert names <= set(schema.required) | set(schema.optional), cls
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING}
        assert required == set(schema.required), cls


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
    (("events", 3, "seq"), "x", "events[3].seq", "must be an integer, got a string ('x')"),
    (("events", 3, "signature", "leaves", "key", "shape"), ["a"],
     "events[3].signature.leaves['key'].shape[0]", "must be an integer"),
    (("events", 3, "signature", "leaves", "key", "shape"), "3",
     "events[3].signature.leaves['key'].shape", "must be a list of an integer"),
    (("events",), {}, "events", "must be a list of an event, got an object"),
    (("events", 2), [], "events[2]", "must be an event"),
    (("events", 1, "traced"), "true", "events[1].traced", "true or false"),
    (("events", 1, "start_seconds"), None, "events[1].start_seconds", "must be a number"),
    (("events", 1, "call_index"), 1.5, "events[1].call_index", "an integer or null"),
    (("events", 1, "function"), _DELETE, "events[1]", "the field 'function' is missing"),
    (("events", 1, "colour"), "red", "events[1].colour", "unknown field 'colour'"),
    (("events", 1, "seq"), 0, "events[1].seq", "also the seq of events[0]"),
    (("events", 1, "seq"), -4, "events[1].seq", "non-negative"),
    (("environment",), "cpu", "environment", "must be the environment"),
    (("environment", "backend"), 3, "environment.backend", "must be a string"),
    (("calls",), {"f": "many"}, "calls['f']", "must be an integer"),
    (("warnings",), "oops", "warnings", "must be a list of a string"),
    (("totals", "wall_seconds"), "1", "totals.wall_seconds", "must be a number"),
    (("stale_captures",), [{"function": "f"}], "stale_captures[0]", "missing"),
])
def test_wrong_field_types_name_the_field(tmp_path, report_data, path, value, field, words):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_set(report_data, path, value)))
    with pytest.raises(SessionFileError) as info:
        load_session(bad)
    message = str(info.value)
    assert message.startswith(f"{bad}, field {field}: ") and words in message, message
    assert "record the session again" in message


def test_wrong_schema_version_keeps_its_message(report_data):
    with pytest.raises(SessionFileError, match=r"has schema_version 99; this recompile-cli reads "
                                               r"version 1\. Record it again"):
        session_from_dict({**report_data, "schema_version": 99}, "old.json")


@pytest.mark.parametrize("content, words", [
    (b'{"events": [], "environment": \xff}', "line 1: not UTF-8 text (byte 0xff"),
    (b'{"schema_version": 1, "environment": {}, "events": [NaN]}', "is not JSON (NaN"),
    (b"[" * 100000 + b"]" * 100000, "is not JSON"),
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


@pytest.mark.parametrize("change, words", [
    (lambda lines: [lines[0][:20]], "only record, its header, is cut short"),
    (lambda lines: [lines[0][:20], *lines[1:]], "line 1: not a JSON record"),
    (lambda lines: lines[1:], "line 1: the events log does not start with its header"),
    (lambda lines: [lines[0].replace('"schema_version": 1', '"schema_version": 7'), *lines[1:]],
     "has schema_version 7"),
    (lambda lines: [lines[0].replace('"target": ', '"target": 5, "x": '), *lines[1:]],
     "line 1, field target: must be a string"),
    (lambda lines: [*lines[:2], '{"type": "oops"}', *lines[2:]],
     "line 3: not an event or end record (type 'oops')"),
    (lambda lines: [*lines[:2], "[1, 2]", *lines[2:]], "line 3: not an event or end record"),
    (lambda lines: [*lines[:4], lines[4].replace('"seq": 3', '"seq": "3"'), *lines[5:]],
     "line 5, field event.seq: must be an integer"),
    (lambda lines: [*lines[:4], lines[4].replace('"id": 3', '"id": [3]'), *lines[5:]],
     "line 5, field id: must be an integer"),
    (lambda lines: [*lines[:-1], '{"type": "end", "wall_seconds": 1}'],
     "line 56: the field 'calls' is missing from the end record"),
])
def test_damaged_events_logs(tmp_path, session, change, words):
    with pytest.raises(SessionFileError) as info:
        _load_log(tmp_path, change(_log_lines(session)))
    assert "events.jsonl" in str(info.value) and words in str(info.value), str(info.value)
