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

from recompile_cli.cli import collisions, finish, options_cli, output
from recompile_cli.cli.collisions import Use
from recompile_cli.cli.option_groups import (
    BaselineOptions,
    Limits,
    ReportOptions,
    Running,
    SpecOptions,
    grouped,
)
from recompile_cli.cli.options_cli import spec_of
from recompile_cli.cli.output import Problems, user_errors
from recompile_cli.errors import RecompileError

if TYPE_CHECKING:
    from recompile_cli.session.model import Session


@grouped
def forecast(
    target: Annotated[str, typer.Argument(
        help="The function: package.module:function, path/file.py:function, "
        "mod:Class.method.")],
    *,
    spec: SpecOptions,
    warmup: Annotated[Path | None, typer.Option(
        "--warmup", parser=output.path_option, metavar="PATH",
        help="YAML spec of warm-up calls made first: the report lists each signature of the "
        "workload they do not cover (it compiles at run time).")] = None,
    lower: Annotated[bool, typer.Option(
        "--lower", help="Also lower each new signature to StableHLO (measured; still no "
        "compile), as jit's lowering cache keys it.")] = False,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Trace the remaining calls after one raises.")] = False,
    emit_warmup: Annotated[Path | None, typer.Option(
        "--emit-warmup", parser=output.path_option, metavar="PLAN.py",
        help="Also write a warm-up plan of every predicted compile (as `recompile-cli warmup` "
        "does from a run); implies --lower, so that each argument's placement is known.")
    ] = None,
    report: ReportOptions, baselines: BaselineOptions, running: Running, limits: Limits,
) -> None:
    """Predict every compile of TARGET over the spec's calls without running or compiling
    anything: arrays become jax.ShapeDtypeStruct, and each call is traced with
    jit(f).trace()."""
    # the spec's and the job's imports only for a forecast (keeps --help light)
    from recompile_cli.inputs.spec import check_calls
    from recompile_cli.process.job import Job

    with user_errors():
        plan_to = output.absolute(emit_warmup)
        request = finish.request(report, baselines, limits, uses=[
            Use("--emit-warmup", plan_to), Use("--args", output.absolute(spec.args), False),
            Use("--warmup", output.absolute(warmup), False), collisions.target_file(target)])
        output.check_writable(plan_to, "--emit-warmup")
        calls = spec_of(spec.args, spec.max_array_bytes, spec.max_calls)
        warm = (spec_of(warmup, spec.max_array_bytes, spec.max_calls, "--warmup") if warmup
                else None)
        if warm is not None:
            check_calls({"--warmup": warm, "--args": calls},
                        **({} if spec.max_calls is None else {"max_calls": spec.max_calls}))
        job = Job(kind="forecast", target=target, spec=calls.path or None,
                  warmup=warm.path if warm is not None else None,
                  max_array_bytes=spec.max_array_bytes, max_calls=spec.max_calls,
                  jit_options=options_cli.jit_options(calls, spec.static_argnames,
                                                      spec.static_argnums),
                  lower=lower or plan_to is not None, keep_going=keep_going,
                  hook_mode=running.hook_mode.value)
        outcome = finish.supervised(job, quiet=running.quiet,
                                    timeout=options_cli.run_timeout(running.timeout),
                                    stdout_to_stderr=request.stdout_is_taken)
    problems = Problems()
    if plan_to is not None:
        _emit_plan(outcome.session, plan_to, target, problems)
    finish.finish(outcome, request, problems)


def _emit_plan(session: Session, to: Path, target: str, problems: Problems) -> None:
    """Write the forecast's warm-up plan and say so on stderr (stdout is the report's); a plan
    that cannot be written (a file outside the project) is a problem of ``problems`` (exit 2
    once the report is out), never a traceback."""
    # the plan's analysis and writer only with --emit-warmup
    from recompile_cli.analysis.warmup.plan import plan
    from recompile_cli.render.warmup_plan import render_plan, summary_text

    found = plan(session)
    try:
        text = render_plan(found, f"forecast {target}", folder=str(to.parent), name=to.name)
    except RecompileError as exc:
        problems.messages.append(str(exc))
        output.message(f"error: {exc}")
        return
    if output.write_file(to, text, "warm-up plan", problems):
        output.message(summary_text(found, output.shown_path(to), f"forecast {target}")
                       .rstrip("\n"))
