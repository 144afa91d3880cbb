"""The session file formats, owned here: one msgspec encoder and typed decoding into the model.

A saved session or JSON report is one JSON object (one top-level field, one event per line); the
events log is JSON lines (``LogRecord``). Decoding trusts nothing: a wrong type, a missing field,
an unknown enum value or a number out of ``ranges`` is refused with the field's path. Unknown
fields are ignored (a report's analysis, a later release's fields); NaN and infinities are
written as ``null`` and refused on reading.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, NoReturn

import msgspec

from recompile_cli.errors import SessionFileError
from recompile_cli.ranges import Count, Seconds
from recompile_cli.session.model import (
    SCHEMA_VERSION,
    Environment,
    Event,
    ProcessRecord,
    Session,
    SlowCalls,
    SlowCallWatch,
    StaleCapture,
    StaleStatic,
)
from recompile_cli.session.warmup import Warmup


def _fallback(value: Any) -> Any:
    """What JSON has no type for: a numpy scalar becomes its Python number, anything else its
    text (a value from the user's program must never stop a report from being written)."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        try:
            return item()
        except (TypeError, ValueError):
            pass
    return str(value)


_ENCODER = msgspec.json.Encoder(enc_hook=_fallback)
encode = _ENCODER.encode  # one value as compact JSON bytes; NaN and infinities as null


def text(value: Any) -> str:
    """One value as compact JSON text, on one line."""
    return _ENCODER.encode(value).decode()


# The process fields are last in ``Event`` and ``Environment``; a single-process session leaves
# them out, as release 0.1.0 wrote it (their absence says "one process").
_UNSET_PROCESS = b',"process":null}'
_UNSET_REPLAY = b',"replay":null}'  # before ``process``: an event without a replay omits it
_UNSET_CALLBACK = b',"host_callback":null}'  # before ``process``: left out where unset
_UNSET_PROGRAM = b',"program_fingerprint":null}'  # before ``host_callback``: the same
_UNSET_HOST = b',"process_index":null,"process_count":null,"host":null}'


def _trimmed(data: bytes, unset: bytes) -> bytes:
    return data[:-len(unset)] + b"}" if data.endswith(unset) else data


# A leaf without symbolic dimensions leaves ``symbolic`` out, as releases before it wrote leaves
# (the key can only be a ``Leaf``'s: no other object of the schema has it or holds an empty list
# last under a key of that name, and a text's quotes are escaped).
_NO_SYMBOLIC = b',"symbolic":[]}'


def encode_event(event: Event) -> bytes:
    """One event as compact JSON, without ``process``, ``host_callback``,
    ``program_fingerprint`` and ``replay`` when they are not set, and without the ``symbolic``
    of leaves that have none."""
    data = _trimmed(_trimmed(_ENCODER.encode(event), _UNSET_PROCESS), _UNSET_CALLBACK)
    data = _trimmed(data, _UNSET_PROGRAM)
    return _trimmed(data, _UNSET_REPLAY).replace(_NO_SYMBOLIC, b"}")


def plain(value: Any) -> Any:
    """``value`` as the JSON data it is written as: dicts, lists, texts, numbers (NaN as None)."""
    return msgspec.json.decode(_ENCODER.encode(value))


def indented(value: Any) -> str:
    """``value`` as JSON text indented by two spaces, ending with a newline."""
    return msgspec.json.format(_ENCODER.encode(value), indent=2).decode() + "\n"


def document(fields: Mapping[str, Any], long: Collection[str] = ()) -> str:
    """``fields`` as a JSON object, one field per line; the lists named in ``long`` get one
    item per line (an item that is ``msgspec.Raw`` is JSON already). Ends with a newline."""
    lines = []
    for name, value in fields.items():
        key = _ENCODER.encode(name)
        if name in long and value:
            items = b",\n    ".join(_ENCODER.encode(item) for item in value)
            lines.append(b"  " + key + b": [\n    " + items + b"\n  ]")
        else:
            lines.append(b"  " + key + b": " + _ENCODER.encode(value))
    return (b"{\n" + b",\n".join(lines) + b"\n}\n").decode()


# -- the saved session ------------------------------------------------------------------------
class _Totals(msgspec.Struct, kw_only=True):
    wall_seconds: Seconds = 0.0  # a report's other totals are recomputed on analysis


class SessionDocument(msgspec.Struct, kw_only=True):
    """A saved session or JSON report as read back (its analysis fields are ignored)."""

    schema_version: int
    environment: Environment
    events: tuple[Event, ...]
    target: str = ""
    target_exception: str | None = None
    totals: _Totals = msgspec.field(default_factory=_Totals)
    base_context: dict[str, str] = msgspec.field(default_factory=dict)
    calls: dict[str, Count] = msgspec.field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    stale_captures: tuple[StaleCapture, ...] = ()
    stale_statics: tuple[StaleStatic, ...] = ()
    processes: tuple[ProcessRecord, ...] = ()
    warmup: Warmup | None = None
    slow_call_groups: tuple[SlowCalls, ...] = ()  # (the JSON report's slow_calls is analysis)
    slow_call_watch: SlowCallWatch | None = None

    def session(self) -> Session:
        return Session(environment=self.environment, target=self.target, events=self.events,
                       wall_seconds=self.totals.wall_seconds, base_context=self.base_context,
                       calls=self.calls, warnings=self.warnings,
                       stale_captures=self.stale_captures, stale_statics=self.stale_statics,
                       target_exception=self.target_exception, processes=self.processes,
                       warmup=self.warmup, slow_calls=self.slow_call_groups,
                       slow_call_watch=self.slow_call_watch)


def session_fields(session: Session, events: list[msgspec.Raw] | None = None
                   ) -> dict[str, Any]:
    """The saved session's top-level fields, in the order they are written; ``events`` are
    the encoded events when the caller has them (the JSON report's carry their analysis)."""
    if events is None:
        events = [msgspec.Raw(encode_event(event)) for event in session.events]
    environment = msgspec.Raw(_trimmed(_ENCODER.encode(session.environment), _UNSET_HOST))
    fields: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "environment": environment,
        "target": session.target, "target_exception": session.target_exception,
        "totals": {"wall_seconds": session.wall_seconds},
        "events": events,
        "stale_captures": session.stale_captures, "warnings": session.warnings,
        "calls": session.calls, "base_context": session.base_context,
    }
    if session.stale_statics:  # added with stale statics: only where there are any
        fields["stale_statics"] = session.stale_statics
    if session.processes:
        fields["processes"] = session.processes
    if session.warmup is not None:
        fields["warmup"] = session.warmup
    if session.slow_call_watch is not None:  # added in 0.4: slow calls, after the rest
        fields["slow_call_watch"] = session.slow_call_watch
        fields["slow_call_groups"] = session.slow_calls
    return fields


class _Probe(msgspec.Struct):
    """Just enough of a document to say what it is when it does not decode."""

    schema_version: Any = None
    events: Any = msgspec.UNSET
    environment: Any = msgspec.UNSET


def decode_session(data: bytes, source: str) -> Session:
    """The ``Session`` of a saved session or JSON report; ``SessionFileError`` naming the
    field of the first problem."""
    try:
        document = msgspec.json.decode(data, type=SessionDocument)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        _explain_failure(data, source, exc)
    check_version(document.schema_version, source)
    _check_sequence_numbers(document.events, source)
    return document.session()


def _explain_failure(data: bytes, source: str, exc: Exception) -> NoReturn:
    """Raise the ``SessionFileError`` for a document that did not decode: not JSON, not a
    session, another schema version, or the first wrong field."""
    probe = None
    try:
        if not isinstance(exc, msgspec.ValidationError):
            raise exc
        probe = msgspec.json.decode(data, type=_Probe)
    except msgspec.ValidationError:  # (a DecodeError too: caught first)
        pass
    except (msgspec.DecodeError, RecursionError) as error:
        check_utf8(data, source)
        raise SessionFileError(f"{source} is not JSON ({reason(error, data)}). Pass a report "
                               "saved with --output FILE.json or --save FILE.json.") from None
    assert isinstance(exc, msgspec.ValidationError)
    if probe is None or probe.events is msgspec.UNSET or probe.environment is msgspec.UNSET:
        raise SessionFileError(f"{source} is not a recompile-cli report: it lacks 'events' and "
                               "'environment'. Pass a report saved with --output FILE.json.")
    check_version(probe.schema_version, source)
    raise SessionFileError(field_error(exc, source)) from None


def check_version(version: Any, source: str) -> None:
    """``SessionFileError`` unless ``version`` is the schema version this release reads."""
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise SessionFileError(
            f"{source} has schema_version {version!r}; this recompile-cli reads version "
            f"{SCHEMA_VERSION}. Record it again with this version (recompile-cli profile/run "
            "--save FILE.json), or read it with the recompile-cli version that wrote it.")


def _check_sequence_numbers(events: tuple[Event, ...], source: str) -> None:
    seen: dict[int, int] = {}
    for i, event in enumerate(events):
        seq = event.seq
        if seq < 0:
            problem = f"must be a non-negative integer, got {seq}"
        elif seq in seen:
            problem = f"{seq} is also the seq of events[{seen[seq]}]; each event has its own"
        else:
            seen[seq] = i
            continue
        raise SessionFileError(f"{source}, field events[{i}].seq: {problem}. {_DAMAGED}.")


_DAMAGED = ("The session file is damaged or was not written by recompile-cli; record the "
            "session again (--save FILE.json)")


def field_error(exc: msgspec.ValidationError, source: str,
                advice: str = _DAMAGED) -> str:
    """``source, field events[3].seq: expected `int`, got `str`. Advice.``"""
    message, _, where = str(exc).partition(" - at `$")
    where = where.rstrip("`").removeprefix(".")
    field = f", field {where}" if where else ""
    return f"{source}{field}: {message[:1].lower()}{message[1:]}. {advice}."


def check_utf8(data: bytes, source: str) -> None:
    """``SessionFileError`` naming the line and byte where ``data`` stops being UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SessionFileError(f"{source}, line {line}: not UTF-8 text (byte "
                               f"0x{data[exc.start]:02x} at offset {exc.start}), so not a saved "
                               "session. Pass a session saved with --save FILE.json.") from None


def reason(exc: BaseException, data: bytes) -> str:
    """Why ``data`` is not JSON, with the line of a byte offset that msgspec names."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    message = str(exc)
    found = re.search(r"\(byte (\d+)\)", message)
    if found:
        line = data.count(b"\n", 0, int(found.group(1))) + 1
        message = f"{message.removesuffix(found.group(0)).rstrip()} on line {line}"
    return message


# -- the events log ---------------------------------------------------------------------------
class LogHeader(msgspec.Struct, tag_field="type", tag="header"):
    """The first record: what is known before the target runs."""

    schema_version: int
    environment: Environment
    target: str
    base_context: dict[str, str]
    slow_call_watch: SlowCallWatch | None = None  # whether slow calls are watched


class LogEvent(msgspec.Struct, tag_field="type", tag="event"):
    """An event each time it changes; the last record of an ``id`` wins."""

    id: Count
    event: Event


class LogEnd(msgspec.Struct, tag_field="type", tag="end", kw_only=True):
    """The last record of a recording: what is known when it stops (the environment's backend
    and process index complete the header's), and how the target ended."""

    wall_seconds: Seconds
    calls: dict[str, Count]
    warnings: tuple[str, ...]
    stale_captures: tuple[StaleCapture, ...]
    target_exception: str | None
    stale_statics: tuple[StaleStatic, ...] = ()
    environment: Environment | None = None
    interrupted: int | None = None  # the exit code of the signal that stopped it (130, 143)
    traceback: str | None = None  # the user's traceback of the target's first exception
    events: tuple[Event, ...] | None = None  # the final events, when not those streamed (a
    # forecast's: its traces turned into predicted compiles)
    slow_call_watch: SlowCallWatch | None = None  # with the fast-path baseline measured


class LogRefused(msgspec.Struct, tag_field="type", tag="refused"):
    """The run could not start: a bad target (no such module, file or function), with the
    one-paragraph message and exit code of its ``RecompileError``."""

    message: str
    exit_code: int


class LogWarmup(msgspec.Struct, tag_field="type", tag="warmup"):
    """Written the moment a warm-up plan ends, before the workload starts, so that a run
    killed in its workload still knows which of its compiles were the warm-up's."""

    warmup: Warmup


class LogSlowCalls(msgspec.Struct, tag_field="type", tag="slow_calls"):
    """A group of slow calls when it first appears, then its counts at most a few times a
    second and at the end; the last record of an ``id`` wins."""

    id: int
    group: SlowCalls


LogRecord = LogHeader | LogEvent | LogEnd | LogRefused | LogWarmup | LogSlowCalls
_LOG_DECODER = msgspec.json.Decoder(LogRecord)
decode_record = _LOG_DECODER.decode
