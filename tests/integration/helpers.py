"""Constants and small helpers of the integration tests (``from helpers import ...``: this
folder is on ``sys.path`` through its ``conftest.py``). A module of its own, not the conftest:
every layer's ``conftest.py`` is a module named ``conftest``, so ``from conftest import`` would
find whichever was loaded last."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_programs"
DATA = ROOT / "tests" / "data"

# The targets that test_cli.py and test_forecast_exact.py both drive (each adds its own): a
# plain function, a partial-jitted one with a static argument, a method, and a pytree builder.
TARGETS_MODULE = """
    import functools
    import jax, jax.numpy as jnp

    def plain(x, n):
        return x * n

    @functools.partial(jax.jit, static_argnames=("n",))
    def partial_jitted(x, n):
        return x * n

    class Model:
        scale = 2.0
        def forward(self, x):
            return x * self.scale

    model = Model()

    def make_params(n):
        return {"w": jnp.ones((n,))}

    def scaled(params, n):
        return params["w"] * n
"""


def user_functions(report: dict) -> dict[str, dict]:
    return {f["name"]: f for f in report["functions"] if f["owner"] == "user"}


def user_events(report: dict, name: str) -> list[dict]:
    return [e for e in report["events"] if e["function"] == name]


def budget(project: Path, text: str) -> Path:
    """Write ``recompile-budget.yaml`` into the ``project`` fixture's folder."""
    path = project / "recompile-budget.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def on_python_path(monkeypatch: Any, folder: str | Path) -> None:
    """Put ``folder`` on the import path of this process and of the programs the tests start:
    ``recompile-cli run`` runs the target in a process of its own, which sees ``PYTHONPATH``,
    as ``python script.py`` would."""
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p))
