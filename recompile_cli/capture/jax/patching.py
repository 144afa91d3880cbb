"""Part of the JAX-internals layer: putting back a JAX function that a hook patched.

``jax_internals.Hooks`` and ``jax_cache_key.KeyHooks`` both replace functions of JAX's private
modules for the length of a recording; ``restore`` is how each puts one back. No JAX import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def restore(module: Any, name: str, original: Any, ours: Callable[[Any], bool]) -> str | None:
    """Set ``module.name`` back to ``original`` when what is there now is ``ours``; else leave
    it (someone patched over us) and say so. Returns that warning, or None; never raises."""
    where = f"{getattr(module, '__name__', '?')}.{name}"
    try:
        if ours(getattr(module, name, None)):
            setattr(module, name, original)
            return None
        return f"{where} was replaced by someone else during the run; left as it is"
    except Exception as exc:
        return f"could not restore {where} ({exc})"
