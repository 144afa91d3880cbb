"""The JAX-internals layer: the only code that imports JAX's private modules (``jax._src``) or
patches JAX, each module feature-detected and noting the JAX versions it was checked on.

``hooks`` patches jit's cache-miss path (``Hooks``, ``probe``) and ``listeners`` registers the
``jax.monitoring`` listeners; ``signatures`` (with ``scalars``, ``pytrees``, ``wrapped`` and
``equality``) reads what a traced call's arguments look like, ``replay`` how a top-level call
can be made again ahead of time (a warm-up plan); ``cost`` profiles a lowered
program, ``cache_key`` (with ``module_constants``) takes the persistent-cache key apart, and
``distributed`` reaches the job's key-value store for ``--check-hosts``. Where an internal is
missing, the recorder falls back to the public ``jax.monitoring`` events and says so.
`tests/unit/test_layers.py` fails when any module outside this folder imports ``jax._src``.
"""
