"""Part of the JAX-internals layer (with ``jax_internals``): what a ``jax.Array`` says about its
placement where the public API does not say it on every supported version.

``jax.Array.committed`` (public on JAX 0.10.2 and 0.12.0) tells whether an array is committed
to its sharding, which puts that sharding in jit's lowering key; JAX 0.4.30 has only the private
``_committed``. Never raises: unknown means uncommitted.
"""

from __future__ import annotations

from typing import Any


def is_committed(array: Any) -> bool:
    """True when ``array`` is committed to its sharding (``jax.device_put(x, device)``)."""
    try:
        committed = getattr(array, "committed", None)
        if committed is None:  # JAX 0.4.30: only the private attribute
            committed = getattr(array, "_committed", False)
        return bool(committed)
    except Exception:
        return False
