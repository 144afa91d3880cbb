"""The command line: parse options, call the library, print, exit with a documented code.

This is the only module that prints. Exit codes: 0 ran, 1 a budget gate failed, 2 bad input,
3 the profiled target raised (the report of what was recorded is still printed and written).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import EXIT_BAD_INPUT, EXIT_TARGET_RAISED, RecompileError

app = typer.Typer(
    name="recompile-cli", no_args_is_help=True, add_completion=False,
    pretty_exceptions_show_locals=False,
    help="Find out which JAX functions re-trace and re-compile, why, and what it costs.")


class Format(str, Enum):
    table = "table"
    json = "json"


class HookMode(str, Enum):
    private = "private"
    public_only = "public-only"


FormatOption = Annotated[Optional[Format], typer.Option(
    "--format", "-f", help="Report format (default: table; inferred from --output's extension).")]
OutputOption = Annotated[Optional[Path], typer.Option(
    "--output", "-o", help="Also write the report to this file (.json -> JSON).")]
AllOption = Annotated[bool, typer.Option(
    "--all", help="List JAX- and library-internal functions and events too.")]
CacheOption = Annotated[Optional[Path], typer.Option(
    "--compilation-cache", help="Use JAX's persistent compilation cache in this folder and "
    "report hits, misses written and misses not written (below JAX's minimum compile time).")]
HookOption = Annotated[HookMode, typer.Option(
    "--hook-mode", help="'private' uses JAX's tracing internals for causes (falls back "
    "automatically); 'public-only' uses only the public jax.monitoring events.")]


@app.command()
def profile(
    target: Annotated[str, typer.Argument(
        help="The function: package.module:function, path/file.py:function, mod:Class.method.")],
    args: Annotated[Optional[Path], typer.Option(
        "--args", "-a", help="YAML spec of the calls to make (default: one call, no args).")] = None,
    static_argnames: Annotated[Optional[str], typer.Option(
        help="Comma-separated static argument names, for a plain (not jitted) target.")] = None,
    static_argnums: Annotated[Optional[str], typer.Option(
        help="Comma-separated static argument positions, for a plain target.")] = None,
    no_jit: Annotated[bool, typer.Option(
        "--no-jit", help="Call the target as it is; record only the jits inside it.")] = False,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Make the remaining calls after one raises.")] = False,
    fmt: FormatOption = None, output: OutputOption = None, show_all: AllOption = False,
    hook_mode: HookOption = HookMode.private, compilation_cache: CacheOption = None,
) -> None:
    """Call TARGET as the spec says, under the recorder, and report every trace and compile."""
    from . import loader, runner
    from .spec import Case, Spec, load_spec

    try:
        spec = load_spec(args) if args else Spec("", {}, (Case(0, "call 1", (), {}, "call 1"),))
        jit_options = dict(spec.jit_options)
        jit_options.update(_jit_flags(static_argnames, static_argnums))
        if compilation_cache:
            runner.use_compilation_cache(compilation_cache)
        found = loader.load_target(target)
        outcome = runner.profile(found, spec, jit_options, no_jit, keep_going,
                                 hook_mode.value)
    except RecompileError as exc:
        _fail(exc)
    _finish(outcome, fmt, output, show_all)


@app.command(context_settings={"allow_interspersed_args": False,
                               "ignore_unknown_options": True})
def run(
    script: Annotated[str, typer.Argument(help="The Python script to run as __main__.")],
    script_args: Annotated[Optional[list[str]], typer.Argument(
        help="Arguments passed to the script (sys.argv[1:]).")] = None,
    fmt: FormatOption = None, output: OutputOption = None, show_all: AllOption = False,
    hook_mode: HookOption = HookMode.private, compilation_cache: CacheOption = None,
) -> None:
    """Run SCRIPT like `python SCRIPT ARGS...` and report every trace and compile it caused."""
    from . import runner

    try:
        if compilation_cache:
            runner.use_compilation_cache(compilation_cache)
        outcome = runner.run_script(script, list(script_args or []), hook_mode.value)
    except RecompileError as exc:
        _fail(exc)
    _finish(outcome, fmt, output, show_all)


def _jit_flags(names: str | None, nums: str | None) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    if names:
        out["static_argnames"] = tuple(n.strip() for n in names.split(",") if n.strip())
    if nums:
        try:
            out["static_argnums"] = tuple(int(n) for n in nums.split(",") if n.strip())
        except ValueError:
            raise RecompileError(f"--static-argnums takes comma-separated integers, got "
                                 f"{nums!r}.") from None
    return out


def _finish(outcome, fmt: Format | None, output: Path | None, show_all: bool) -> None:
    from .analysis import analyse
    from .render import guess_format, render

    report = analyse(outcome.session)
    if output is not None:
        file_format = fmt.value if fmt else (guess_format(str(output)) or "json")
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(render(report, file_format, show_all))
        except OSError as exc:
            typer.echo(render(report, "table", show_all))
            _fail(RecompileError(f"Cannot write the report to {output}: {exc.strerror or exc}. "
                                 "Choose a writable path with --output."))
        typer.echo(render(report, "table", show_all))
        typer.echo(f"Report written to {output} ({file_format}).")
    else:
        typer.echo(render(report, fmt.value if fmt else "table", show_all), nl=False)
    if outcome.failure:
        typer.echo(f"error: {outcome.failure.rstrip('.')}. The report above covers everything "
                   "recorded before the failure.", err=True)
        raise typer.Exit(EXIT_TARGET_RAISED)


def _fail(exc: RecompileError) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(getattr(exc, "exit_code", EXIT_BAD_INPUT))


def main() -> None:
    app(prog_name="recompile-cli")
