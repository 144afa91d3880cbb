"""Multi-process jobs: per-process reports merged (``merge.py``), where processes compile
differently (``divergence.py``), why a ``--check-hosts`` job stopped (``mismatch.py``)."""
