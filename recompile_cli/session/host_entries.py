"""What one process of a job tells its peers about one compile under ``--check-hosts``.

An ``Entry`` is written by ``capture.hosts.host_check`` into JAX's distributed key-value store and
read back by every peer (``encode_entry`` / ``decode_entry``, compact JSON through the session
codec). ``analysis.hosts.mismatch`` compares entries. Nothing here imports JAX.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import msgspec
from msgspec.structs import replace

from recompile_cli.session.codec import encode
from recompile_cli.session.model import Change, Event, Signature


@dataclass(frozen=True, slots=True)
class Entry:
    """One compile of one process: its place in the process's sequence of checked compiles
    (``seq``, 0-based), the function, and what decides the program: ``digest`` of the signature
    (argument values as the jit cache keys on them) and ``fingerprint`` of the lowering (the
    digest and the lowering-key changes of a compile without re-trace). ``signature`` and
    ``lowering`` are kept to name the first difference. ``program``: the module part of the
    program fingerprint (the program as JAX lowered it; "" where unknown), and ``context`` the
    process's tracing context at its start (JAX's configuration), to name what made the same
    arguments lower to different programs."""

    process: int
    seq: int
    function: str
    defined_at: str | None = None
    digest: str = ""
    fingerprint: str = ""
    signature: Signature | None = None
    lowering: tuple[Change, ...] | None = None
    program: str = ""
    context: dict[str, str] = field(default_factory=dict)

    def same_program(self, other: Entry) -> bool:
        """The same function, arguments and lowering, and the same program where both know
        it."""
        return (self.function, self.digest, self.fingerprint) == (
            other.function, other.digest, other.fingerprint) and (
            not self.program or not other.program or self.program == other.program)


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def entry_of(event: Event, process: int, seq: int,
             context: dict[str, str] | None = None) -> Entry:
    """The entry of a compiled event (``context``: the process's tracing context at its start).
    What only identifies an object of this process (the function object's number, where it was
    made) is left out of the digest and of the entry."""
    signature = event.signature
    if signature is not None:
        signature = replace(signature, function_id=0, created_at=None)
    digest = _hash(encode([event.function, signature]))
    fingerprint = _hash(encode([digest, event.lowering_changes]))
    program = (event.program_fingerprint or "").partition("/")  # MODULE/TARGET
    return Entry(process, seq, event.function, event.defined_at, digest, fingerprint, signature,
                 event.lowering_changes, program[0] if program[1] else "", dict(context or {}))


def encode_entry(entry: Entry) -> str:
    return encode(entry).decode()


def decode_entry(text: str) -> Entry | None:
    """The entry in ``text``; None when it is not one (another version of the tool wrote it)."""
    try:
        return msgspec.json.decode(text, type=Entry)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
