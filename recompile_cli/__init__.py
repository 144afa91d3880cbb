"""recompile-cli: a recompilation profiler for JAX.

Capture (``Recorder``) -> frozen ``Session`` -> ``analyse`` -> renderers and gates.

From Python: ``record()`` (a context manager and decorator), ``analyse``, ``forecast`` (the
compiles of a list of calls, traced, not run), ``load_session`` / ``save_session``, and the
runtime ``guard()`` / ``install_guard()``. In Jupyter:
``%load_ext recompile_cli`` adds the ``%recompiles`` / ``%%recompiles`` magics. Importing the
package stays cheap and has no side effects: JAX, pandas and IPython are imported on first use.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not ``typing``'s: importing the package imports next to nothing
if TYPE_CHECKING:
    from typing import Any

    from recompile_cli.api import (
        Frames,
        RecompileReport,
        Recording,
        analyse,
        load_session,
        record,
        save_session,
        to_pandas,
    )
    from recompile_cli.api.forecast import forecast
    from recompile_cli.guards import (
        Guard,
        GuardBlinded,
        GuardBlindWarning,
        GuardViolation,
        RecompileLimitExceeded,
        RecompileWarning,
        UnmatchedBudgetWarning,
        guard,
        install_guard,
    )
    from recompile_cli.session.model import Session

__version__ = "0.1.0"
__all__ = ["Frames", "Guard", "GuardBlindWarning", "GuardBlinded", "GuardViolation",
           "RecompileLimitExceeded", "RecompileReport", "RecompileWarning", "Recording",
           "Session", "UnmatchedBudgetWarning", "__version__", "analyse", "forecast", "guard",
           "install_guard", "load_ipython_extension", "load_session", "record", "save_session",
           "to_pandas", "unload_ipython_extension"]

# Public names -> the module that defines them, imported on first access.
_LAZY = {
    **dict.fromkeys(["Frames", "RecompileReport", "Recording", "analyse", "load_session",
                     "record", "save_session", "to_pandas"], "recompile_cli.api"),
    "forecast": "recompile_cli.api.forecast",
    "Session": "recompile_cli.session.model",  # lazy too: `python -m recompile_cli` starts fast
    **dict.fromkeys(["Guard", "GuardBlindWarning", "GuardBlinded", "GuardViolation",
                     "RecompileLimitExceeded", "RecompileWarning", "UnmatchedBudgetWarning",
                     "guard", "install_guard"], "recompile_cli.guards"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'recompile_cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext recompile_cli``: adds the ``%recompiles`` and ``%%recompiles`` magics."""
    from recompile_cli.api.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext recompile_cli``: removes the magics."""
    from recompile_cli.api.notebook import unload_ipython_extension as unload

    unload(ipython)
