"""Decoding a saved session: a JSON document into a ``Session``, every field checked.

Two readers give the same ``Session`` for a valid document:

* ``session_from_dict`` checks a decoded document against the schema (``session.schema``) and
  names the field of the first problem (``events[3].signature.leaves['x'].shape``) in a
  ``SessionFileError``. It is the reference, and the only reader of a document that is not valid.
* ``fast_session`` reads the text of a saved session or JSON report one event at a time (the C
  scanner), without holding the document's whole dictionary tree, and returns ``None`` for
  anything it does not take, which is then read again by ``session_from_dict`` for the exact
  error. It checks each *layout* once (the field names of an object, in order, with the exact
  type of each value) and each distinct leaf, text map and keyword list once, so that the
  events of a long run, which repeat a few layouts, cost little more than their decoding.
  Identical leaves, maps and texts are shared between events.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterable
from typing import Any

from recompile_cli.errors import SessionFileError
from recompile_cli.session.columns import EventColumns, Reject
from recompile_cli.session.model import (
    SCHEMA_VERSION,
    Change,
    Environment,
    Event,
    Leaf,
    ProcessRecord,
    Session,
    Signature,
    StaleCapture,
    TraceError,
)
from recompile_cli.session.schema import SESSION, Bad

DERIVED = frozenset(("kind", "cause", "causes"))  # what the report adds; recomputed on analysis


# -- the reference reader: a decoded document, checked field by field --------------------------
def session_from_dict(data: Any, source: str = "<session>") -> Session:
    """The ``Session`` of a saved session or JSON report, validated field by field."""
    if not isinstance(data, dict) or "events" not in data or "environment" not in data:
        raise SessionFileError(f"{source} is not a recompile-cli report: it lacks 'events' and "
                               "'environment'. Pass a report saved with --output FILE.json.")
    check_version(data.get("schema_version"), source)
    try:
        SESSION.check(data, ())
        _check_sequence_numbers(data["events"])
    except Bad as bad:
        raise SessionFileError(bad.message_for(source)) from None
    return session_of(data, (event_of(e) for e in data["events"]))


def check_version(version: Any, source: str) -> None:
    """``SessionFileError`` unless ``version`` is the schema version this release reads."""
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise SessionFileError(
            f"{source} has schema_version {version!r}; this recompile-cli reads version "
            f"{SCHEMA_VERSION}. Record it again with this version (recompile-cli profile/run "
            "--save FILE.json), or read it with the recompile-cli version that wrote it.")


def _check_sequence_numbers(events: list[dict[str, Any]]) -> None:
    seen: dict[int, int] = {}
    for i, event in enumerate(events):
        seq = event["seq"]
        if seq < 0:
            raise Bad(("events", i, "seq"), f"must be a non-negative integer, got {seq}")
        if seq in seen:
            raise Bad(("events", i, "seq"), f"{seq} is also the seq of events[{seen[seq]}]; "
                                             "each event has its own")
        seen[seq] = i


def event_of(raw: dict[str, Any]) -> Event:
    """The ``Event`` of a checked event dictionary."""
    fields = {k: v for k, v in raw.items() if k not in DERIVED}
    if fields.get("signature") is not None:
        fields["signature"] = _signature_of(fields["signature"])
    if fields.get("lowering_changes") is not None:
        fields["lowering_changes"] = tuple(Change(**c) for c in fields["lowering_changes"])
    if fields.get("error") is not None:
        fields["error"] = TraceError(**fields["error"])
    return Event(**fields)


def _signature_of(raw: dict[str, Any]) -> Signature:
    leaves = {path: Leaf(shape=tuple(leaf["shape"]), dtype=leaf["dtype"],
                         weak_type=leaf.get("weak_type", False), sharding=leaf.get("sharding"))
              for path, leaf in raw.get("leaves", {}).items()}
    return Signature(leaves=leaves, static=dict(raw.get("static", {})),
                     structure=dict(raw.get("structure", {})),
                     positional=int(raw.get("positional", 0)),
                     keywords=tuple(raw.get("keywords", ())),
                     context=dict(raw.get("context", {})),
                     function_id=int(raw.get("function_id", 0)),
                     function_kind=raw.get("function_kind", "function"))


def session_of(data: dict[str, Any], events: Iterable[Event]) -> Session:
    """The ``Session`` of a checked session document and its converted events."""
    return Session(
        environment=Environment(**data["environment"]),
        target=data.get("target", ""),
        events=tuple(events),
        wall_seconds=float(data.get("totals", {}).get("wall_seconds", 0.0)),
        base_context=dict(data.get("base_context", {})),
        calls=dict(data.get("calls", {})),
        warnings=tuple(data.get("warnings", [])),
        stale_captures=tuple(StaleCapture(**s) for s in data.get("stale_captures", [])),
        target_exception=data.get("target_exception"),
        processes=tuple(ProcessRecord(**p) for p in data.get("processes", [])),
    )


# -- the fast reader: valid documents, a batch of events at a time -----------------------------
_BATCH = 1000  # events decoded before they are checked and built together
_SPACE = re.compile(r"[ \t\n\r]*")
_NEXT = re.compile(r"[ \t\n\r]*([,\]}])[ \t\n\r]*")  # a separator or an end, and the space


def fast_session(text: str) -> Session | None:
    """The session in ``text`` if it is a valid saved session or report, else None.

    The cyclic garbage collector is paused meanwhile: what is decoded and built holds no
    reference cycles, and a collection would walk every object built so far again and again."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _read_fast(text)
    except (Reject, ValueError, TypeError, KeyError, StopIteration, RecursionError):
        return None
    finally:
        if paused:
            gc.enable()


def _refuse(token: str) -> Any:
    raise ValueError(f"{token} is not standard JSON")


def _read_fast(text: str) -> Session:
    scan = json.JSONDecoder(parse_constant=_refuse).scan_once  # type: ignore[attr-defined]
    opened = _SPACE.match(text)
    at = opened.end() if opened else 0
    if text[at:at + 1] != "{":
        raise Reject
    data: dict[str, Any] = {}
    at = _after(text, at + 1)
    columns = EventColumns()
    events: list[Event] = []
    while True:
        if text[at:at + 1] != '"':
            raise Reject
        key, at = scan(text, at)
        at = _after(text, at, ":")
        if key in data:
            raise Reject
        if key == "events" and text[at:at + 1] == "[":
            data[key] = []
            at = _after(text, at + 1)
            if text[at:at + 1] == "]":
                mark, at = _next(text, at + 1)
            else:
                batch: list[Any] = []
                while True:
                    raw, at = scan(text, at)
                    batch.append(raw)
                    mark, at = _next(text, at)
                    if mark != "," or len(batch) == _BATCH:
                        events += columns.events(batch)
                        batch = []
                    if mark == "]":
                        mark, at = _next(text, at)
                        break
                    if mark != ",":
                        raise Reject
        else:
            data[key], at = scan(text, at)
            mark, at = _next(text, at)
        if mark == "}":
            break
        if mark != ",":
            raise Reject
    if at != len(text) or "events" not in data or "environment" not in data:
        raise Reject
    version = data.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise Reject
    seqs = columns.seqs
    if len(set(seqs)) != len(seqs) or min(seqs, default=0) < 0:
        raise Reject
    try:
        SESSION.check(data, ())  # every field but the events, which are checked above
    except Bad:
        raise Reject from None
    return session_of(data, events)


def _after(text: str, at: int, mark: str = "") -> int:
    """Past the white space at ``at``, then past ``mark`` and the white space after it."""
    found = _SPACE.match(text, at)
    at = found.end() if found else at
    if mark:
        if text[at:at + 1] != mark:
            raise Reject
        return _after(text, at + 1)
    return at


def _next(text: str, at: int) -> tuple[str, int]:
    """The ``,``, ``]`` or ``}`` after the value that ends at ``at``, and where the next one
    starts."""
    found = _NEXT.match(text, at)
    if found is None:
        raise Reject
    return found.group(1), found.end()
