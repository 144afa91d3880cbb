"""The session: the frozen record of one run and its file formats; nothing here imports JAX or
pandas, and everything after capture reads a ``Session``.

``model`` holds the records (``kinds`` their enums, ``cache_key`` a compile's persistent-cache
key, ``warmup`` replays and warm-up plans); ``codec`` encodes and decodes them, ``events_log``
streams them as JSON lines, ``files`` saves and loads them, ``host_entries`` is what
``--check-hosts`` exchanges; ``locations`` (``file:line``) and ``structures`` (pytree
structures) are the vocabulary of their texts.
"""
