"""Capture: the only code that runs while the user's program runs.

``jax_internals`` and the rest of the JAX-internals layer (the ``jax_*`` modules, which read
``jax._src``) feed the ``recorder``, which freezes what it saw into a ``Session``
(``enrich`` adds each compile's persistent-cache key and cost profile); ``runner`` runs targets
and scripts under it, after ``loader`` imports them; ``forecast`` traces a spec's calls instead
of running them, and ``host_check`` compares compiles across the processes of a job;
``counting``, ``stale`` and ``frames`` are its helpers.
"""
