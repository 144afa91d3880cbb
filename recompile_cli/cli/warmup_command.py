"""``recompile-cli warmup SESSION -o warmup_plan.py``: a warm-up plan from a recorded run.

Registered on the application in ``cli.app``. It reads a saved session (``--save``, ``--output
FILE.json``, ``--events-log``), finds what can be replayed (``analysis.warmup.plan``), writes the
plan's Python source (``render.warmup_plan``) atomically, and prints what it planned and what
is not replayable, with why (``-f json``: the same as JSON). Exit codes: 0; 2 for a session
that cannot be read, one recorded without JAX's internals (no signatures), or an output that
cannot be written.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from recompile_cli.cli import collisions, output
from recompile_cli.cli.output import Problems
from recompile_cli.errors import SessionFileError
from recompile_cli.session.kinds import HookMode


class WarmupFormat(enum.StrEnum):
    table = "table"
    json = "json"


def warmup(
    session: Annotated[Path, typer.Argument(
        help="A run saved with --save or --output FILE.json, or an --events-log FILE.jsonl "
        "(recorded with the private hooks: JAX >= 0.9).")],
    output_path: Annotated[Path, typer.Option(
        "--output", "-o", parser=output.path_option, metavar="PLAN.py",
        help="Where to write the plan (Python).")],
    fmt: Annotated[WarmupFormat, typer.Option(
        "--format", "-f", help="What is printed: a summary (table) or the same as JSON.")
    ] = WarmupFormat.table,
) -> None:
    """Write a warm-up plan: a Python module whose warm_up(parallel=None) compiles every
    signature the run compiled, ahead of time, on your own jitted functions; what cannot be
    replayed is listed with the reason."""
    # the analysis, the plan's writer and the session reader only for this command
    from recompile_cli.analysis.warmup.plan import plan
    from recompile_cli.render.warmup_plan import render_plan, summary_json, summary_text
    from recompile_cli.session.files import load_session

    problems = Problems()
    with output.user_errors():
        to = output.absolute(output_path)
        assert to is not None
        output.check_writable(to, "--output")
        output.take_stdout(collisions.check([
            collisions.Use("--output", to),
            collisions.Use("SESSION", output.absolute(session), writes=False)]))
        loaded = load_session(session)
        if loaded.environment.hook_mode == HookMode.PUBLIC_ONLY:
            raise SessionFileError(
                f"{session} was recorded in public-only mode (JAX "
                f"{loaded.environment.jax_version}): it has no signatures to replay. Record "
                "the run again with JAX >= 0.9 and --hook-mode private (the default).")
        found = plan(loaded)
        text = render_plan(found, output.shown_path(session), folder=str(to.parent),
                           name=to.name)
    written = output.write_file(to, text, "warm-up plan", problems)
    shown, source = output.shown_path(to), output.shown_path(session)
    if written:
        if fmt == WarmupFormat.json:
            output.echo(summary_json(found, shown, source), nl=False)
        else:
            output.echo(summary_text(found, shown, source), nl=False)
    raise typer.Exit(output.exit_code(None, None, True, problems))
