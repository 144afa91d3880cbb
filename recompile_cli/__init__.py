"""recompile-cli: a recompilation profiler for JAX. Capture -> frozen ``Session`` -> analysis
-> renderers and gates.

Owns the public names (``record``, ``analyse``, ``forecast``, ``guard``...), resolved lazily from
``api`` and ``guards``, and the ``%load_ext recompile_cli`` hooks. Importing it must never import
JAX, pandas, IPython or any subpackage, nor have side effects: the measured child imports it.

Map: ``capture/`` (the only code that runs inside the user's program), ``session/`` (the frozen
record and its files), ``analysis/`` (session -> report, pure), ``render/`` (report -> text),
``gate/`` (limits, budgets, baselines), ``api/`` (Python, pytest, notebooks), ``guards/`` (the
runtime guard), ``cli/`` (the command line, the only code that prints), ``process/`` (the
measured process), ``inputs/`` (argument specs, jit options), ``errors.py`` (user-facing errors),
``exits.py`` (exit codes, signals), ``fileio.py`` (writing output files), ``options.py`` (option
checks shared by every front door), ``ranges.py`` (numeric ranges), ``__main__.py`` (the
``recompile-cli`` entry point).
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
    from recompile_cli.api.notebook import load_ipython_extension as load  # import stays light

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext recompile_cli``: removes the magics."""
    from recompile_cli.api.notebook import unload_ipython_extension as unload  # stays light

    unload(ipython)
