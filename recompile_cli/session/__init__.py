"""The session: the frozen record of one run (``model``) and its file formats (``files``).

Everything after capture reads a ``Session``; nothing here imports JAX or pandas.
"""
