"""Analysis: pure functions from a ``Session`` to a ``Report`` (causes, predictions,
suggestions, tables). No printing, no JAX.
"""
