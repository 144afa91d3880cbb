"""Analysis: pure functions from a ``Session`` to a ``Report`` (causes, predictions,
suggestions, tables), and between runs (``compare``, ``merge``, ``divergence``). No I/O, no
printing, no JAX.
"""
