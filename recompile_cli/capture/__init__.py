"""Capture: the only code that runs while the user's program runs.

``jax/`` is the JAX-internals layer (the only code that imports ``jax._src``); it feeds the
``recorder``, which freezes what it saw into a ``Session`` (``drafts`` holds an event while it
fills in, ``enrich`` adds each compile's persistent-cache key and cost profile, ``slow_groups``
the slow calls, ``raised`` the calls JAX refused, ``stale`` stale captures, ``forks`` what a
forked child does). ``counting`` wraps jitted functions to count calls when asked. The folders:
``code/`` reads the user's code from the live interpreter (call sites, origins, names, mode
switches); ``running/`` finds, imports and runs targets, scripts and warm-up plans under the
recorder (or traces a spec's calls, ``forecast``); ``hosts/`` is the multi-host check.
"""
