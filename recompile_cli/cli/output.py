"""Output of the command line: the report and the gate on the terminal, the files they are
written to, CI's extras (GitHub step summary and annotations, JUnit XML), and the reason for
the exit code (``exits`` decides the code).

The only module, with ``app``, that prints. Files are written by ``fileio``: atomically, and
through links to what they point at, as a shell redirection writes; a file that cannot be
written is reported and the other outputs are still produced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from recompile_cli import exits
from recompile_cli.capture.hosts import process
from recompile_cli.cli import collisions
from recompile_cli.errors import RecompileError
from recompile_cli.fileio import atomic_write_text, target
from recompile_cli.render import escape, extensions_text, guess_format, render
from recompile_cli.session.locations import relative
from recompile_cli.session.model import NO_BACKEND

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report
    from recompile_cli.gate.evaluate import GateResult
    from recompile_cli.session.model import Environment, Session


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """Where a run's report goes: ``--format``, ``--output``, ``--save``, ``--all``."""

    fmt: str | None = None
    output: Path | None = None
    save: Path | None = None
    show_all: bool = False

    @property
    def machine_readable(self) -> bool:
        """Whether stdout gets the report in a format for tools (``-f json`` and no
        ``--output``): the target's own output then goes to stderr, so the two never mix."""
        return self.output is None and self.fmt not in (None, "table")


@dataclass
class Problems:
    """Files that could not be written; they make the exit code 2 unless a worse one applies."""

    messages: list[str] = field(default_factory=list)


class _Stdout:
    """Whether an output file is this process's stdout (``cli.collisions``): it is written
    through stdout, and everything else this command would print there goes to stderr."""

    taken: str | None = None  # the option whose file stdout is


def take_stdout(option: str | None) -> None:
    """Set (or, with None, clear) the output written through stdout for this command."""
    _Stdout.taken = option


def echo(text: str, err: bool = False, nl: bool = True, csv: bool = False) -> None:
    """Print ``text``, which may quote the program's names and values (``render.escape``'s
    policy): no line of it starts a GitHub workflow command, and CSV shown on a terminal (or
    in GitHub Actions' log) has its control characters escaped; redirected, it stays exact.
    On stderr when an output file is stdout (``take_stdout``)."""
    err = err or _Stdout.taken is not None
    if csv and ((sys.stderr if err else sys.stdout).isatty()
                or os.environ.get("GITHUB_ACTIONS") == "true"):
        text = escape.terminal_lines(text)
    typer.echo(escape.no_workflow_commands(text, csv), err=err, nl=nl)


def message(text: str) -> None:
    """A message of the tool's own on stderr, quoting user data: control characters (an ESC
    of a target's error message) shown as escapes, no workflow command."""
    echo(escape.terminal_lines(text), err=True)


def fail(exc: RecompileError) -> None:
    """Print the one-paragraph error and exit with its code."""
    message(f"error: {exc}")
    raise typer.Exit(exc.exit_code)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """The one place a ``RecompileError`` becomes its message and exit code (and Ctrl-C or
    SIGTERM before anything was recorded, 130 or 143)."""
    try:
        yield
    except RecompileError as exc:
        fail(exc)
    except exits.INTERRUPTIONS as exc:
        code = exits.interruption_code(exc)
        typer.echo(f"recompile-cli: {exits.interruption_text(code)}.", err=True)
        raise typer.Exit(code) from None


def absolute(path: Path | None) -> Path | None:
    """``path`` resolved against the folder the command started in (before any target runs,
    so that a script calling ``os.chdir`` cannot move the outputs)."""
    return None if path is None else Path(os.path.abspath(path))


def shown_path(path: Path) -> str:
    """``path`` as the outputs show it: relative to the working folder when below it."""
    return relative(str(path)) or str(path)


def for_process(path: Path | None, environment: Environment | None) -> Path | None:
    """``path`` with ``{process}`` and ``{host}`` filled in: from the recorded ``environment``
    (after the run; this process never asks JAX, it has not imported it), else from the
    launcher's variables (``capture.hosts.process.output_path``)."""
    if path is None or ("{process}" not in str(path) and "{host}" not in str(path)):
        return path
    index = host = None
    if environment is not None:
        index, host = environment.process_index, environment.host
        if index is None and environment.backend != NO_BACKEND:
            index = 0  # the backend ran and the process is not one of a multi-process job
    return process.output_path(path, index, host)


def files_for_process(files: ReportFiles, environment: Environment) -> ReportFiles:
    """``--output`` and ``--save`` with ``{process}`` and ``{host}`` filled in."""
    return dataclasses.replace(files, output=for_process(files.output, environment),
                               save=for_process(files.save, environment))


def path_option(value: str) -> Path:
    """The parser of every file-path option (``parser=`` of ``typer.Option``): an empty path,
    which would quietly mean the current folder, is a usage error (exit 2) naming the option."""
    if not value.strip():
        raise typer.BadParameter("the path is empty. Name a file.")
    return Path(value)


def folder_option(value: str) -> Path:
    """The parser of a folder option (``--compilation-cache``): an empty path or an existing
    file is a usage error (exit 2) naming the option, before anything runs."""
    if not value.strip():
        raise typer.BadParameter("the path is empty. Name a folder.")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise typer.BadParameter(f"{value} is a file, not a folder. Name a folder (it is "
                                 "made if it does not exist).")
    return path


def check_writable(path: Path | None, option: str, folder_ok: bool = False) -> None:
    """Fail before the run when ``path`` could not be written afterwards: the first of its
    folders that exists must be a writable folder (the missing ones are made when it is
    written), and ``path`` must not be a folder unless ``folder_ok`` (``--output`` takes one
    for CSV). Every command that writes files checks its paths here."""
    if path is None:
        return
    if path.is_dir() and not folder_ok:
        raise RecompileError(f"{option} {shown_path(path)}: it is a folder. Name a file in it.")
    try:
        real = target(path)  # what is written: a link's target (fileio writes through links)
    except OSError as exc:
        raise RecompileError(f"{option} {shown_path(path)}: {exc.strerror or exc}. Name a file, "
                             "or a link to one.") from None
    if real is None:  # a process's open file (/dev/stdout): written in place
        return
    folder = real.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if folder.exists() and not folder.is_dir():
        raise RecompileError(f"{option} {shown_path(path)}: {shown_path(folder)} is a file, "
                             "not a folder. Choose a path in a folder.")
    if not os.access(folder, os.W_OK):
        raise RecompileError(f"{option} {shown_path(path)}: the folder {shown_path(folder)} is "
                             "not writable. Choose a writable path.")


def check_report_files(files: ReportFiles) -> None:
    """``--output`` (its format known, a folder only for CSV tables) and ``--save`` checked
    before the run."""
    if files.output is not None:
        check_writable(files.output, "--output", folder_ok=output_format(files) == "csv")
    check_writable(files.save, "--save")


def output_format(files: ReportFiles) -> str:
    """The format ``--output`` is written in: ``--format``, else the file's extension, else CSV
    tables for an existing folder. Raises ``RecompileError`` when none of these says."""

    assert files.output is not None
    found = files.fmt or guess_format(str(files.output))
    if found is None and files.output.is_dir():
        found = "csv"
    if found is None:
        raise RecompileError(
            f"--output {shown_path(files.output)}: cannot tell the format from the name. Give "
            f"the file an extension ({extensions_text()}), pass --format, or name an "
            "existing folder to get the CSV tables in it.")
    return found


def write_file(path: Path, text: str, what: str, problems: Problems) -> bool:
    try:
        if _Stdout.taken is not None and collisions.identity(path) == collisions.stdout_identity():
            sys.stdout.write(text)  # through the stream, at its place: never reopened at 0
            sys.stdout.flush()
        else:
            atomic_write_text(path, text)
        return True
    except OSError as exc:
        reason = (f"cannot write the {what} to {shown_path(path)}: {exc.strerror or exc}; the "
                  "rest of the report was still printed and written")
        problems.messages.append(reason)
        message(f"error: {reason}.")
        return False


def emit_report(report: Report, files: ReportFiles, problems: Problems) -> None:
    """Print the report, write ``--output``, and add it to the GitHub summary.

    Each format is rendered once; the terminal shows the table when the report goes to a file.
    """

    rendered: dict[str, str] = {}

    def text(fmt: str) -> str:
        if fmt not in rendered:
            rendered[fmt] = render(report, fmt, files.show_all)
        return rendered[fmt]

    if files.output is not None:
        file_format = output_format(files)
        if file_format == "csv" and (files.output.is_dir() or not files.output.suffix):
            from recompile_cli.render.csv import render_files as csv_files  # loads pandas

            written = all([write_file(files.output / name, content, "CSV table", problems)
                           for name, content in csv_files(report).items()])
        else:
            written = write_file(files.output, text(file_format), "report", problems)
        echo(text("table"), nl=False)
        if written:
            echo(f"Report written to {shown_path(files.output)} ({file_format}).")
    else:
        echo(text(files.fmt or "table"), nl=False, csv=files.fmt == "csv")
    _step_summary(lambda: text("markdown"))


def write_session(session: Session, path: Path | None, problems: Problems) -> None:
    """``--save``: the session alone, written before any analysis, so that nothing recorded is
    lost whatever happens next."""
    from recompile_cli.session.files import session_text  # the codec only to save (--help)

    if path is not None:
        write_file(path, session_text(session), "session", problems)


def emit_gate(result: GateResult, junit: Path | None, suite: str, problems: Problems,
              markdown: bool = False) -> None:
    """Print the gate's results (when there are any) and write its CI outputs."""
    # tabulate and the gate's renderers only for a gated run (keeps --help light)
    from recompile_cli.render.ci import gate_summary, github_annotations, junit_xml

    if not result.empty:
        echo("")
        echo(gate_summary(result, markdown), nl=False)
    if junit is not None:
        write_file(junit, junit_xml(result, suite), "JUnit XML", problems)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(result.every_violation, result.errors):
            typer.echo(line, err=_Stdout.taken is not None)
    if not result.empty:
        _step_summary(lambda: gate_summary(result, markdown=True))


def exit_code(failure: str | None, interrupted: exits.ExitCode | None, gate_held: bool,
              problems: Problems) -> exits.ExitCode:
    """The exit code (``exits.exit_code``), with its reason on stderr when it is an
    interruption or the target's failure."""
    if interrupted is not None:
        reason = failure or exits.interruption_text(interrupted)
        message(f"recompile-cli: {reason}; the report above covers everything recorded "
                "until then.")
    elif failure:
        message(f"error: {failure.rstrip('.')}. The report above covers everything "
                "recorded before the failure.")
    return exits.exit_code(interrupted=interrupted, failed=bool(failure),
                           unwritten=bool(problems.messages), gate_held=gate_held)


def wants_live_line(quiet: bool) -> bool:
    """Whether a run shows the live status line (``cli.live``) on stderr: a terminal, outside
    CI (``CI`` or ``GITHUB_ACTIONS`` set), not a ``dumb`` one, and not under ``--quiet``."""
    if quiet or os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _step_summary(markdown: Callable[[], str]) -> None:
    """Append to GitHub's step summary, rendering the Markdown only when there is one."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(markdown() + "\n")
    except OSError:
        typer.echo(f"warning: cannot append to GITHUB_STEP_SUMMARY ({path})", err=True)
