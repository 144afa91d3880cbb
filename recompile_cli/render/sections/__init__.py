"""The sections of the human reports, each written once for every format that shows it
(terminal, Markdown, HTML, JSON): the headline (``headline``), the compiles at the user's lines
(``eager_lines``), the compile cost (``compile_cost``), slow calls (``slow_calls``), the
persistent cache (``cache_keys``) and warm-up coverage (``warmup_coverage``).
"""
