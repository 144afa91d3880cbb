"""Part of the JAX-internals layer (with ``jax_internals``, which calls it): whether a program
just lowered runs on devices of other processes of a ``jax.distributed`` job.

``--check-hosts`` (``capture.host_check``) compares only such programs across processes: a
program whose devices all belong to this process (a metrics helper jitted on process 0 alone)
runs no collective with the other processes, so they need not compile it, nor in the same order.

``jax_internals``' ``_pjit_lower`` wrapper calls ``note`` after each missed lowering, on the
compiling thread; the check calls ``take`` from the compile that follows (the recorder's
``on_compile``, same thread). What it reads, checked on JAX 0.10.2 and 0.12.0.1: the
``pxla.MeshComputation`` that ``_pjit_lower`` returns keeps its devices in ``_device_list``
(private; an ``xc.DeviceList`` with ``is_fully_addressable``, else a sequence of devices whose
``process_index`` is compared with ``jax.process_index()``). Feature-detected: where it cannot be
read the answer is None (unknown), never an exception.
"""

from __future__ import annotations

import threading
from typing import Any

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
        import jax

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
