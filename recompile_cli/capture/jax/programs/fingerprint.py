"""Part of the JAX-internals layer: the fingerprint of a lowered program (``Event.program``).

``Enrichment.cost`` calls ``fingerprint_of`` on the miss path only, after ``_pjit_lower`` lowered
a jaxpr and the compile-cost walk counted the module's operations, and before XLA compiles it;
it never raises (None instead, meaning "unknown": never a guess).

Two compiles with the same fingerprint compile the same program for the same devices: what
``analysis.wasted_compiles`` calls a compile that bought nothing. The fingerprint is SHA-256 of
the module's text as MLIR prints it without debug information (no ``loc(...)``), normalised so
that only what changes the program counts:

* the module's name (``module @jit_step``: the function's name) is left out, and so are the
  argument and result names JAX writes for people (``jax.arg_info``, ``jax.result_info``);
* private functions (nested jits) are renamed in order of definition (``@inner_1`` -> ``@_p0``);
* a large constant, printed elided (``large_elements_limit``), counts by the digest of its value
  read from the module itself (``module_constants``), so that printing stays linear in the
  operations rather than in the constants' bytes;
* the devices it is compiled for, its platforms and its compiler options are added: the same
  module compiled for other devices is another executable.

The fingerprint is written ``MODULE/TARGET``: 16 hex digits of the SHA-256 of the normalised
module, ``/``, 8 of what it is compiled for. Equal fingerprints are the same program for the same
devices (``analysis.wasted_compiles``); the module part alone is the program as JAX lowered it,
which ``merge`` compares across the processes of a job (``analysis.hosts.divergence``), whose
local programs run on devices of their own (sessions saved before the split carry one digest of
both: their module is unknown there).

Bounded like the compile-cost walk: a module of more than ``cost.MODULE_OP_LIMIT`` operations
(or whose operations the walk could not count) is not printed, and one whose constants JAX
passes as arguments (``const_args``) cannot be told apart by its text: both are unknown.
Read on JAX 0.10.2 (``MeshComputation._hlo``, ``_device_list``, ``_platforms``,
``_compiler_options_kvs``, ``const_args``); absent pieces make the fingerprint unknown.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from recompile_cli.capture.jax.programs import module_constants
from recompile_cli.capture.jax.programs.cost import MODULE_OP_LIMIT
from recompile_cli.capture.jax.programs.module_constants import LARGE_ELEMENTS

DIGEST = 16  # hex digits kept of the module's SHA-256
TARGET_DIGEST = 8  # hex digits kept of the SHA-256 of the devices, platforms and options
SEPARATOR = "/"  # between the two in ``Event.program_fingerprint``
ELIDED = "dense_resource<__elided__>"  # a large constant's value, left out by the printer
_MODULE = re.compile(r"^module @[\w.$-]+")
_INFO = re.compile(r'(jax\.(?:arg|result)_info = )"(?:[^"\\]|\\.)*"')
_PRIVATE = re.compile(r"func\.func private @([\w.$-]+)")
_SYMBOL = re.compile(r"@([\w.$-]+)")


def fingerprint_of(lowering: Any, module_ops: int | None, bounded: bool) -> str | None:
    """The program fingerprint of ``lowering`` (what ``_pjit_lower`` returned), or None where it
    is unknown: ``module_ops`` is None (not counted) or ``bounded`` (past the walk's limit), the
    module cannot be printed, or its constants are arguments. Never raises."""
    if module_ops is None or bounded or module_ops > MODULE_OP_LIMIT:
        return None
    try:
        return _fingerprint(lowering)
    except Exception:
        return None


def _fingerprint(lowering: Any) -> str | None:
    module = getattr(lowering, "_hlo", None)
    if module is None or getattr(lowering, "const_args", None):
        return None
    text = _text(module)
    if ELIDED in text:
        digests = module_constants.large_constant_digests(module)
        if digests is None or text.count(ELIDED) != len(digests):
            return None
        parts = text.split(ELIDED)
        text = "".join(part + (f"dense_resource<{digests[i]}>" if i < len(digests) else "")
                       for i, part in enumerate(parts))
    return digest(normalise(text), _target(lowering))


def _text(module: Any) -> str:
    """The module printed without locations, large constants elided; not verified again (JAX
    verified it when it lowered it), which saves about a fifth of the printing."""
    operation = module.operation
    try:
        return str(operation.get_asm(enable_debug_info=False,
                                     large_elements_limit=LARGE_ELEMENTS, assume_verified=True))
    except TypeError:  # MLIR bindings without the option
        return str(operation.get_asm(enable_debug_info=False,
                                     large_elements_limit=LARGE_ELEMENTS))


def normalise(text: str) -> str:
    """The module's text without its name, JAX's argument and result names, and with private
    functions renamed in order of definition (pure: no JAX)."""
    text = _MODULE.sub("module @_", text, count=1)
    if "_info = " in text:
        text = _INFO.sub(r'\1""', text)
    private = {name: f"_p{i}" for i, name in enumerate(dict.fromkeys(_PRIVATE.findall(text)))}
    if private:
        text = _SYMBOL.sub(lambda m: "@" + private.get(m[1], m[1]), text)
    return text


def digest(text: str, target: str = "") -> str:
    """``MODULE/TARGET``: the SHA-256 of a normalised module (``DIGEST`` hex digits) and of
    what it is compiled for (``TARGET_DIGEST``)."""
    module = hashlib.sha256(text.encode()).hexdigest()[:DIGEST]
    where = hashlib.sha256(target.encode()).hexdigest()[:TARGET_DIGEST]
    return f"{module}{SEPARATOR}{where}"


def _target(lowering: Any) -> str:
    """The devices, platforms and compiler options the module is compiled for, as text."""
    devices = getattr(lowering, "_device_list", None) or ()
    ids = ",".join(str(getattr(device, "id", device)) for device in devices)
    platforms = ",".join(map(str, getattr(lowering, "_platforms", None) or ()))
    options = repr(tuple(getattr(lowering, "_compiler_options_kvs", None) or ()))
    return f"devices={ids};platforms={platforms};options={options}"
