"""Output for the command line (the CLI layer, with ``cli.py``): print and write reports and
gate results, and talk to CI (GitHub step summary and annotations, JUnit XML files)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from recompile_cli.analysis.report import Report
from recompile_cli.errors import EXIT_GATE, EXIT_TARGET_RAISED, RecompileError
from recompile_cli.gate.evaluate import BudgetRow, Violation
from recompile_cli.render import guess_format, render
from recompile_cli.render.csv import render_files as csv_files
from recompile_cli.render.ci import annotations, gate_summary, junit_xml


def fail(exc: RecompileError) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


def write_text(path: Path, text: str, what: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        fail(RecompileError(f"Cannot write the {what} to {path}: {exc.strerror or exc}. Choose "
                            "a writable path."))


def emit_report(report: Report, fmt: str | None, output: Path | None, save: Path | None,
                show_all: bool) -> None:
    """Print the report (and write it to --output / --save); add it to the GitHub summary."""
    if save is not None:
        write_text(save, render(report, "json"), "session")
    if output is not None:
        file_format = fmt or guess_format(str(output)) or "json"
        if file_format == "csv" and (output.is_dir() or not output.suffix):  # a folder
            for name, text in csv_files(report).items():
                write_text(output / name, text, "CSV table")
        else:
            write_text(output, render(report, file_format, show_all), "report")
        typer.echo(render(report, "table", show_all), nl=False)
        typer.echo(f"Report written to {output} ({file_format}).")
    else:
        typer.echo(render(report, fmt or "table", show_all), nl=False)
    _step_summary(render(report, "markdown", show_all))


def emit_gate(rows: list[BudgetRow], violations: list[Violation], improvements: list[str],
              warnings: list[str], junit: Path | None, suite: str, markdown: bool = False
              ) -> bool:
    """Print the gate's results and CI outputs; True when every gate held."""
    every = [v for row in rows for v in row.violations] + violations
    typer.echo("")
    typer.echo(gate_summary(rows, violations, improvements, warnings, markdown), nl=False)
    if junit is not None:
        write_text(junit, junit_xml(rows, violations, suite), "JUnit XML")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in annotations(every):
            typer.echo(line)
    _step_summary(gate_summary(rows, violations, improvements, warnings, markdown=True))
    return not every


def finish(failure: str | None, gate_held: bool = True, interrupted: int | None = None) -> None:
    """Exit 130/143 if interrupted, 3 if the target raised, else 1 if a gate failed, else
    return (exit 0)."""
    if interrupted:
        typer.echo(f"recompile-cli: {failure}; the report above covers everything recorded "
                   "until then.", err=True)
        raise typer.Exit(interrupted)
    if failure:
        typer.echo(f"error: {failure.rstrip('.')}. The report above covers everything "
                   "recorded before the failure.", err=True)
        raise typer.Exit(EXIT_TARGET_RAISED)
    if not gate_held:
        raise typer.Exit(EXIT_GATE)


def progress_printer():
    """A progress display on stderr (calls done, compiles so far, elapsed) for terminals only."""
    import sys

    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, compiles: int, elapsed: float) -> None:
        width = 24
        filled = int(width * done / total) if total else width
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(f"\r[{bar}] calls {done}/{total}, {compiles} compiles, "
                         f"{elapsed:.1f} s elapsed")
        sys.stderr.flush()

    return show


def end_progress(progress) -> None:
    if progress is not None:
        import sys

        sys.stderr.write("\r\033[K")  # clear the progress line
        sys.stderr.flush()


def _step_summary(markdown: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        try:
            with open(path, "a") as summary:
                summary.write(markdown + "\n")
        except OSError:
            typer.echo(f"warning: cannot append to GITHUB_STEP_SUMMARY ({path})", err=True)
