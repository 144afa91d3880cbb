"""The JAX-internals layer: the only code that imports JAX's private modules (``jax._src``) or
patches JAX, each module feature-detected and noting the JAX versions it was checked on.

``hooks`` patches jit's cache-miss path (``Hooks``, ``probe``) and ``listeners`` registers the
``jax.monitoring`` listeners; ``slow_calls`` (with ``flatten_cost``) sees the calls that leave
JAX's C++ fast path, ``callbacks`` the Python a traced program calls back on the host,
``replay`` how a top-level call can be made again ahead of time (a warm-up plan), ``forget``
forgets what JAX's caches hold for functions outside JAX (a pytest test's start), and
``distributed`` reaches the job's key-value store for ``--check-hosts``. ``arguments/`` reads
what a traced call's arguments look like; ``programs/`` what was compiled (its cost, its
persistent-cache key). Where an internal is missing, the recorder falls back to the public
``jax.monitoring`` events and says so. ``tests/unit/test_layers.py`` fails when any module
outside this folder imports ``jax._src``.
"""
