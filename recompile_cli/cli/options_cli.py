"""The command-line options that several commands share (``profile``, ``run``, ``check``,
``forecast``, ``report``), as ``typer`` annotations, and the parsing of the option texts they
share (the ``--args`` spec with its limits, ``--static-argnames`` / ``--static-argnums``).
The groups commands take them in are ``cli.option_groups``'; the gate limits are
``gate.limits``'.

Only definitions: the commands are ``cli.app``'s (and ``cli.forecast_command``'s); the values
are validated through ``recompile_cli.options``, and a bad one is a ``RecompileError`` (exit 2).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recompile_cli import options, ranges
from recompile_cli.cli import output
from recompile_cli.errors import RecompileError
from recompile_cli.render import FORMATS, extensions_text
from recompile_cli.session.kinds import HookMode

if TYPE_CHECKING:
    from recompile_cli.inputs.spec import Spec

    class Format(enum.StrEnum):
        """The report formats; mypy cannot see members made from ``FORMATS`` at run time."""
else:
    Format = enum.Enum("Format", [(name, name) for name in FORMATS], type=str)


class GateFormat(enum.StrEnum):
    table = "table"
    markdown = "markdown"


class DiffFormat(enum.StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


FormatOption = Annotated[Format | None, typer.Option(
    "--format", "-f", help="Report format on stdout (default: table). With --output, the "
    "file's format (default: from its extension).")]
OutputOption = Annotated[Path | None, typer.Option(
    "--output", "-o", parser=output.path_option, metavar="PATH",
    help=f"Also write the report to this file ({extensions_text()}); with csv, a folder gets "
    "functions.csv, events.csv, causes.csv, compile_cost.csv and slow_calls.csv.")]
SaveOption = Annotated[Path | None, typer.Option(
    "--save", parser=output.path_option, metavar="PATH",
    help="Save the session as JSON, to render later with `recompile-cli report`.")]
AllOption = Annotated[bool, typer.Option(
    "--all", help="List JAX- and library-internal functions and events too.")]
CacheOption = Annotated[Path | None, typer.Option(
    "--compilation-cache", parser=output.folder_option, metavar="FOLDER",
    help="Use JAX's persistent compilation cache in this folder and report hits, misses "
    "written and misses not written (below JAX's minimum compile time).")]
HookOption = Annotated[HookMode, typer.Option(
    "--hook-mode", help="'private' uses JAX's tracing internals for causes (falls back "
    "automatically); 'public-only' uses only the public jax.monitoring events.")]
SaveBaselineOption = Annotated[Path | None, typer.Option(
    "--save-baseline", parser=output.path_option, metavar="PATH",
    help="Write per-function compile counts to this baseline file.")]
BaselineOption = Annotated[Path | None, typer.Option(
    "--baseline", parser=output.path_option, metavar="PATH",
    help="Gate: exit 1 on more compiles than this baseline, or a new function that compiles.")]
CompileRegressionOption = Annotated[float | None, typer.Option(
    "--fail-on-compile-regression", parser=lambda text: percent_option(
        text, "--fail-on-compile-regression"), metavar="PCT",
    help="Gate, with --baseline: exit 1 where a function's largest program's jaxpr equations "
    "(exact) or its compile seconds (noisy: growth under 0.25 s never counts) grew by more "
    f"than PCT percent (0 to {ranges.MAX_PERCENT:,.0f}).")]
EventsLogOption = Annotated[Path | None, typer.Option(
    "--events-log", parser=output.path_option, metavar="PATH",
    help="Append every event to this JSON-lines file as it happens (flushed), "
    "so a killed run still leaves everything recorded; read it with `recompile-cli report`.")]
QuietOption = Annotated[bool, typer.Option(
    "--quiet", "-q", help="No live status line on the terminal while the run goes on.")]
TimeoutOption = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS", help="Stop the target (SIGTERM, then SIGKILL 5 s later) if "
    "it runs longer, report what it recorded, and exit 3.")]
JunitOption = Annotated[Path | None, typer.Option(
    "--junit-xml", parser=output.path_option, metavar="PATH",
    help="Write the gate results as JUnit XML (one test case per function).")]
StrictOption = Annotated[bool, typer.Option(
    "--strict", help="Gate: a budget that matches no recorded function fails (else warns).")]
MaxArrayOption = Annotated[int | None, typer.Option(
    "--max-array-bytes", min=1, max=ranges.MAX_BYTES,
    help="Refuse spec arrays larger than this (default 4 GiB).")]
MaxCallsOption = Annotated[int | None, typer.Option(
    "--max-calls", min=1, max=ranges.MAX_CALLS, help="Refuse specs that make more calls than "
    f"this (default 100,000, at most {ranges.MAX_CALLS:,}); with --warmup, the two specs' "
    "calls together.")]
AfterWarmupOption = Annotated[Path | None, typer.Option(
    "--after-warmup", metavar="PLAN.py", help="Run this warm-up plan (recompile-cli warmup) "
    "first, then the workload; gate: exit 1 on any compile of your functions after it, naming "
    "the signature the plan lacks.")]
WarmupParallelOption = Annotated[int | None, typer.Option(
    "--warmup-parallel", min=1, max=ranges.MAX_THREADS, metavar="N", help="With "
    "--after-warmup: compile the plan's signatures N at a time in threads (its "
    f"warm_up(parallel=N); at most {ranges.MAX_THREADS:,}).")]
StaticArgnamesOption = Annotated[str | None, typer.Option(
    help="Comma-separated static argument names, for a plain (not jitted) target.")]
StaticArgnumsOption = Annotated[str | None, typer.Option(
    help="Comma-separated static argument positions, for a plain target.")]


def run_timeout(seconds: float | None) -> float | None:
    """``--timeout``: a number of seconds above 0, at most thirty days (exit 2 otherwise)."""
    if seconds is None:
        return None
    try:
        return options.seconds(seconds, "--timeout", options.MAX_RUN_TIMEOUT, "thirty days")
    except (TypeError, ValueError) as exc:
        raise RecompileError(f"{exc}.") from None


def cache_folder(path: Path | None) -> str | None:
    """``--compilation-cache``: the folder, resolved against the starting folder."""
    found = output.absolute(path)
    return None if found is None else str(found)


def percent_option(text: str, option: str) -> float:
    """The parser of a percentage option: a finite number from 0 to ``ranges.MAX_PERCENT``
    (``inf``, ``nan`` and ``1e309`` are usage errors, exit 2, naming the option)."""
    try:
        return options.percent(float(text), option)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a percentage: use a finite number from 0 to "
            f"{ranges.MAX_PERCENT:,.0f} (an infinite one would make a gate that can never "
            "fail).") from None


def spec_of(path: Path | None, max_array_bytes: int | None, max_calls: int | None,
            option: str = "--args") -> Spec:
    """The spec file given with ``option`` (resolved against the starting folder, within
    --max-array-bytes / --max-calls when given), or one call without arguments."""
    from recompile_cli.inputs.spec import load_spec, single_call  # PyYAML (keeps --help light)

    absolute = output.absolute(path)
    if absolute is None:
        return single_call()
    limits = {k: v for k, v in (("max_array_bytes", max_array_bytes),
                                ("max_calls", max_calls)) if v is not None}
    return load_spec(absolute, **limits, option=option)


def jit_options(spec: Spec, names: str | None, nums: str | None) -> dict[str, Any]:
    """The spec's jit options, then --static-argnames / --static-argnums over them."""
    out: dict[str, Any] = dict(spec.jit_options)
    out.update(jit_flags(names, nums))
    return out


def jit_flags(names: str | None, nums: str | None) -> dict[str, tuple[Any, ...]]:
    """``--static-argnames`` / ``--static-argnums`` as jit's keyword arguments."""
    out: dict[str, tuple[Any, ...]] = {}
    if names:
        out["static_argnames"] = tuple(n.strip() for n in names.split(",") if n.strip())
    if nums:
        try:
            out["static_argnums"] = tuple(int(n) for n in nums.split(",") if n.strip())
        except ValueError:
            raise RecompileError(f"--static-argnums takes comma-separated integers, got "
                                 f"{nums!r}.") from None
    return out


def warmup_plan(plan: Path | None, parallel: int | None) -> str | None:
    """``--after-warmup``'s plan as an absolute path, checked before anything runs
    (``capture.running.warmup.check_plan``); ``--warmup-parallel`` alone is a usage error."""
    if plan is None:
        if parallel is not None:
            raise RecompileError("--warmup-parallel is how many threads --after-warmup's plan "
                                 "compiles in: pass --after-warmup PLAN.py too, or leave "
                                 "--warmup-parallel out.")
        return None
    from recompile_cli.capture.running.warmup import check_plan  # only with --after-warmup

    absolute = output.absolute(plan)
    assert absolute is not None
    return str(check_plan(absolute))
