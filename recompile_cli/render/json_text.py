"""Strict JSON text for large reports, written by the C encoder.

``json.dumps`` with ``indent`` runs the pure-Python encoder (about 10x slower), and
``fileio.strict_json`` first copies the whole document through ``jsonable``. Here the top-level
fields are one per line and each item of the long lists (events, trace events) is one compact
line, encoded by the C encoder: the text is still standard JSON, diffable and greppable line by
line, and its cost is linear in the events with a small constant.

Strictness is kept: a value the fast path refuses (a NaN or infinity, a numpy scalar, a key that
is not text) is encoded again through ``fileio.jsonable``, which writes ``null`` for NaN and
infinities, exactly as ``strict_json`` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from recompile_cli.fileio import jsonable

_ENCODER = json.JSONEncoder(allow_nan=False, separators=(", ", ": "))
_ENCODE = _ENCODER.encode
try:  # the C encoder, made once (``JSONEncoder.encode`` makes one per call)
    from _json import make_encoder as _make_encoder
except ImportError:  # pragma: no cover - CPython always has it
    _CHUNKS = None
else:
    _CHUNKS = _make_encoder(None, _ENCODER.default, json.encoder.encode_basestring_ascii, None,
                            ": ", ", ", False, False, False)


def encode(data: Any) -> str:
    """One value as compact strict JSON on one line, or ``ValueError`` for a NaN or infinity
    and ``TypeError`` for a value JSON has no type for. (A value that holds itself is not
    detected: it exhausts the recursion limit, as ``jsonable`` would.)"""
    if _CHUNKS is None or isinstance(data, str):  # pragma: no cover
        return _ENCODE(data)
    return "".join(_CHUNKS(data, 0))


def value(data: Any) -> str:
    """One value as compact strict JSON, on one line."""
    try:
        return encode(data)
    except (ValueError, TypeError):
        return _ENCODE(jsonable(data))


def document(fields: dict[str, Any], long: Iterable[str] = (),
             encoded: Iterable[str] = ()) -> str:
    """``fields`` as a JSON object, one field per line; the fields named in ``long`` (lists)
    get one item per line. The items of the fields named in ``encoded`` (some of ``long``) are
    JSON text already, written as they are. Ends with a newline."""
    listed, done = set(long), set(encoded)
    lines = []
    for name, data in fields.items():
        key = value(str(name))
        if name in listed and isinstance(data, (list, tuple)) and data:
            texts = data if name in done else map(value, data)
            items = ",\n".join("    " + text for text in texts)
            lines.append(f"  {key}: [\n{items}\n  ]")
        else:
            lines.append(f"  {key}: {value(data)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
