"""The jitted functions that the guard tests (``test_guard*.py``) compile: one a guard limits
(``train_step``) and one it leaves alone (``eval_step``)."""

from __future__ import annotations

import jax


@jax.jit
def train_step(x):
    return (x * 2.0).sum()


@jax.jit
def eval_step(x):
    return (x + 1.0).sum()
