"""One schema at both ends of the events log: the writer (``EventLog``) decodes each record with
the reader's own typed decoder before writing it, so that no line it writes is refused; a value
that does not fit costs its field or its record, counted in the end record's warnings, never the
run. The supervisor's reader (``skip_misfits``) skips a record that still does not fit."""

from __future__ import annotations

import math

import msgspec
from builders import ENV, event, leaf, session, sig

from recompile_cli.session import codec
from recompile_cli.session.events_log import EventLog, LogReader
from recompile_cli.session.model import SYMBOLIC_DIM, Leaf


class _SymbolicDim:
    """Stands for ``jax.export``'s symbolic dimension: no integer, prints as its expression."""

    def __str__(self) -> str:
        return "b"


def _written(tmp_path, records) -> tuple[LogReader, list[bytes]]:
    """Write the header, ``records`` (events) and the end through ``EventLog``, then read the
    file back with a strict reader (an events log file's)."""
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.header(ENV, "t.py", {})
    for record in records:
        log.event(record)
    log.end(session([]))
    lines = path.read_bytes().splitlines()
    reader = LogReader(str(path))
    for number, line in enumerate(lines, 1):
        reader.feed(line, number)  # raises on any line the reader refuses
    return reader, lines


def test_a_value_the_schema_has_no_type_for_costs_its_field_not_the_run(tmp_path):
    bad = Leaf(shape=(_SymbolicDim(), 8), dtype="float32")  # type: ignore[arg-type]
    good = event(sig(x=leaf("f32", 3)), function="g", seq=1)
    reader, _ = _written(tmp_path, [event(sig(x=bad), function="f", seq=0), good])
    built = reader.session()
    kept = {e.function: e for e in built.events}
    assert kept["f"].signature is None and kept["f"].compiled  # the compile is still counted
    assert kept["g"] == good
    warning, = [w for w in built.warnings if "schema" in w]
    assert "event.signature.leaves[...].shape[0]" in warning
    assert "expected `int`, got `str`" in warning and "without event.signature" in warning


def test_a_record_that_cannot_fit_is_left_out_and_counted(tmp_path):
    nan = event(sig(x=leaf("f32", 3)), function="f", seq=0)
    nan = msgspec.structs.replace(nan, start_seconds=math.nan)  # a required field
    reader, lines = _written(tmp_path, [nan, nan, event(sig(x=leaf("f32", 3)), function="g", seq=1)])
    built = reader.session()
    assert [e.function for e in built.events] == ["g"] and len(lines) == 3
    warning, = [w for w in built.warnings if "left out" in w]
    assert "an event record could not be written at event.start_seconds" in warning
    assert "(2 records)" in warning


def test_symbolic_dimensions_are_written_and_shown_by_their_expression(tmp_path):
    symbolic = Leaf(shape=(SYMBOLIC_DIM, 8), dtype="float32", symbolic=((0, "b"),))
    assert symbolic.short == "f32[b,8]" and symbolic.dims == ("b", "8")
    reader, _ = _written(tmp_path, [event(sig(x=symbolic), function="f", seq=0)])
    assert reader.session().events[0].signature.leaves["x"] == symbolic
    plain = codec.encode_event(event(sig(x=leaf("f32", 3)), function="f", seq=0))
    assert b'"symbolic"' not in plain  # a leaf without them is written as before
    assert b'"symbolic":[[0,"b"]]' in codec.encode_event(event(sig(x=symbolic), function="f", seq=0))


def test_the_supervisors_reader_skips_a_record_that_does_not_fit(tmp_path):
    _, lines = _written(tmp_path, [event(sig(x=leaf("f32", 3)), function="f", seq=0)])
    damaged = lines[1].replace(b'"shape":[3]', b'"shape":["b"]')
    reader = LogReader("the stream", skip_misfits=True)
    for number, line in enumerate([lines[0], damaged, *lines[1:]], 1):
        reader.feed(line, number)
    built = reader.session()
    assert len(built.events) == 1
    warning, = [w for w in built.warnings if "could not be read" in w]
    assert "event.signature.leaves[...].shape[0]" in warning
