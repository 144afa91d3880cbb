"""The command line (the only code that prints): commands in ``app`` (the typer application is
``cli.app.app``), ``forecast_command``, ``merge_command`` and ``warmup_command``, shared options in
``options_cli``, output in ``output``, a run's report and gates in ``finish``, the runs of
``check`` in ``check_runner``, and the live status line in ``live``. The measured process is
``process``'s.
"""
