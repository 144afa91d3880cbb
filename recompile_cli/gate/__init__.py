"""Gates: every limit declared once (``limits``: ``LIMITS``, ``Budget``, ``Gates``), budget
files (``budgets``), baseline files (``baseline``), the gate's vocabulary (``rules``), the
baseline's rules (``against_baseline``) and the one evaluator of counts against limits and
baselines (``evaluate``). Pure over ``Report``s: running a budget file's targets is
``cli.check_runner``'s, comparing two runs ``analysis.compare``'s.
"""
