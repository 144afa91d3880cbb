"""Capture: the only code that runs while the user's program runs.

``jax/`` is the JAX-internals layer (the only code that imports ``jax._src``); it feeds the
``recorder``, which freezes what it saw into a ``Session`` (``enrich`` adds each compile's
persistent-cache key and cost profile); ``runner`` runs targets and scripts under it, after
``loader`` imports them; ``forecast`` traces a spec's calls instead of running them, and
``host_check`` compares compiles across the processes of a job; ``counting``, ``stale``,
``origins`` and ``stack`` are its helpers.
"""
