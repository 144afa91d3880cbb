"""What the installed JAX supports, for tests to skip on cleanly.

Usage in an integration test (``tests/integration`` is on ``sys.path`` through its
``conftest.py``)::

    from jax_support import requires_private_hooks, requires_jit_decorator_factory

    @requires_private_hooks          # causes, signatures, locations, call counts
    def test_shape_change_is_named(): ...

recompile-cli supports JAX 0.4.30 and newer. The private hooks that give causes, signatures,
``defined at`` locations (and so per-function call counts and ``file.py:function`` keys) need
JAX >= 0.9; on older versions the recorder runs in public-only mode (counts and times only).
"""

from __future__ import annotations

import pytest

from recompile_cli.capture.jax import hooks

JAX_VERSION: tuple[int, ...] = hooks.jax_version()
PRIVATE_HOOKS_MISSING: str | None = hooks.probe()
PRIVATE_HOOKS = PRIVATE_HOOKS_MISSING is None

requires_private_hooks = pytest.mark.skipif(
    not PRIVATE_HOOKS,
    reason=f"needs JAX's private hooks (causes, signatures, locations: JAX >= 0.9); JAX "
           f"{'.'.join(map(str, JAX_VERSION))} runs public-only")

# ``@jax.jit(static_argnums=...)`` as a decorator factory (used by sample_programs/static_args.py)
# exists since JAX 0.8; older versions need ``functools.partial(jax.jit, ...)``.
requires_jit_decorator_factory = pytest.mark.skipif(
    bool(JAX_VERSION) and JAX_VERSION < (0, 8),
    reason="needs the jax.jit(**options) decorator-factory form (JAX >= 0.8)")

# Slow calls (calls JAX dispatches in Python without compiling) are watched through the private
# hooks plus JAX's Python dispatch functions (``capture.jax.slow_calls``: JAX 0.10 and newer).
from recompile_cli.capture.jax import slow_calls as _slow_calls

SLOW_CALLS_MISSING: str | None = (PRIVATE_HOOKS_MISSING if not PRIVATE_HOOKS
                                  else _slow_calls.probe())
requires_slow_calls = pytest.mark.skipif(
    SLOW_CALLS_MISSING is not None,
    reason=f"slow calls are not observable on JAX {'.'.join(map(str, JAX_VERSION))} "
           f"({SLOW_CALLS_MISSING})")
