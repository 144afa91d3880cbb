"""Saved sessions: the JSON report (``--output x.json`` / ``--save``) read back into a
``Session``, so that it can be analysed and rendered again without running anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import RecompileError
from .model import (SCHEMA_VERSION, Change, Environment, Event, Leaf, Session, Signature,
                    StaleCapture, TraceError)


class SessionFileError(RecompileError):
    """A saved session that cannot be read."""


def load_session(path: str | Path) -> Session:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise SessionFileError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    except ValueError as exc:
        raise SessionFileError(f"{path} is not JSON ({exc}). Pass a report saved with "
                               "--output FILE.json or --save FILE.json.") from None
    return session_from_dict(data, str(path))


def session_from_dict(data: Any, source: str = "<session>") -> Session:
    if not isinstance(data, dict) or "events" not in data or "environment" not in data:
        raise SessionFileError(f"{source} is not a recompile-cli report: it lacks 'events' and "
                               "'environment'. Pass a report saved with --output FILE.json.")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SessionFileError(
            f"{source} has schema_version {version!r}; this recompile-cli reads version "
            f"{SCHEMA_VERSION}. Record it again with this version (recompile-cli profile/run "
            "--save FILE.json), or read it with the recompile-cli version that wrote it.")
    try:
        return Session(
            environment=Environment(**data["environment"]),
            target=data.get("target", ""),
            events=tuple(_event(e) for e in data["events"]),
            wall_seconds=float(data.get("totals", {}).get("wall_seconds", 0.0)),
            base_context=dict(data.get("base_context", {})),
            calls=dict(data.get("calls", {})),
            warnings=tuple(data.get("warnings", [])),
            stale_captures=tuple(StaleCapture(**s) for s in data.get("stale_captures", [])),
            target_exception=data.get("target_exception"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SessionFileError(f"{source} is damaged: {type(exc).__name__}: {exc}. Record the "
                               "session again.") from None


_DERIVED = {"kind", "cause", "causes"}  # fields the report adds; the analysis recomputes them


def _event(raw: dict[str, Any]) -> Event:
    fields = {k: v for k, v in raw.items() if k not in _DERIVED}
    if fields.get("signature") is not None:
        fields["signature"] = _signature(fields["signature"])
    if fields.get("lowering_changes") is not None:
        fields["lowering_changes"] = tuple(Change(**c) for c in fields["lowering_changes"])
    if fields.get("error") is not None:
        fields["error"] = TraceError(**fields["error"])
    return Event(**fields)


def _signature(raw: dict[str, Any]) -> Signature:
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
