"""Part of the JAX-internals layer (with ``hooks``): JAX's distributed key-value store.

``jax.distributed.initialize`` starts a coordination service on process 0 and connects every
process to it with a client, ``jax._src.distributed.global_state.client`` (private). The client
has a key-value store that every process of the job reads and writes; ``--check-hosts``
(``capture.hosts.host_check``) exchanges its entries there, so that no other server is needed.

Checked on JAX 0.10.2 and 0.12.0.1 (``DistributedRuntimeClient``): ``key_value_set(key, value,
allow_overwrite=False)``, ``blocking_key_value_get(key, timeout_in_ms)`` (raises on timeout),
``key_value_try_get(key)`` (raises when the key is missing; JAX 0.4.30 lacks it, and a wait of
1 ms stands in) and ``key_value_dir_get(prefix)``.
Everything is feature-detected: ``connect()`` returns None (and ``why_not()`` says why) when
the job has one process, ``initialize`` has not run, or the client lacks a method. No method of
``Store`` raises: a failed read is ``None`` (missing), a failed write ``False``.

It also answers, without starting JAX's backend, the two questions ``capture.hosts.process`` asks to
name this process: whether the backend has started (``xla_bridge.backends_are_initialized``,
private) and which process index and count ``jax.distributed.initialize`` was given.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

_METHODS = ("key_value_set", "blocking_key_value_get", "key_value_dir_get")
NOT_STARTED = "jax.distributed.initialize has not run"
ONE_PROCESS = "the job has one process"
NOTHING_TO_CHECK = (NOT_STARTED, ONE_PROCESS)  # the other reasons: a job that cannot be checked


@dataclass(frozen=True, slots=True)
class Store:
    """The job's key-value store, as this process (``index`` of ``count``) reaches it."""

    client: Any
    index: int
    count: int

    def alive(self) -> bool:
        """Whether JAX still holds this client (``jax.distributed.shutdown`` drops it)."""
        state = _state()
        return state is not None and getattr(state, "client", None) is self.client

    def put(self, key: str, value: str) -> bool:
        """Write ``key`` once; False when it exists already or the store cannot be reached."""
        if not self.alive():
            return False
        try:
            self.client.key_value_set(key, value)
        except Exception:  # ALREADY_EXISTS, or the service is gone
            return False
        return True

    def wait(self, key: str, seconds: float) -> str | None:
        """``key``'s value, waiting up to ``seconds`` for it to be written; None if it is not."""
        if not self.alive():
            return None
        try:
            return str(self.client.blocking_key_value_get(key, max(int(seconds * 1000), 1)))
        except Exception:  # DEADLINE_EXCEEDED, or the service is gone
            return None

    def get(self, key: str) -> str | None:
        """``key``'s value now, or None."""
        if not self.alive():
            return None
        try:
            if not hasattr(self.client, "key_value_try_get"):  # JAX 0.4.30: a 1 ms wait
                return str(self.client.blocking_key_value_get(key, 1))
            return str(self.client.key_value_try_get(key))
        except Exception:  # NOT_FOUND
            return None

    def under(self, prefix: str) -> list[tuple[str, str]]:
        """Every (key, value) whose key starts with ``prefix`` (a folder: ends with ``/``)."""
        if not self.alive():
            return []
        try:
            return [(str(k), str(v)) for k, v in self.client.key_value_dir_get(prefix)]
        except Exception:
            return []


def backend_started() -> bool:
    """Whether JAX's backend has started (then ``jax.distributed.initialize`` can no longer run);
    True when the installed JAX cannot tell, so that callers fall back to JAX's public API."""
    try:
        from jax._src import xla_bridge  # lazy: capture loads before the job's environment is set

        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # a JAX without this private function
        return True


def initialized_identity() -> tuple[int | None, int | None]:
    """The process index and count ``jax.distributed.initialize`` was given, once it ran."""
    state = _state()
    try:
        if getattr(state, "client", None) is None:
            return None, None
        return int(state.process_id), int(state.num_processes)
    except Exception:  # a JAX whose state lacks these fields
        return None, None


def _state() -> Any:
    try:
        from jax._src import distributed  # lazy: capture loads before the job's environment is set

        return distributed.global_state
    except Exception:  # a JAX without this module
        return None


def why_not() -> str | None:
    """None when ``connect()`` finds a store, else why it does not (one phrase)."""
    state = _state()
    if state is None:
        return "this JAX has no jax._src.distributed.global_state"
    client = getattr(state, "client", None)
    if client is None:
        return NOT_STARTED
    missing = [m for m in _METHODS if not callable(getattr(client, m, None))]
    if missing:
        return f"JAX's distributed client lacks {', '.join(missing)}"
    try:
        if int(state.num_processes) <= 1:
            return ONE_PROCESS
        int(state.process_id)
    except Exception:
        return "JAX's distributed state has no process_id / num_processes"
    return None


def connect() -> Store | None:
    """The store of the job this process belongs to; None for a single process (``why_not``)."""
    if why_not() is not None:
        return None
    state = _state()
    return Store(state.client, int(state.process_id), int(state.num_processes))


# -- programs that span processes --------------------------------------------------------------
# Whether a program just lowered runs on devices of other processes of a ``jax.distributed`` job.
#
# ``--check-hosts`` (``capture.hosts.host_check``) compares only such programs across processes: a
# program whose devices all belong to this process (a metrics helper jitted on process 0 alone)
# runs no collective with the other processes, so they need not compile it, nor in the same order.
#
# ``hooks``' ``_pjit_lower`` wrapper calls ``note`` after each missed lowering, on the
# compiling thread; the check calls ``take`` from the compile that follows (the recorder's
# ``on_compile``, same thread). What it reads, checked on JAX 0.10.2 and 0.12.0.1: the
# ``pxla.MeshComputation`` that ``_pjit_lower`` returns keeps its devices in ``_device_list``
# (private; an ``xc.DeviceList`` with ``is_fully_addressable``, else a sequence of devices whose
# ``process_index`` is compared with ``jax.process_index()``). Feature-detected: where it cannot be
# read the answer is None (unknown), never an exception.
_local = threading.local()


def spans_processes(lowering: Any) -> bool | None:
    """True when the lowered program's devices include another process's; None if unknown."""
    try:
        devices = getattr(lowering, "_device_list", None)
        if devices is None:
            return None
        addressable = getattr(devices, "is_fully_addressable", None)
        if isinstance(addressable, bool):
            return not addressable
        import jax  # lazy: capture loads before the job's environment is set

        me = jax.process_index()
        return any(int(device.process_index) != me for device in devices)
    except Exception:
        return None


def note(name: str, lowering: Any) -> None:
    """Remember, for this thread's next compile, whether the program of ``name`` spans
    processes (miss path only; never raises)."""
    try:
        _local.last = (name, spans_processes(lowering))
    except Exception:
        pass


def take(name: str) -> bool | None:
    """Whether the program of ``name`` this thread lowered last spans processes (None: no
    lowering of ``name`` was noted, or it could not be read); forgets it."""
    last = getattr(_local, "last", None)
    _local.last = None
    if last is None or last[0] != name:
        return None
    spans: bool | None = last[1]
    return spans
