"""Running a notebook in a real Jupyter kernel for the notebook tests (``test_notebook*.py``):
kernel ``python3`` of this interpreter, on CPU, with this checkout on its ``PYTHONPATH``.
The caller skips without nbclient / ipykernel (``pytest.importorskip``)."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import ROOT


def setup(*imports: str) -> str:
    """The first cell: the extension and a jitted ``train_step``, with ``imports`` (e.g.
    ``import os, sys``) before JAX's."""
    return "\n".join(["%load_ext recompile_cli", *imports, "import jax, jax.numpy as jnp", "",
                      "@jax.jit", "def train_step(x):", "    return (x * 2.0).sum()"])


def execute(notebook: object, folder: Path, allow_errors: bool = False) -> object:
    """Execute ``notebook`` in ``folder``; the kernel inherits this environment, set for it
    and restored afterwards."""
    import nbclient

    env = {"JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    old = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=120,
                                         allow_errors=allow_errors,
                                         resources={"metadata": {"path": str(folder)}})
        client.execute()
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook
