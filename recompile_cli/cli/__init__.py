"""The command line (the only code that prints): commands in ``app`` (the typer application is
``cli.app.app``), ``forecast_command``, ``merge_command`` and ``warmup_command``, shared options in
``options_cli`` and the groups commands take them in ``option_groups``, help's layout in
``help_format``, output in ``output``, a run's report and gates in ``finish``, the runs of
``check`` in ``check_runner``, and the live status line in ``live``. The measured process is
``process``'s.
"""
