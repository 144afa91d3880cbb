"""Analysis: pure functions from a ``Session`` to a ``Report`` (causes, predictions,
suggestions, tables), and between runs. It must never do I/O, print or import JAX; only
``dataframes.py`` imports pandas.

Map: ``report.py`` (session -> ``Report``), ``causes/`` (why each trace or compile happened),
``advice/`` (fixes and the compiles they save), ``messages.py`` (compiles put into words for
gates and the guard), ``compile_cost.py`` (why a compile is slow), ``slow_calls.py`` (calls
through JAX's Python dispatch), ``eager_lines.py`` (compiles of code not yours at your lines),
``sweeps.py`` (shape sweeps), ``compare.py`` (runs compared, ``diff``), ``cache/`` (the
persistent compilation cache), ``hosts/`` (multi-process jobs), ``warmup/`` (plans, coverage),
``dataframes.py`` (tables as DataFrames), ``shorten.py`` (values shortened for display).
"""
