"""Capture: the only code that runs while the user's program runs.

``jax_internals`` (the one module touching ``jax._src``) feeds the ``recorder``, which freezes
what it saw into a ``Session``; ``runner`` runs targets and scripts under it, after ``loader``
imports them; ``counting``, ``stale`` and ``frames`` are its helpers.
"""
