"""The measured process and how it is started: the user's program never runs in the process that
decides the verdict. Nothing here prints or imports the command line (``cli``), so the CLI, the
API and the tests start a measured process the same way.

``job`` is what a measured process runs; ``child`` is that process (``python -m
recompile_cli.process.child``); ``spawn`` starts one, ``prestart`` starts one before the command
line is parsed, ``launchers`` picks how a job is started (its own process, or in-process for
tests); ``supervisor`` reads its events stream and decides how the run ended.
"""
