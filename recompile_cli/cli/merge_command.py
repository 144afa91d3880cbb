"""``recompile-cli merge REPORT...``: one report from the per-process reports of a
multi-process JAX job, its divergence section, and the ``--fail-on-divergence`` gate.

Registered on the application in ``cli.app``; like the other commands it validates its inputs,
calls the library (``analysis.hosts.merge``, ``analysis.hosts.divergence``), and prints through
``output``. Exit codes: 0, 1 when ``--fail-on-divergence`` finds a divergence, 2 for bad input
or an output that could not be written.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from recompile_cli.cli import collisions, output
from recompile_cli.cli.output import Problems
from recompile_cli.errors import RecompileError
from recompile_cli.render import extensions_text, guess_format


class MergeFormat(enum.StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


_FORMATS = [f.value for f in MergeFormat]


def merge(
    reports: Annotated[list[Path], typer.Argument(
        metavar="REPORT...", show_default=False, help="The reports each process saved "
        "(--save or --output FILE.json, --events-log), or merged sessions.")],
    fmt: Annotated[MergeFormat | None, typer.Option(
        "--format", "-f", help="Report format on stdout (default: table). With --output, the "
        "file's format (default: from its extension).")] = None,
    output_path: Annotated[Path | None, typer.Option(
        "--output", "-o", parser=output.path_option, metavar="PATH",
        help="Also write the merge report to this file (.json, .md, .txt).")
    ] = None,
    save: Annotated[Path | None, typer.Option(
        "--save", parser=output.path_option, metavar="PATH", help="Save the merged session "
        "(every event tagged with its process), to render with `recompile-cli report` or merge "
        "again.")] = None,
    fail_on_divergence: Annotated[bool, typer.Option(
        "--fail-on-divergence", help="Gate: exit 1 when processes compile differently (the "
        "same signature lowered to different programs included).")
    ] = False,
) -> None:
    """Merge the reports of the processes of one multi-process JAX job and show where they
    compile differently (compile counts, signatures, causes, the same signature lowered to
    different programs), call by call."""
    # the analysis, its renderers and the session reader only for this command (--help light)
    from recompile_cli.analysis.hosts.divergence import compare
    from recompile_cli.analysis.hosts.merge import merge_reports
    from recompile_cli.render.merged import render as render_merged
    from recompile_cli.render.sections import cache_keys
    from recompile_cli.session.files import load_session

    def render(merged: Any, comparison: Any, fmt: str) -> str:
        """The merge report in ``fmt``, with why the processes' cache keys differ."""
        return cache_keys.merged_text(render_merged(merged, comparison, fmt), merged.session,
                                      fmt)

    problems = Problems()
    with output.user_errors():
        to = output.absolute(output_path)
        save_to = output.absolute(save)
        file_format = _file_format(fmt, to)
        output.check_writable(to, "--output")
        output.check_writable(save_to, "--save")
        _check_distinct_files(reports)
        output.take_stdout(collisions.check(
            [collisions.Use("--output", to), collisions.Use("--save", save_to),
             *(collisions.Use("REPORTS", output.absolute(path), writes=False)
               for path in reports)],
            report_on_stdout=to is None and fmt not in (None, MergeFormat.table)))
        merged = merge_reports([(str(path), load_session(path)) for path in reports])
    comparison = compare(merged.parts)
    output.write_session(merged.session, save_to, problems)
    if to is not None and file_format is not None:
        written = output.write_file(to, render(merged, comparison, file_format),
                                    "merge report", problems)
        output.echo(render(merged, comparison, "table"), nl=False)
        if written:
            output.echo(f"Report written to {to} ({file_format}).")
    else:
        output.echo(render(merged, comparison, fmt.value if fmt else "table"), nl=False)
    diverged = bool(comparison.divergences)
    raise typer.Exit(output.exit_code(None, None, not (fail_on_divergence and diverged),
                                      problems))


def _check_distinct_files(reports: list[Path]) -> None:
    """One file named twice (``g.json ./g.json``, a symlink, a hard link) is refused; copies
    are found by content in ``analysis.hosts.merge``."""
    seen: dict[object, Path] = {}
    for path in reports:
        try:
            info = os.stat(path)
            key: object = (info.st_dev, info.st_ino)
        except OSError:  # load_session reports what is wrong with it
            key = os.path.realpath(path)
        if key in seen:
            raise RecompileError(f"{seen[key]} and {path} are the same file. Pass each "
                                 "process's report once.")
        seen[key] = path


def _file_format(fmt: MergeFormat | None, path: Path | None) -> str | None:
    if path is None:
        return None
    found = fmt.value if fmt else guess_format(str(path), among=_FORMATS)
    if found is None:
        raise RecompileError(f"--output {path}: cannot tell the format from the name. Give the "
                             f"file an extension ({extensions_text(_FORMATS)}) or pass --format.")
    return found
