"""Per-compile enrichment: the persistent compilation cache side of a recording (the outcome and
saved time of each backend compile, each key taken apart by ``capture.jax.programs.cache_key``)
and each lowered program's compile-cost profile (``capture.jax.programs.cost``) and fingerprint
(``capture.jax.programs.fingerprint``). Called by the ``Recorder`` on the miss path only; never
raises (errors go to ``on_error``). The cache folder is untrusted: a stored value that is not a
number of seconds in range is skipped with a warning (at most ``MAX_NOTES``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from recompile_cli import ranges
from recompile_cli.capture.drafts import Draft
from recompile_cli.capture.hosts.process import configured_cache_dir
from recompile_cli.capture.jax.programs import cache_key
from recompile_cli.capture.jax.programs import cost as jax_cost
from recompile_cli.capture.jax.programs import fingerprint as jax_fingerprint
from recompile_cli.session.model import CacheOutcome

# Persistent compilation cache events (no kwargs; they fire on the compiling thread between the
# start of a backend compile and its compile duration event, so they belong to the compile that
# follows).
CACHE_STATUS = {
    "/jax/compilation_cache/compile_requests_use_cache": CacheOutcome.MISS_NOT_WRITTEN,
    "/jax/compilation_cache/cache_misses": CacheOutcome.MISS_WRITTEN,
    "/jax/compilation_cache/cache_hits": CacheOutcome.HIT,
}
CACHE_SAVED_EVENT = "/jax/compilation_cache/compile_time_saved_sec"
MAX_NOTES = 5  # warnings about the cache folder's files, then a count of the others


class Enrichment:
    """The persistent-cache outcome and key, and the compile-cost profile, of each compile.

    Args:
        local: the recorder's per-thread state (``current`` is the event being filled in,
            ``traced_fun`` the last top-level traced function).
        on_error: called with each internal error caught.
        compile_cost: profile each lowered program (private hooks only).
        cache_keys: take each persistent-cache key apart (private hooks and a cache directory).
    """

    def __init__(self, local: threading.local, on_error: Callable[[BaseException], None],
                 compile_cost: bool = True, cache_keys: bool = True) -> None:
        self._local = local
        self._on_error = on_error
        self.compile_cost = compile_cost
        self._cache_keys = cache_keys
        self.cache_dir: str | None = None
        self._key_hooks: cache_key.KeyHooks | None = None
        self._key_problem = "needs JAX >= 0.9 and hook mode private"  # until installed
        self._notes: dict[str, None] = {}  # stored values skipped, in order, once each
        self._more_notes = 0

    def install(self, private: bool) -> None:
        """Read the cache directory and, with the ``private`` hooks, hook the cache keys."""
        self.cache_dir = configured_cache_dir()
        if not private or not self._cache_keys:
            return
        problem = cache_key.probe()
        if problem is not None:
            self._key_problem = f"is not recorded: {problem}"
            return
        try:
            hooks = cache_key.KeyHooks(self._on_error, self.warn)
            hooks.install()
            self._key_hooks = hooks
        except Exception as exc:
            self._on_error(exc)

    def uninstall(self) -> list[str]:
        """Restore JAX; returns the warnings for the session."""
        notes = list(self._notes)
        if self._more_notes:
            notes.append(f"... and {self._more_notes} more stored values of the persistent "
                         "cache skipped")
        if self._key_hooks is not None:
            warnings = self._key_hooks.uninstall()
            self._key_hooks = None
            return [*warnings, *notes]
        if self.cache_dir and self._cache_keys:
            return ["why the persistent compilation cache missed (its key taken apart) "
                    f"{self._key_problem}", *notes]
        return notes

    def warn(self, text: str) -> None:
        """A warning for the session about a file of the cache folder (once each)."""
        if text in self._notes:
            return
        if len(self._notes) < MAX_NOTES:
            self._notes[text] = None
        else:
            self._more_notes += 1

    def on_event(self, event: str) -> None:
        """A ``jax.monitoring`` event: note the cache outcome of the compile under way."""
        status = CACHE_STATUS.get(event)
        if status is not None and not self.cache_dir:  # configured by the program itself
            self.cache_dir = configured_cache_dir()
        if status is not None and self.cache_dir:
            if status == CacheOutcome.MISS_NOT_WRITTEN:  # a new request: reset the last's
                self._local.cache_saved = 0.0
            self._local.cache_status = status

    def on_saved(self, duration: float) -> None:
        """``CACHE_SAVED_EVENT``: JAX reports the stored compile time (whole seconds) minus the
        retrieval time, which goes negative for sub-second compiles: nothing was saved then.
        A figure out of range comes from a damaged entry: skipped (0) with a warning (the key
        hooks, when installed, name the entry itself)."""
        number = ranges.as_float(duration)
        saved = 0.0
        if number is not None and number <= ranges.MAX_SECONDS:
            saved = max(number, 0.0)
        elif self._key_hooks is None:
            self.warn(f"{self.cache_dir}: JAX reported a persistent-cache hit that saved "
                      f"{ranges.shown(duration)} s, which is not a number of seconds from 0 "
                      f"to {ranges.MAX_SECONDS:,.0f}; it was skipped (an entry of the cache "
                      "folder may be damaged)")
        self._local.cache_saved = saved

    def compiled(self, draft: Draft) -> None:
        """A backend compile of ``draft`` ended: fill in its cache outcome, time saved and key."""
        local = self._local
        draft.set(persistent_cache=getattr(local, "cache_status", None),
                  cache_saved_seconds=getattr(local, "cache_saved", 0.0))
        local.cache_status, local.cache_saved = None, 0.0
        if self._key_hooks is not None:
            key = self._key_hooks.take(draft.event.persistent_cache)
            draft.set(cache_key=key)
            if key is not None and key.saved_seconds is not None:
                draft.set(cache_saved_seconds=key.saved_seconds)  # exact

    def cost(self, jaxpr: Any, lowering: Any) -> None:
        """Profile the program just lowered (``capture.jax.programs.cost``) into the current
        event, with its fingerprint (``capture.jax.programs.fingerprint``, within the same
        bound on the module's operations)."""
        current: Draft | None = getattr(self._local, "current", None)
        if current is None or current.jaxpr_id not in (None, id(jaxpr)) or current.event.cost:
            return
        traced = getattr(self._local, "traced_fun", None)
        fun = traced[1] if traced is not None and traced[0] == id(jaxpr) else None
        self._local.traced_fun = None  # keep no user function alive
        cost = jax_cost.cost_of(jaxpr, lowering, fun, self._on_error)
        current.set(cost=cost, program_fingerprint=jax_fingerprint.fingerprint_of(
            lowering, cost.module_ops if cost else None,
            cost.module_ops_bounded if cost else False))
