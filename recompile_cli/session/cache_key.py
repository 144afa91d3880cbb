"""The persistent-cache key of one compile, taken apart (``Event.cache_key``): JAX's key parts,
the normalised fingerprint of the computation, its constants and operations, the flags,
versions and options in the key, and the outcome. Frozen, JSON-friendly records
(``msgspec.Struct``), like the rest of ``session.model``; no JAX.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from recompile_cli.ranges import Count, Seconds


class CacheMissReason(StrEnum):
    """Why JAX wrote no persistent-cache entry for a compile that missed."""

    UNDER_MIN_COMPILE_TIME = "under_min_compile_time"  # jax_persistent_cache_min_compile_time_secs
    UNDER_MIN_ENTRY_SIZE = "under_min_entry_size"  # jax_persistent_cache_min_entry_size_bytes
    NOT_PROCESS_0 = "not_process_0"  # only process 0 of a job writes
    HOST_CALLBACKS = "host_callbacks"  # programs with host callbacks are not stored
    CACHE_DISABLED = "cache_disabled"  # no cache directory, or the cache is disabled
    READ_ERROR = "read_error"
    WRITE_ERROR = "write_error"


class KeyConstant(msgspec.Struct, frozen=True, gc=False):
    """A constant baked into a compiled program: its value (summarised), type (``f32[]``) and
    the user line that reads it, where known."""

    value: str
    type: str
    site: str | None = None


class CacheKeyInfo(msgspec.Struct, frozen=True, gc=False):
    """JAX's persistent-cache key of one compile, taken apart (``capture.jax.programs.cache_key``).

    ``parts``: JAX's key parts (``computation``, ``jax_lib version``, ``backend version``,
    ``XLA flags``, ``compile_options``, ``accelerator_config``, ``compression``,
    ``custom_hook``) -> the first 16 hex digits of each part's own SHA-256, as JAX's DEBUG log
    prints them. The computation is also fingerprinted without JAX: ``fingerprint`` (locations
    stripped, private symbols renumbered, constants left out), ``constants_digest`` (the
    constants' values) and ``symbols_digest`` (locations stripped, everything else as is).
    ``ops`` are ``"digest name site"`` per operation (``site`` indexes ``sites``), the first
    ones of ``ops_total``. ``reason`` says why a miss was not written; on a hit,
    ``saved_seconds`` is the compile time stored with the entry minus ``retrieval_seconds``
    (``stored_exact``: the stored time is recompile-cli's exact one, not JAX's whole seconds).

    To keep a loaded event small, ``parts``, ``config`` (JAX configuration values in the key)
    and ``compile_options`` are ``name=value`` pairs joined by ``"; "`` (``pairs``) and ``ops``
    one text joined by ``"; "``; read them with ``part_digests()``, ``config_values()``,
    ``options()`` and ``op_list()``.
    """

    key: str
    parts: str = ""
    fingerprint: str = ""
    constants_digest: str = ""
    symbols_digest: str = ""
    constants: tuple[KeyConstant, ...] = ()
    ops: str = ""
    ops_total: Count = 0
    sites: tuple[str, ...] = ()
    xla_flags: tuple[str, ...] = ()
    jaxlib_version: str = ""
    backend_version: str = ""
    config: str = ""
    compile_options: str = ""
    devices: str = ""
    reason: CacheMissReason | None = None
    compile_seconds: Seconds | None = None  # the backend compile JAX timed before writing
    retrieval_seconds: Seconds | None = None
    stored_seconds: Seconds | None = None
    stored_exact: bool = False
    saved_seconds: Seconds | None = None

    def part_digests(self) -> dict[str, str]:
        return parse_pairs(self.parts)

    def config_values(self) -> dict[str, str]:
        return parse_pairs(self.config)

    def options(self) -> dict[str, str]:
        return parse_pairs(self.compile_options)

    def op_list(self) -> list[str]:
        return self.ops.split("; ") if self.ops else []


def pairs(values: dict[str, str]) -> str:
    """``{"a": "1", "b": "2"}`` -> ``"a=1; b=2"`` (``CacheKeyInfo``'s compact fields)."""
    return "; ".join(f"{name}={value}" for name, value in values.items())


def parse_pairs(text: str) -> dict[str, str]:
    """The inverse of ``pairs``."""
    out = {}
    for item in text.split("; ") if text else ():
        name, _, value = item.partition("=")
        out[name] = value
    return out
