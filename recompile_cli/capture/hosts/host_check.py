"""``--check-hosts``: every process of a ``jax.distributed`` job checks, at each compile, that its
peers compile the same program, and the whole job stops at the first that does not.
``HostCheck`` (a recorder's ``on_compile`` callback) exchanges one ``Entry`` per checked compile
through JAX's key-value store, nothing per call; how it checks and stops is noted above it.
A single-process run, a run before ``jax.distributed.initialize`` or one without JAX's private
lowering hook checks nothing (the last says so in its warnings).
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from recompile_cli import exits
from recompile_cli.capture.jax import distributed
from recompile_cli.exits import ExitCode
from recompile_cli.session.host_entries import Entry, decode_entry, encode_entry, entry_of
from recompile_cli.session.model import Event, HookMode, Owner, Session

if TYPE_CHECKING:
    from recompile_cli.capture.recorder import Recorder

PREFIX = "recompile-cli/check-hosts"
_checks = itertools.count()  # numbers the checks of this process (see ``HostCheck``)
PARTING = 10.0  # how long a stopped process waits for its peers' reports before it ends
LAST = 1.0  # then process 0 waits this long more, for the others to have ended
POLL = 0.25  # seconds between looks at the stop key while waiting for peers
GRACE = 30.0  # how long the watcher leaves a compiling main thread to report a stop itself


class HostsDiverged(RuntimeError):
    """Raised from the compiling call when the processes of the job compile different
    programs (or a peer sent nothing within the timeout); the message says which."""


# (entries of one compile, every process) -> message or None; (mine, absent, their last
# entries, timeout) -> message: ``analysis.hosts.mismatch``'s, given by the caller.
Mismatch = Callable[[dict[int, Entry]], str | None]
Missing = Callable[[Entry, list[int], dict[int, Entry | None], float], str]
# (the session of a run a peer stopped, its failure) -> exit code: writes the report
Finish = Callable[[Session, str], int]
# a message as it may be printed (``render.escape.terminal``: one line, control characters escaped)
Shown = Callable[[str], str]
# the exit code of an interruption asked for while a compile waits (None: none); a supervised
# run's child learns it from its supervisor, since a native signal handler (JAX's preemption
# notifier takes SIGTERM once jax.distributed is initialized) may keep the signal from Python
Interrupted = Callable[[], int | None]


# ``HostCheck`` is a recorder's ``on_compile`` callback. Only programs that run on devices of
# other processes too are checked (``distributed.take``: the lowered program's devices are not all
# this process's): those run collectives with the other processes, which must run the same
# program. A program on this process's devices alone (a metrics helper jitted on process 0) is
# none of the peers' business and is not exchanged. At each checked compile of a function that is
# not JAX's own (the miss path only: a cached call never reaches it), the process writes an
# ``Entry`` (the function's compile number, the function, the signature digest and lowering
# fingerprint) into JAX's distributed key-value store (``jax.distributed``) under the function's
# key, and waits, up to ``timeout`` seconds, for every peer's entry of the same function and
# number. Compiles are numbered per function, so the order in which different functions compile
# does not matter. One exchange per checked compile, nothing per call. Without JAX's private
# lowering hook (hook mode public-only) it cannot tell which programs span processes: it checks
# nothing and says so in the report's warnings.
#
# * All arrived and differ: every process raises ``HostsDiverged`` from the compiling call, before
#   the program runs.
# * Some never arrived (the hard case: they run a program compiled before and wait in its
#   collective): the waiting process writes the message under the store's stop key and raises.
# * A process that is not compiling learns it from its watcher, a daemon thread that polls the
#   stop key: it cannot raise in a main thread blocked in a collective, so it calls ``finish``
#   (the command line's: end the events log with the message as the failure; the guard's: print
#   the message), then ends the process with ``os._exit(3)``, skipping JAX's exit-time shutdown,
#   which would wait for the stopped peers.
#
# The watcher never waits in JAX's native store at interpreter exit: ``claim`` and an ``atexit``
# handler (which runs before JAX's own, registered when JAX was imported) stop it and join it, so
# that a script that leaves ``jax.distributed.shutdown()`` to JAX's exit handler ends cleanly.
class HostCheck:
    """The check of one run; ``bind`` it to the recorder whose ``on_compile`` it is."""

    def __init__(self, timeout: float, mismatch: Mismatch, missing: Missing,
                 finish: Finish | None = None, shown: Shown = str,
                 interrupted: Interrupted | None = None) -> None:
        # The keys of the n-th check of each process (``run`` once; a guard installed again,
        # in the same order on every process): another check's entries are never compared.
        self._prefix = f"{PREFIX}/{next(_checks)}"
        self.timeout = timeout
        self._mismatch, self._missing, self._finish = mismatch, missing, finish
        self._shown = shown  # every message, this process's or read from the store
        self._interrupted = interrupted
        self._store: distributed.Store | None = None
        self._recorder: Recorder | None = None
        self._seqs: dict[str, int] = {}  # function key -> its checked compiles so far
        self._lock = threading.Lock()
        self._done = threading.Event()  # set once the stop is being reported, or at the end
        self._claimed = False
        self._closed = False  # the guard was removed: the watcher leaves without a word
        self._warned = False
        self._compiling_since: float | None = None  # the compiling thread is checking
        self._watcher: threading.Thread | None = None
        self.stopped: str | None = None  # the message the job stopped with

    def bind(self, recorder: Recorder) -> None:
        self._recorder = recorder

    # -- on the compiling thread -----------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        message = None
        self._compiling_since = time.monotonic()
        try:
            message = self.stopped or self._check(event)
            message = None if message is None else self._shown(message)
        except Exception:  # never turn a bug of ours into the user's error
            message = None
        if message is None:
            self._compiling_since = None
            return
        self.stopped = message  # the thread that raises it reports it (``claim``)
        raise HostsDiverged(message)

    def _attach(self) -> distributed.Store | None:
        if self._store is None and not self._done.is_set():
            self._store = distributed.connect()
            reason = distributed.why_not() if self._store is None else None
            if (reason is not None and reason not in distributed.NOTHING_TO_CHECK
                    and self._recorder is not None and not self._warned):
                self._warned = True
                self._recorder.warn(f"--check-hosts checked nothing: {reason}")
            if self._store is not None:
                self._watcher = threading.Thread(target=self._watch, daemon=True,
                                                 name="recompile-cli host check")
                self._watcher.start()
                atexit.register(self._stop_watching)
        return self._store

    def _spans(self, event: Event) -> bool:
        """Whether the program just compiled runs on other processes' devices too."""
        spans = distributed.take(event.function)
        recorder = self._recorder
        if (spans is None and recorder is not None and recorder.hook_mode != HookMode.PRIVATE
                and not self._warned):
            self._warned = True
            recorder.warn("--check-hosts checked nothing: in hook mode public-only it cannot "
                          "tell which programs run on other processes' devices")
        return bool(spans)

    def _check(self, event: Event) -> str | None:
        store = self._attach()
        if store is None or event.owner == Owner.JAX or not store.alive():
            return None
        if not self._spans(event):  # local to this process: the peers need not compile it
            return None
        function = function_id(event)
        with self._lock:
            seq = self._seqs.get(function, 0)
            self._seqs[function] = seq + 1
        recorder = self._recorder
        mine = entry_of(event, store.index, seq,
                        recorder.base_context if recorder is not None else None)
        folder = f"{self._prefix}/{{}}/{function}/"
        store.put(folder.format(store.index) + str(seq), encode_entry(mine))
        entries = {store.index: mine}
        deadline = time.monotonic() + self.timeout
        while True:
            stop = store.get(self._stop_key)
            if stop is not None:
                return stop
            absent = [p for p in range(store.count) if p not in entries]
            for p in absent:
                found = decode_entry(store.get(folder.format(p) + str(seq)) or "")
                if found is not None:
                    entries[p] = found
            absent = [p for p in absent if p not in entries]
            if not absent:
                message = self._mismatch(entries)
                return None if message is None else _publish(store, self._stop_key, message)
            code = self._interrupted() if self._interrupted is not None else None
            if code is not None:  # raised from the compiling call, like the signal itself
                raise exits.interruption(code)
            left = deadline - time.monotonic()
            if left <= 0:
                last = {p: _last_of(store, folder.format(p)) for p in absent}
                return _publish(store, self._stop_key,
                                self._missing(mine, absent, last, self.timeout))
            found = decode_entry(store.wait(folder.format(absent[0]) + str(seq),
                                            min(POLL, left)) or "")
            if found is not None:
                entries[absent[0]] = found

    # -- the watcher thread ----------------------------------------------------------------------
    def _watch(self) -> None:
        store = self._store
        while store is not None and not self._done.is_set() and store.alive():
            message = store.wait(self._stop_key, POLL)
            if message is None:
                continue
            message = self._shown(message)
            self.stopped = self.stopped or message
            seen = time.monotonic()
            while not self._done.wait(POLL):  # a compiling thread raises it itself
                if self._compiling_since is None or time.monotonic() - seen > GRACE:
                    break
            if not self._closed and self.claim():
                self._stop_here(message)
            return

    @property
    def _stop_key(self) -> str:
        return f"{self._prefix}/stop"

    def close(self) -> None:
        """Stop watching (the guard was removed); compiles are no longer checked."""
        self._closed = True
        self._stop_watching()

    def claim(self) -> bool:
        """True for the first caller: it reports the stop; the watcher stops watching (and,
        when another thread claims, has returned when this does)."""
        with self._lock:
            claimed, self._claimed = self._claimed, True
        if claimed:
            return False
        self._stop_watching()
        return True

    def _stop_watching(self) -> None:
        """Stop the watcher and wait for it to return (it polls: a fraction of a second), so
        that no thread of ours waits in JAX's native store while the process ends."""
        self._done.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=POLL + 5.0)

    def _stop_here(self, message: str) -> None:
        """End this process from the watcher: the report first (``finish``), else the
        message on stderr."""
        code = int(ExitCode.TARGET_RAISED)
        try:
            if self._finish is not None and self._recorder is not None:
                self._recorder.fail(message)
                session = self._recorder.stop()
                code = self._finish(session, self._recorder.failure or message)
            else:
                print(message, file=sys.stderr)
        finally:
            self.leave(code)

    def notice(self) -> str | None:
        """The stop message: this process's, or read from the store (a peer stopped the job,
        and its exit broke this process's collective before the watcher saw the notice)."""
        if self.stopped is None and self._store is not None:
            found = self._store.get(self._stop_key)
            self.stopped = None if found is None else self._shown(found)
        return self.stopped

    def leave(self, code: int) -> None:
        """End the process once every peer has written its report too (or after ``PARTING``
        seconds): the first to leave breaks the others' collectives, which some JAX versions
        answer by aborting the process."""
        store = self._store
        if store is not None:
            store.put(f"{self._prefix}/left/{store.index}", "1")
            deadline = time.monotonic() + PARTING
            for peer in range(store.count):
                left = deadline - time.monotonic()
                if peer != store.index and left > 0:
                    store.wait(f"{self._prefix}/left/{peer}", left)
            if store.index == 0:  # JAX's coordination service runs here, and JAX aborts a
                time.sleep(LAST)  # process that sees it gone: the others leave first
        exits.hard_exit(code)


def _publish(store: distributed.Store, key: str, message: str) -> str:
    """Write the stop message under ``key``; the first one written wins, for every process."""
    if store.put(key, message):
        return message
    return store.get(key) or message


def _last_of(store: distributed.Store, folder: str) -> Entry | None:
    """The last entry in ``folder``, a process's of one function (the program it still runs)."""
    found = [decode_entry(value) for _, value in store.under(folder)]
    entries = [e for e in found if e is not None]
    return max(entries, key=lambda e: e.seq) if entries else None


def function_id(event: Event) -> str:
    """The function's key in the store, the same on every process: its name and the file name
    and line where it is defined (not the folder: the job's hosts may keep it in different
    places), hashed into a key-safe text."""
    where = os.path.basename(event.defined_at or "")
    return hashlib.blake2b(f"{event.function}@{where}".encode(), digest_size=8).hexdigest()
