"""``run -m MODULE``: a module run as ``python -m MODULE`` runs it, for ``runner.run_script``.

As Python does for ``-m``: the working folder is ``sys.path[0]`` (so that ``run -m pytest``
imports the checkout the user is in, not an installed copy of it), a package runs its
``__main__`` submodule, and ``sys.argv[0]`` is the file that runs (``runpy``'s ``alter_sys``).
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

from recompile_cli.errors import TargetError


def check_module(name: str) -> None:
    """Raise a ``TargetError`` when there is no module ``name`` to run, looking where
    ``python -m`` looks (the working folder first). Only the top-level package is looked up, and
    nothing is imported: a dotted name's parent packages are imported by the run itself, inside
    the recording (an error there is the run's failure, as Python would raise it)."""
    top = name.split(".")[0]
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise TargetError(f"run -m {name!r}: not a module name; run -m takes a module name, "
                          "as python -m does (run takes a script's path without -m).")
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:
        found = top in sys.modules or importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    finally:
        sys.path[:] = saved
    if not found:
        raise TargetError(f"No module named {top!r} to run as python -m {name} would, from "
                          f"the current folder ({os.getcwd()}) or the installed packages.")


def run_module(name: str) -> None:
    """Run ``name`` as ``__main__``, as ``python -m`` does (``sys.argv[0]``: its file)."""
    runpy.run_module(name, run_name="__main__", alter_sys=True)
