"""Shared by every layer, so it stays light: it imports neither JAX nor the CLI.

- ``tests/unit``: hand-built sessions, JAX-free and fast (its conftest checks that JAX stays
  unimported when it runs alone).
- ``tests/integration``: real JAX on CPU, the CLI, real programs, subprocesses (its conftest has
  the JAX and CLI fixtures).

``python -m pytest`` runs both (``testpaths``). ``tests/`` is on ``sys.path`` through this file,
so both layers import the shared session builders as ``builders``.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # also for the programs the tests start
# Terminal reports fit COLUMNS when it is set (render.fit); the tests that check fitting set it
# themselves, so that no other test depends on the shell it runs in.
os.environ.pop("COLUMNS", None)

INTEGRATION = Path(__file__).resolve().parent / "integration"
PACKAGE = Path(__file__).resolve().parents[1] / "recompile_cli"


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile the package once, before any test (in the controlling process, not in each
    xdist worker): the suite starts hundreds of Python processes (measured processes, the CLI),
    and where bytecode is not written (PYTHONDONTWRITEBYTECODE) each would compile the package
    from source again, about 0.15 s apiece."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(PACKAGE, quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers ``-n auto`` (pyproject's addopts) starts: half again as many as there
    are cores, since about a third of the suite's time waits on other processes (measured
    processes, multi-process jobs, time-outs). On 2 cores the whole suite took 6 min 44 s with
    3 workers and 6 min 57 s with 4 (both with worksteal), 8 min 31 s with 2 (xdist's default
    distribution); ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) * 3 // 2)


def _runs_integration(config: pytest.Config) -> bool:
    """Whether the paths pytest was given hold integration tests (or lie inside them)."""
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == INTEGRATION or path in INTEGRATION.parents or INTEGRATION in path.parents:
            return True
    return False


def pytest_report_header(config: pytest.Config) -> str | None:
    """Which JAX the integration tests run on, and whether the recorder has its private hooks
    there. (Here, not in ``tests/integration/conftest.py``: pytest prints the header before it
    reads the conftest files of subfolders. A unit-only run does not import JAX for it.)"""
    if not _runs_integration(config):
        return None
    import jax

    from recompile_cli.capture.jax import hooks

    missing = hooks.probe()
    mode = "private hooks" if missing is None else f"public-only ({missing})"
    return f"jax {jax.__version__}, recorder: {mode}"
