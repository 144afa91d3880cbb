"""The sections of the human reports, each written once for every format that shows it
(terminal, Markdown, HTML, JSON); the findings are the analysis's, never made here.

Map: ``headline.py`` (the opening lines), ``eager_lines.py`` (compiles at the user's lines),
``compile_cost.py``, ``slow_calls.py``, ``cache_keys.py`` (the persistent cache),
``warmup_coverage.py`` and ``wasted_compiles.py`` (compiles of a program already compiled).
"""
