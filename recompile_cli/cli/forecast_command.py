"""``recompile-cli forecast TARGET --args SPEC.yaml``: the compiles a workload will need, and
which a warm-up misses, found by tracing on abstract arguments before anything runs.

Registered on the application in ``cli.app``; it validates the specs, traces the calls in the
measured process (``process.child``, supervised like ``profile``), and hands the predicted
session to the same report, save and gate path as ``profile`` (``cli.finish``), so the formats,
``--max-compiles``, ``--fail-on``, baselines and exit codes are ``profile``'s: 0, 1 when a gate
fails, 2 for bad input, 3 when a call's trace raised or the process did not finish.
``--emit-warmup`` also writes the forecast's warm-up plan (``render.warmup_plan``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recompile_cli.cli import finish, options_cli, output
from recompile_cli.cli.options_cli import (
    AllOption,
    BaselineOption,
    FailOnOption,
    FormatOption,
    HookOption,
    JunitOption,
    MaxArrayOption,
    MaxCallsOption,
    MaxCompilesOption,
    OutputOption,
    QuietOption,
    SaveBaselineOption,
    SaveOption,
    StaticArgnamesOption,
    StaticArgnumsOption,
    TimeoutOption,
    spec_of,
)
from recompile_cli.cli.output import Problems, user_errors
from recompile_cli.session.kinds import HookMode

if TYPE_CHECKING:
    from recompile_cli.session.model import Session


def forecast(
    target: Annotated[str, typer.Argument(
        help="The function: package.module:function, path/file.py:function, "
        "mod:Class.method.")],
    args: Annotated[Path | None, typer.Option(
        "--args", "-a", parser=output.path_option, metavar="PATH",
        help="YAML spec of the workload's calls (default: one call, no args).")] = None,
    warmup: Annotated[Path | None, typer.Option(
        "--warmup", parser=output.path_option, metavar="PATH",
        help="YAML spec of warm-up calls made first: the report lists each signature of the "
        "workload they do not cover (it compiles at run time).")] = None,
    lower: Annotated[bool, typer.Option(
        "--lower", help="Also lower each new signature to StableHLO (measured; still no "
        "compile), as jit's lowering cache keys it.")] = False,
    static_argnames: StaticArgnamesOption = None, static_argnums: StaticArgnumsOption = None,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Trace the remaining calls after one raises.")] = False,
    fmt: FormatOption = None, output_path: OutputOption = None,
    save: SaveOption = None, show_all: AllOption = False,
    hook_mode: HookOption = HookMode.PRIVATE,
    max_compiles: MaxCompilesOption = None, fail_on: FailOnOption = None,
    save_baseline: SaveBaselineOption = None,
    baseline: BaselineOption = None, junit_xml: JunitOption = None,
    max_array_bytes: MaxArrayOption = None, max_calls: MaxCallsOption = None,
    quiet: QuietOption = False, timeout: TimeoutOption = None,
    emit_warmup: Annotated[Path | None, typer.Option(
        "--emit-warmup", parser=output.path_option, metavar="PLAN.py",
        help="Also write a warm-up plan of every predicted compile (as `recompile-cli warmup` "
        "does from a run); implies --lower, so that each argument's placement is known.")
    ] = None,
) -> None:
    """Predict every compile of TARGET over the spec's calls without running or compiling
    anything: arrays become jax.ShapeDtypeStruct, and each call is traced with
    jit(f).trace()."""
    from recompile_cli.inputs.spec import check_calls
    from recompile_cli.process.job import Job

    with user_errors():
        request = finish.request(fmt, output_path, save, show_all, max_compiles, fail_on,
                                 baseline, save_baseline, junit_xml, None)
        plan_to = output.absolute(emit_warmup)
        output.check_writable(plan_to, "--emit-warmup")
        spec = spec_of(args, max_array_bytes, max_calls)
        warm = spec_of(warmup, max_array_bytes, max_calls, "--warmup") if warmup else None
        if warm is not None:
            check_calls({"--warmup": warm, "--args": spec},
                        **({} if max_calls is None else {"max_calls": max_calls}))
        job = Job(kind="forecast", target=target, spec=spec.path or None,
                  warmup=warm.path if warm is not None else None,
                  max_array_bytes=max_array_bytes, max_calls=max_calls,
                  jit_options=options_cli.jit_options(spec, static_argnames, static_argnums),
                  lower=lower or plan_to is not None, keep_going=keep_going,
                  hook_mode=hook_mode.value)
        outcome = finish.supervised(job, quiet=quiet, timeout=options_cli.run_timeout(timeout),
                                    stdout_to_stderr=request.files.machine_readable)
    if plan_to is not None:
        _emit_plan(outcome.session, plan_to, target)
    finish.finish(outcome, request)


def _emit_plan(session: Session, to: Path, target: str) -> None:
    """Write the forecast's warm-up plan and say so on stderr (stdout is the report's)."""
    from recompile_cli.analysis.warmup.plan import plan
    from recompile_cli.render.warmup_plan import render_plan, summary_text

    found = plan(session)
    text = render_plan(found, f"forecast {target}", folder=str(to.parent), name=to.name)
    if output.write_file(to, text, "warm-up plan", Problems()):
        output.message(summary_text(found, output.shown_path(to), f"forecast {target}")
                       .rstrip("\n"))
