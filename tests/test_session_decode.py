"""The fast session reader (``session.decode.fast_session``, built on ``session.columns``) agrees
with the reference reader (``session_from_dict``): the same ``Session`` for a valid document,
and no answer (so the reference reader's error) for anything the schema refuses, including
values that equal a valid one already seen (``true`` or ``1.0`` for ``1``, ``0`` for ``false``)."""

from __future__ import annotations

import copy
import gc
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recompile_cli.errors import SessionFileError
from recompile_cli.session.decode import fast_session
from recompile_cli.session.files import load_session, session_from_dict, session_text
from recompile_cli.session.schema import Key, path_name

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import synthetic

REPORT = Path(__file__).parent / "data" / "session.json"
FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _saved(events: int = 40) -> dict:
    """A saved session with every kind of event: lowering changes, a failed trace, nesting."""
    data = json.loads(session_text(synthetic.build(events, functions=5)))
    data["events"][3]["error"] = {"type": "TypeError", "message": "no", "argument": None}
    data["events"][4]["signature"]["leaves"]["x"]["sharding"] = "P('x')"
    data["events"][5]["signature"]["context"] = {"jax_enable_x64": "True"}
    return data


def _report() -> dict:
    data = json.loads(REPORT.read_text())
    data["events"] = data["events"][:6] + data["events"][44:52]
    return data


DOCUMENTS = [_saved(), _report()]


def _agree(document: dict) -> None:
    text = json.dumps(document)
    fast = fast_session(text)
    try:
        reference = session_from_dict(json.loads(text), "s.json")
    except SessionFileError:
        assert fast is None
        return
    assert fast is None or fast == reference


@pytest.mark.parametrize("document", DOCUMENTS, ids=["saved", "report"])
def test_valid_documents_are_read_fast_and_the_same(document):
    fast = fast_session(json.dumps(document))
    assert fast is not None and fast == session_from_dict(copy.deepcopy(document))


_TRICKY = st.sampled_from([0, 1, -1, 1.0, 0.0, True, False, None, "", "3", "float32", [],
                           [1, 8], [True, 8], [1.0, 8], ["8"], {}, {"n": 3}, {"n": "3"},
                           {"shape": [8], "dtype": "float32"}, {"shape": [8]}])


@st.composite
def _changed(draw) -> dict:
    """A valid document with one value deep inside an event replaced, deleted or added."""
    data = copy.deepcopy(draw(st.sampled_from(DOCUMENTS)))
    node = data["events"]
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return data
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, (dict, list)) and child and draw(st.integers(0, 3)):
            node = child
            continue
        action = draw(st.integers(0, 6))
        if isinstance(node, dict) and action == 0:
            del node[key]
        elif isinstance(node, dict) and action == 1:
            node[draw(st.sampled_from(["weak_type", "extra", "sharding", "process"]))] = \
                draw(_TRICKY)
        else:
            node[key] = draw(_TRICKY)
        return data


@FUZZ
@given(document=_changed())
def test_changed_documents_agree_with_the_reference_reader(document):
    _agree(document)


@pytest.mark.parametrize(("where", "value"), [
    (("signature", "leaves", "x", "shape", 0), True),
    (("signature", "leaves", "x", "shape", 0), 1.0),
    (("signature", "leaves", "scale", "weak_type"), 1),
    (("signature", "leaves", "y", "weak_type"), 0),
    (("signature", "static", "n"), 3),
    (("signature", "keywords", 0), 1),
    (("signature", "positional"), True),
    (("traced",), 1),
    (("seq",), 0),
])
def test_a_value_equal_to_a_valid_one_is_still_refused(tmp_path, where, value):
    data = _saved()
    first = data["events"][0]
    data["events"][1] = copy.deepcopy(first)  # the same values, already seen once
    data["events"][1]["seq"] = 1
    node = data["events"][1]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    field = path_name(("events", 1, *(Key(k) if k in ("x", "y", "scale", "n") else k
                                     for k in where)))
    with pytest.raises(SessionFileError, match=re.escape(f"field {field}: ")):
        load_session(path)
    assert fast_session(path.read_text()) is None


def test_events_with_different_layouts_are_read_fast(tmp_path):
    data = _saved()
    events = data["events"]
    del events[1]["call_of"]  # an optional field missing
    events[2] = dict(reversed(list(events[2].items())))  # another order
    del events[6]["signature"]["context"], events[6]["signature"]["leaves"]["x"]["sharding"]
    events[7]["signature"]["leaves"] = {}
    events[8]["process"] = 1
    fast = fast_session(json.dumps(data))
    assert fast is not None and fast == session_from_dict(copy.deepcopy(data))


def test_many_batches_and_a_problem_in_a_late_one(tmp_path):
    data = _saved(2_600)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data, indent=1))
    assert load_session(path) == session_from_dict(copy.deepcopy(data))
    data["events"][2_345]["signature"]["leaves"]["y"]["shape"] = [8.0]
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match=r"events\[2345\]\.signature\.leaves\['y'\]"):
        load_session(path)
    data["events"][2_345]["signature"]["leaves"]["y"]["shape"] = [8]
    data["events"][2_500]["seq"] = 3  # a seq seen in the first batch
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match=r"events\[2500\]\.seq: 3 is also the seq"):
        load_session(path)


def test_shared_values_are_one_object():
    session = fast_session(json.dumps(_saved(200)))
    assert session is not None
    leaves = [e.signature.leaves["y"] for e in session.events if e.signature]
    assert all(leaf is leaves[0] for leaf in leaves)
    assert len({id(e.signature.static) for e in session.events if e.signature}) == 1
    assert len({id(e.call_site) for e in session.events if e.function == "fn_0"}) == 1


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(enabled):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        fast_session(json.dumps(_saved(10)))
        fast_session("{not json")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("text", ['{"events": [}', '{"events": [1, 2]}', "[]", '{"a": 1,}',
                                  '{"events": [], "environment": {}} x', ""])
def test_what_the_fast_reader_does_not_take(text):
    assert fast_session(text) is None
