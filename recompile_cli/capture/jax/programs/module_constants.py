"""Part of the JAX-internals layer: the large constants of a lowered module, hashed in place.

``capture.jax.programs.cache_key`` prints each module it takes apart with MLIR's
``large_elements_limit`` so that a 16 MB constant costs no 33 MB of text to print and read: the
printer then writes ``cache_key_text.ELIDED`` for each constant of more than ``LARGE_ELEMENTS``
elements (not a splat). ``large_constant_digests`` hashes exactly those constants from the module's
own buffers, in the order the printer writes them, for ``cache_key_text.normalise`` to put back.
Works on the MLIR Python objects of JAX >= 0.9 (read on 0.10.2 and 0.12.0.1); no JAX import.
"""

from __future__ import annotations

import hashlib
from typing import Any

LARGE_ELEMENTS = 256  # constants with more elements are hashed here instead of printed


def large_constant_digests(module: Any, limit: int = LARGE_ELEMENTS) -> list[str] | None:
    """``sha256:DIGEST:NBYTES`` of each constant operation's value of more than ``limit``
    elements, in printing order (operations pre-order); None when one cannot be read."""
    out: list[str] = []
    stack = [module.operation]
    while stack:  # depth-first, children in order: the order the printer writes them
        operation = stack.pop()
        children = [child for region in operation.regions for block in region.blocks
                    for child in block.operations]
        for child in reversed(children):
            stack.append(child.operation)
        if operation.name.endswith(".constant") and "value" in operation.attributes:
            value = operation.attributes["value"]
            if getattr(value, "is_splat", True) or len(value) <= limit:
                continue
            try:
                import numpy as np  # lazy: capture loads before the job's environment is set

                # the value's bytes hashed in place (the array reads the attribute's buffer):
                # no copy of a 16 MB constant
                data = np.ascontiguousarray(np.asarray(value)).reshape(-1).view(np.uint8)
                hashed = hashlib.sha256(data.data).hexdigest()[:16]
            except Exception:
                return None
            out.append(f"sha256:{hashed}:{data.nbytes}")
    return out
