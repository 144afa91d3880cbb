"""Why each trace or compile happened: one explanation (``cause.Cause``), the diff of a
signature against the closest one seen before (``explain``), found through an index
(``nearest``), and the causes of what JAX compares with ``==``: static values and pytree
structures (``static``).
"""
