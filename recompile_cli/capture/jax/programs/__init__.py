"""What JAX compiled, read from its lowered programs: the compile-cost profile (``cost``, whose
equations ``cost_lines`` ties to the user's lines) and the persistent-cache key taken apart
(``cache_key``, with ``module_constants`` hashing large constants in place and
``cache_key_text`` normalising the module text). ``cost_lines`` and ``cache_key_text`` work on
plain records and text, without JAX.
"""
