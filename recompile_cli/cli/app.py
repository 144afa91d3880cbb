"""The commands: validate every input, call the library, hand the results to ``output``, exit.

Exit codes and signals are ``exits``'s; ``output.user_errors`` is the one place that turns a
``RecompileError`` or an interruption into its message and exit code. Heavy modules (JAX,
pandas) are imported inside the commands that need them, so ``--help`` stays fast. The shared
options are ``options_cli``'s; validating a run's report options and finishing a run (report,
gates, exit code) are ``finish``'s; ``merge`` and ``forecast`` live in modules of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from recompile_cli import exits, options
from recompile_cli.cli import (
    collisions,
    finish,
    forecast_command,
    help_format,
    merge_command,
    options_cli,
    output,
    warmup_command,
)
from recompile_cli.cli.option_groups import (
    BaselineOptions,
    Limits,
    Recording,
    ReportOptions,
    Running,
    SpecOptions,
    grouped,
)
from recompile_cli.cli.options_cli import (
    AllOption,
    DiffFormat,
    FormatOption,
    GateFormat,
    OutputOption,
    StrictOption,
    spec_of,
)
from recompile_cli.cli.output import Problems, ReportFiles, user_errors
from recompile_cli.errors import RecompileError

app = typer.Typer(
    name="recompile-cli", no_args_is_help=True, add_completion=False,
    rich_markup_mode=None, pretty_exceptions_enable=False,
    cls=help_format.ReadableGroup, context_settings=help_format.CONTEXT_SETTINGS,
    help="Find out which JAX functions re-trace and re-compile, why, and what it costs.")
app.callback()(help_format.root)  # --version

@app.command()
@grouped
def profile(
    target: Annotated[str, typer.Argument(
        help="The function: package.module:function, path/file.py:function, mod:Class.method.")],
    *,
    spec: SpecOptions,
    no_jit: Annotated[bool, typer.Option(
        "--no-jit", help="Call the target as it is; record only the jits inside it.")] = False,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Make the remaining calls after one raises.")] = False,
    report: ReportOptions, baselines: BaselineOptions, running: Running, recording: Recording,
    limits: Limits,
) -> None:
    """Call TARGET as the spec says, in a process of its own under the recorder, and report
    every trace and compile."""
    from recompile_cli.process.job import Job  # the job's imports only for a run

    with user_errors():
        request = finish.request(report, baselines, limits, events_log=recording.events_log,
                                 after_warmup=recording.after_warmup,
                                 uses=[collisions.Use("--args", output.absolute(spec.args),
                                                      writes=False),
                                       collisions.target_file(target)])
        plan = options_cli.warmup_plan(recording.after_warmup, recording.warmup_parallel)
        calls = spec_of(spec.args, spec.max_array_bytes, spec.max_calls)
        job = Job(kind="profile", target=target, spec=calls.path or None,
                  max_array_bytes=spec.max_array_bytes, max_calls=spec.max_calls,
                  jit_options=options_cli.jit_options(calls, spec.static_argnames,
                                                      spec.static_argnums),
                  no_jit=no_jit, keep_going=keep_going, hook_mode=running.hook_mode.value,
                  compilation_cache=options_cli.cache_folder(recording.compilation_cache),
                  after_warmup=plan, warmup_parallel=recording.warmup_parallel)
        outcome = finish.supervised(job, request.events_log, quiet=running.quiet,
                                    timeout=options_cli.run_timeout(running.timeout),
                                    stdout_to_stderr=request.stdout_is_taken)
    finish.finish(outcome, request)


class _ModuleEndsOptions(TyperCommand):
    """``run``'s command: as for ``python -m``, the options end at ``-m MODULE``; what follows
    it is the module's (``run -m pytest -q -x tests`` passes ``-q -x tests`` to pytest)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _options_end_at_module(self.params, list(args)))


def _options_end_at_module(params: list[Any], args: list[str]) -> list[str]:
    """``args`` with ``--`` after the ``-m MODULE`` among the leading options (none if none)."""
    takes_value = {name for p in params if getattr(p, "param_type_name", "") == "option"
                   and not getattr(p, "is_flag", False) and not getattr(p, "count", False)
                   for name in [*p.opts, *p.secondary_opts]}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-m", "--module"):
            return [*args[:i + 2], "--", *args[i + 2:]] if i + 1 < len(args) else args
        if arg.startswith("--module=") or (arg.startswith("-m") and not arg.startswith("--")):
            return [*args[:i + 1], "--", *args[i + 1:]]
        if arg == "--" or arg == "-" or not arg.startswith("-"):
            return args  # SCRIPT, or the end of the options
        i += 2 if arg in takes_value else 1  # an option and its value (not --opt=value)
    return args


@app.command(cls=_ModuleEndsOptions,
             context_settings={"allow_interspersed_args": False,
                               "ignore_unknown_options": True})
@grouped
def run(
    script: Annotated[str | None, typer.Argument(
        help="The Python script to run as __main__ (with -m: the module's first argument).")
    ] = None,
    script_args: Annotated[list[str] | None, typer.Argument(
        help="Arguments passed to the script (sys.argv[1:]).")] = None,
    *,
    module: Annotated[str | None, typer.Option(
        "-m", "--module", metavar="MODULE", help="Run the module MODULE as `python -m MODULE "
        "ARGS...` would, instead of a script: the current folder first on sys.path, so that "
        "`run -m pytest` runs the checkout's tests and code. Everything after MODULE is "
        "passed to it.")] = None,
    count_calls: Annotated[bool, typer.Option(
        "--count-calls", help="Count calls of the functions the script jits (adds ~1-3 us to "
        "each call) to fill the calls column and know during which call each compile came.")
    ] = False,
    check_hosts: Annotated[bool, typer.Option(
        "--check-hosts", help="In a multi-process job (jax.distributed): at each compile, check "
        "that every process compiles the same program, and stop every process (exit 3) at the "
        "first that does not, before it runs (docs/multi-host.md).")] = False,
    host_timeout: Annotated[float | None, typer.Option(
        "--host-timeout", metavar="SECONDS", help="With --check-hosts: seconds to wait for the "
        "other processes' compiles (above 0, at most 86400; default 60).")] = None,
    report: ReportOptions, baselines: BaselineOptions, running: Running, recording: Recording,
    limits: Limits,
) -> None:
    """Run SCRIPT like `python SCRIPT ARGS...`, in a process of its own under the recorder,
    and report every trace and compile it caused.

    Options go before SCRIPT (or -m MODULE); everything after it is passed to the script.
    When the report goes to stdout in a machine-readable format (-f json, csv, ...), the
    script's own output goes to stderr so that the two never mix."""
    from recompile_cli.process.job import Job  # the job's imports only for a run

    with user_errors():
        target, arguments = _script_or_module(script, script_args, module,
                                              recording.after_warmup)
        request = finish.request(report, baselines, limits, events_log=recording.events_log,
                                 after_warmup=recording.after_warmup,
                                 uses=[] if module is not None else
                                 [collisions.Use("SCRIPT", output.absolute(Path(target)),
                                                 writes=False)])
        job = Job(kind="script", target=target, script_args=arguments, module=module is not None,
                  hook_mode=running.hook_mode.value, count_calls=count_calls,
                  host_timeout=_host_timeout(check_hosts, host_timeout),
                  compilation_cache=options_cli.cache_folder(recording.compilation_cache),
                  after_warmup=options_cli.warmup_plan(recording.after_warmup,
                                                       recording.warmup_parallel),
                  warmup_parallel=recording.warmup_parallel)
        outcome = finish.supervised(job, request.events_log, quiet=running.quiet,
                                    timeout=options_cli.run_timeout(running.timeout),
                                    stdout_to_stderr=request.stdout_is_taken)
    finish.finish(outcome, request)


def _script_or_module(script: str | None, script_args: list[str] | None, module: str | None,
                      after_warmup: Any) -> tuple[str, tuple[str, ...]]:
    """What ``run`` runs and its arguments: SCRIPT, or with ``-m`` MODULE (SCRIPT is then the
    module's first argument); exit 2 for neither."""
    if module is None:
        if script is None:
            raise RecompileError("Missing SCRIPT: run takes a script's path (run train.py "
                                 "ARGS...) or -m MODULE (run -m pytest ARGS...).")
        return script, tuple(script_args or ())
    if after_warmup is not None:
        raise RecompileError("--after-warmup runs a plan before a script's __main__ block; it "
                             "cannot be used with -m MODULE: run the module's file instead.")
    first = () if script is None else (script,)
    return module, (*first, *(script_args or ()))


def _host_timeout(check_hosts: bool, seconds: float | None) -> float | None:
    """--check-hosts' timeout (None: no check); exit 2 for --host-timeout alone or out of
    range (``options.host_timeout``)."""
    if not check_hosts:
        if seconds is not None:
            raise RecompileError("--host-timeout is how long --check-hosts waits for the other "
                                 "processes' compiles: pass --check-hosts too, or leave "
                                 "--host-timeout out.")
        return None
    try:
        return options.host_timeout(60.0 if seconds is None else seconds, "--host-timeout")
    except (TypeError, ValueError) as exc:
        raise RecompileError(str(exc)) from None


@app.command()
@grouped
def check(
    budget_file: Annotated[Path | None, typer.Argument(
        help="The budget file (default: recompile-budget.yaml, else the tool.recompile-cli "
        "table of pyproject.toml, in the current folder).")] = None,
    fmt: Annotated[GateFormat, typer.Option(
        "--format", "-f", help="The gate summary as a terminal table or as Markdown.")
    ] = GateFormat.table,
    strict: StrictOption = False,
    *, baselines: BaselineOptions, running: Running, limits: Limits,
) -> None:
    """Run every target of the budget file, each in a process of its own, and fail (exit 1)
    when a budget is broken."""
    # the budget file's, the runner's and the evaluator's imports (PyYAML, the analysis) only
    # for a check (keeps --help light)
    from recompile_cli.cli.check_runner import run_checks
    from recompile_cli.gate import baseline as baseline_files
    from recompile_cli.gate.budgets import find_budget_file, load_budget_file
    from recompile_cli.gate.evaluate import evaluate

    problems = Problems()
    with user_errors():
        path = find_budget_file(output.absolute(budget_file))
        budgets = load_budget_file(path)
        junit = output.absolute(baselines.junit_xml)
        output.check_writable(junit, "--junit-xml")
        save_to = output.absolute(baselines.save_baseline)
        output.check_writable(save_to, "--save-baseline")
        regression = baselines.fail_on_compile_regression
        finish.needs_baseline(regression, baselines.baseline)
        baseline = output.absolute(baselines.baseline)
        loaded = baseline_files.load_baseline(baseline) if baseline is not None else None
        gates = limits.gates()
        runs, interrupted = run_checks(budgets, gates, running.hook_mode, quiet=running.quiet,
                                       timeout=options_cli.run_timeout(running.timeout))
    shown = output.shown_path(path)
    with exits.deferred_signals() as received:
        result = evaluate(runs, loaded, f"recompile-cli check {shown} --save-baseline "
                          f"{baselines.baseline}", strict, regression)
        if save_to is not None and not interrupted:
            output.write_file(save_to, baseline_files.baseline_text([r.report for r in runs]),
                              "baseline", problems)
        if runs:
            env = runs[0].report.session.environment
            output.echo(f"recompile-cli check: {shown} (jax {env.jax_version}, {env.backend})")
        output.emit_gate(result, junit, shown, problems,
                         markdown=fmt == GateFormat.markdown)
    raised = "; ".join(f"{e.target}: {e.message}" for e in result.errors) or None
    code = output.exit_code(raised, interrupted or received.code, result.held, problems)
    if interrupted:
        typer.echo("recompile-cli check: interrupted; the targets after it did not run.",
                   err=True)
    raise typer.Exit(code)


@app.command()
def report(
    session: Annotated[Path, typer.Argument(help="A session saved with --save or --output "
                                                 "FILE.json, or an --events-log FILE.jsonl.")],
    fmt: FormatOption = None, output_path: OutputOption = None, show_all: AllOption = False,
) -> None:
    """Render a saved session again, in any format, without running anything."""
    # the analysis and the session reader only for this command (keeps --help light)
    from recompile_cli.analysis.report import build_report
    from recompile_cli.session.files import load_session

    problems = Problems()
    with user_errors():
        files = ReportFiles(fmt.value if fmt else None, output.absolute(output_path), None,
                            show_all)
        output.check_report_files(files)
        output.take_stdout(collisions.check(
            [collisions.Use("--output", files.output),
             collisions.Use("SESSION", output.absolute(session), writes=False)],
            report_on_stdout=files.machine_readable))
        loaded = load_session(session)
    output.emit_report(build_report(loaded), files, problems)
    raise typer.Exit(output.exit_code(None, None, True, problems))


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The earlier saved session (JSON).")],
    new: Annotated[Path, typer.Argument(help="The later saved session (JSON).")],
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 if any function compiles more often in NEW.")
    ] = False,
    fmt: Annotated[DiffFormat, typer.Option(
        "--format", "-f", help="table (default), markdown (a PR comment) or json.")
    ] = DiffFormat.table,
) -> None:
    """Per-function change in traces, compiles and compile seconds, causes new in NEW, and
    why the persistent compilation cache keys changed."""
    # the analysis, its renderers and the session reader only for this command (as above)
    from recompile_cli.analysis.cache.keys import diff_sessions
    from recompile_cli.analysis.compare import diff_reports
    from recompile_cli.analysis.report import build_report
    from recompile_cli.render.diff import regression_text, render_diff
    from recompile_cli.render.sections import cache_keys
    from recompile_cli.session.files import load_session

    with user_errors():
        old_session, new_session = load_session(old), load_session(new)
        changes, new_causes = diff_reports(build_report(old_session), build_report(new_session))
        keys = diff_sessions(old_session, new_session)
    if fmt == DiffFormat.json:
        output.echo(cache_keys.diff_json(changes, new_causes, keys, str(old), str(new)), nl=False)
    else:
        markdown = fmt == DiffFormat.markdown
        output.echo(cache_keys.diff_text(render_diff(
            changes, new_causes, str(old), str(new), markdown=markdown,
            targets=(old_session.target, new_session.target)), keys, markdown=markdown), nl=False)
    regressed = fail_on_regression and any(c.regressed for c in changes)
    if regressed:
        typer.echo(regression_text(changes), err=True, nl=False)
    raise typer.Exit(exits.exit_code(gate_held=not regressed))


app.command(name="merge")(merge_command.merge)
app.command(name="forecast")(forecast_command.forecast)
app.command(name="warmup")(warmup_command.warmup)


def main() -> None:
    """The command line, as ``__main__.main`` (the ``recompile-cli`` console script and
    ``python -m recompile_cli``) runs it. Ctrl-C and SIGTERM are deferred from the start
    (``exits.defer_signals``): they stop the target, or are taken into the exit code once the
    report is out; either way the command ends with 130/143 and one line, never a traceback."""
    exits.defer_signals()
    try:
        app(prog_name="recompile-cli")
        code: Any = 0
    except exits.INTERRUPTIONS as exc:
        code = exits.interruption_code(exc)
        typer.echo(f"recompile-cli: {exits.interruption_text(code)} before anything was "
                   "recorded.", err=True)
    except SystemExit as exc:
        code = exc.code
    late = exits.pending_code()  # came after the report was out, or to a command without a run
    if late is not None and code not in (exits.ExitCode.SIGINT, exits.ExitCode.SIGTERM):
        typer.echo(f"recompile-cli: {exits.interruption_text(late)}.", err=True)
        code = late
    raise SystemExit(code)
