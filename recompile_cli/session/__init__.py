"""The session: the frozen record of one run (``model``), its file formats (``files``), and the
vocabulary of its texts: ``file:line`` locations (``locations``) and pytree structures
(``structures``).

Everything after capture reads a ``Session``; nothing here imports JAX or pandas.
"""
