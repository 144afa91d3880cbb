"""Imports JAX and ends: the fixed cost of `recompile-cli run` (start-up, its own imports,
analysis, the report) is its whole-process time under `run` minus under plain `python`."""

import jax  # noqa: F401
