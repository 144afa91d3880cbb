"""Advice: which fix applies to a re-compilation, its text, and the compiles it would save; no
advice rather than wrong advice. Map: ``suggest.py`` (groups -> ``Suggestion``s), ``rules.py``
(the rule table), ``groups.py`` (``Group``, ``Advice``, value kinds), ``texts.py`` (the texts),
``padding.py`` (shape padding and its cost), ``predict.py`` (predicted compile counts),
``eager.py`` (fixes for compiles of code not yours at your lines)."""
