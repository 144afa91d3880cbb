"""The commands: validate every input, call the library, hand the results to ``output``, exit.

Exit codes and signals are ``exits``'s; ``output.user_errors`` is the one place that turns a
``RecompileError`` or an interruption into its message and exit code. Heavy modules (JAX,
pandas) are imported inside the commands that need them, so ``--help`` stays fast.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recompile_cli import exits, options
from recompile_cli.cli import merge_command, output
from recompile_cli.cli.output import Problems, ReportFiles, user_errors
from recompile_cli.errors import RecompileError
from recompile_cli.render.registry import FORMATS
from recompile_cli.session.model import CauseCode, HookMode

if TYPE_CHECKING:
    from recompile_cli.capture.runner import Outcome
    from recompile_cli.gate.baseline import Baseline
    from recompile_cli.gate.evaluate import Gates

app = typer.Typer(
    name="recompile-cli", no_args_is_help=True, add_completion=False,
    rich_markup_mode=None, pretty_exceptions_enable=False,
    help="Find out which JAX functions re-trace and re-compile, why, and what it costs.")

if TYPE_CHECKING:
    class Format(enum.StrEnum):
        """The report formats; mypy cannot see members made from ``FORMATS`` at run time."""
else:
    Format = enum.Enum("Format", [(name, name) for name in FORMATS], type=str)


class GateFormat(enum.StrEnum):
    table = "table"
    markdown = "markdown"


FormatOption = Annotated[Format | None, typer.Option(
    "--format", "-f", help="Report format on stdout (default: table). With --output, the "
    "file's format (default: from its extension).")]
OutputOption = Annotated[Path | None, typer.Option(
    "--output", "-o", help="Also write the report to this file (.json, .md, .txt, .csv, "
    ".html, .trace.json); with csv, a folder gets functions.csv, events.csv and causes.csv.")]
SaveOption = Annotated[Path | None, typer.Option(
    "--save", help="Save the session as JSON, to render later with `recompile-cli report`.")]
AllOption = Annotated[bool, typer.Option(
    "--all", help="List JAX- and library-internal functions and events too.")]
CacheOption = Annotated[Path | None, typer.Option(
    "--compilation-cache", help="Use JAX's persistent compilation cache in this folder and "
    "report hits, misses written and misses not written (below JAX's minimum compile time).")]
HookOption = Annotated[HookMode, typer.Option(
    "--hook-mode", help="'private' uses JAX's tracing internals for causes (falls back "
    "automatically); 'public-only' uses only the public jax.monitoring events.")]
MaxCompilesOption = Annotated[int | None, typer.Option(
    "--max-compiles", min=0,
    help="Gate: exit 1 if any of your functions compiles more often.")]
FailOnOption = Annotated[str | None, typer.Option(
    "--fail-on", help="Gate: exit 1 on any event with these cause codes, e.g. "
    "new_function,weak_type.")]
SaveBaselineOption = Annotated[Path | None, typer.Option(
    "--save-baseline", help="Write per-function compile counts to this baseline file.")]
BaselineOption = Annotated[Path | None, typer.Option(
    "--baseline", help="Gate: exit 1 on more compiles than this baseline, or a new function "
    "that compiles.")]
EventsLogOption = Annotated[Path | None, typer.Option(
    "--events-log", help="Append every event to this JSON-lines file as it happens (flushed), "
    "so a killed run still leaves everything recorded; read it with `recompile-cli report`.")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]
JunitOption = Annotated[Path | None, typer.Option(
    "--junit-xml", help="Write the gate results as JUnit XML (one test case per function).")]
StrictOption = Annotated[bool, typer.Option(
    "--strict", help="Gate: a budget that matches no recorded function fails (else warns).")]
MaxArrayOption = Annotated[int | None, typer.Option(
    "--max-array-bytes", min=1, help="Refuse spec arrays larger than this (default 4 GiB).")]
MaxCallsOption = Annotated[int | None, typer.Option(
    "--max-calls", min=1, help="Refuse specs that make more calls than this (default "
    "100,000).")]


@dataclass(frozen=True, slots=True)
class Request:
    """Everything a run's report and gates need, validated before the target runs."""

    files: ReportFiles
    gates: Gates
    baseline: Baseline | None
    baseline_path: Path | None
    save_baseline: Path | None
    junit: Path | None
    events_log: Path | None


def _request(fmt: Any, output_path: Path | None, save: Path | None, show_all: bool,
             max_compiles: int | None, fail_on: str | None, baseline: Path | None,
             save_baseline: Path | None, junit: Path | None, events_log: Path | None
             ) -> Request:
    """Resolve every path against the starting folder and validate every option."""
    from recompile_cli.gate import baseline as baselines
    from recompile_cli.gate.evaluate import Gates

    files = ReportFiles(fmt.value if fmt else None, output.absolute(output_path),
                        output.absolute(save), show_all)
    if files.output is not None:
        output.output_format(files)
    output.check_writable(files.output, "--output", folder_ok=True)  # CSV tables: a folder
    for path, option in ((files.save, "--save"), (output.absolute(junit), "--junit-xml"),
                         (output.absolute(events_log), "--events-log"),
                         (output.absolute(save_baseline), "--save-baseline")):
        output.check_writable(path, option)
    loaded = baselines.load_baseline(output.absolute(baseline)) if baseline else None  # type: ignore[arg-type]
    gates = Gates(max_compiles=max_compiles, fail_on=_cause_codes(fail_on),
                  list_all=junit is not None)
    return Request(files, gates, loaded, output.absolute(baseline),
                   output.absolute(save_baseline), output.absolute(junit),
                   output.for_process(output.absolute(events_log), None))


@app.command()
def profile(
    target: Annotated[str, typer.Argument(
        help="The function: package.module:function, path/file.py:function, mod:Class.method.")],
    args: Annotated[Path | None, typer.Option(
        "--args", "-a",
        help="YAML spec of the calls to make (default: one call, no args).")] = None,
    static_argnames: Annotated[str | None, typer.Option(
        help="Comma-separated static argument names, for a plain (not jitted) target.")] = None,
    static_argnums: Annotated[str | None, typer.Option(
        help="Comma-separated static argument positions, for a plain target.")] = None,
    no_jit: Annotated[bool, typer.Option(
        "--no-jit", help="Call the target as it is; record only the jits inside it.")] = False,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Make the remaining calls after one raises.")] = False,
    fmt: FormatOption = None, output_path: OutputOption = None, save: SaveOption = None,
    show_all: AllOption = False, hook_mode: HookOption = HookMode.PRIVATE,
    compilation_cache: CacheOption = None, max_compiles: MaxCompilesOption = None,
    fail_on: FailOnOption = None, save_baseline: SaveBaselineOption = None,
    baseline: BaselineOption = None, junit_xml: JunitOption = None,
    events_log: EventsLogOption = None, quiet: QuietOption = False,
    max_array_bytes: MaxArrayOption = None, max_calls: MaxCallsOption = None,
) -> None:
    """Call TARGET as the spec says, under the recorder, and report every trace and compile."""
    from recompile_cli.capture import runner
    from recompile_cli.inputs.spec import load_spec, single_call

    with user_errors():
        request = _request(fmt, output_path, save, show_all, max_compiles, fail_on, baseline,
                           save_baseline, junit_xml, events_log)
        limits = {k: v for k, v in (("max_array_bytes", max_array_bytes),
                                    ("max_calls", max_calls)) if v is not None}
        spec = load_spec(output.absolute(args), **limits) if args else single_call()  # type: ignore[arg-type]
        jit_options = dict(spec.jit_options)
        jit_options.update(_jit_flags(static_argnames, static_argnums))
        if compilation_cache:
            runner.use_compilation_cache(output.absolute(compilation_cache))  # type: ignore[arg-type]
        progress = None if quiet else output.progress_printer()
        try:
            outcome = runner.profile(target, spec, jit_options, no_jit, keep_going,
                                     runner.RunOptions(hook_mode, request.events_log, progress))
        finally:
            output.end_progress(progress)
    _finish(outcome, request)


@app.command(context_settings={"allow_interspersed_args": False,
                               "ignore_unknown_options": True})
def run(
    script: Annotated[str, typer.Argument(help="The Python script to run as __main__.")],
    script_args: Annotated[list[str] | None, typer.Argument(
        help="Arguments passed to the script (sys.argv[1:]).")] = None,
    count_calls: Annotated[bool, typer.Option(
        "--count-calls", help="Count calls of the functions the script jits (adds ~1-3 us to "
        "each call) to fill the calls column and know during which call each compile came.")
    ] = False,
    fmt: FormatOption = None, output_path: OutputOption = None, save: SaveOption = None,
    show_all: AllOption = False, hook_mode: HookOption = HookMode.PRIVATE,
    compilation_cache: CacheOption = None, max_compiles: MaxCompilesOption = None,
    fail_on: FailOnOption = None, save_baseline: SaveBaselineOption = None,
    baseline: BaselineOption = None, junit_xml: JunitOption = None,
    events_log: EventsLogOption = None,
) -> None:
    """Run SCRIPT like `python SCRIPT ARGS...` and report every trace and compile it caused.

    Options go before SCRIPT; everything after it is passed to the script. When the report
    goes to stdout in a machine-readable format (-f json, csv, ...), the script's own output
    goes to stderr so that the two never mix."""
    from recompile_cli.capture import runner

    with user_errors():
        request = _request(fmt, output_path, save, show_all, max_compiles, fail_on, baseline,
                           save_baseline, junit_xml, events_log)
        if compilation_cache:
            runner.use_compilation_cache(output.absolute(compilation_cache))  # type: ignore[arg-type]
        machine_readable = request.files.output is None and request.files.fmt not in (
            None, "table")
        with output.script_stdout_to_stderr(machine_readable):
            outcome = runner.run_script(script, list(script_args or []), runner.RunOptions(
                hook_mode, request.events_log, count_calls=count_calls))
    _finish(outcome, request)


@app.command()
def check(
    budget_file: Annotated[Path | None, typer.Argument(
        help="The budget file (default: recompile-budget.yaml, else the tool.recompile-cli "
        "table of pyproject.toml, in the current folder).")] = None,
    fmt: Annotated[GateFormat, typer.Option(
        "--format", "-f", help="The gate summary as a terminal table or as Markdown.")
    ] = GateFormat.table,
    save_baseline: SaveBaselineOption = None, baseline: BaselineOption = None,
    junit_xml: JunitOption = None, hook_mode: HookOption = HookMode.PRIVATE,
    strict: StrictOption = False,
) -> None:
    """Run every target of the budget file and fail (exit 1) when a budget is broken."""
    from recompile_cli.cli.check_runner import run_checks
    from recompile_cli.gate import baseline as baselines
    from recompile_cli.gate.budgets import find_budget_file, load_budget_file
    from recompile_cli.gate.evaluate import evaluate

    problems = Problems()
    with user_errors():
        path = find_budget_file(output.absolute(budget_file))
        budgets = load_budget_file(path)
        junit = output.absolute(junit_xml)
        output.check_writable(junit, "--junit-xml")
        save_to = output.absolute(save_baseline)
        output.check_writable(save_to, "--save-baseline")
        loaded = baselines.load_baseline(output.absolute(baseline)) if baseline else None  # type: ignore[arg-type]
        runs, interrupted = run_checks(budgets, hook_mode)
    shown = output.shown_path(path)
    with exits.deferred_signals() as received:
        result = evaluate(runs, loaded, f"recompile-cli check {shown} --save-baseline {baseline}",
                          strict)
        if save_to is not None and not interrupted:
            output.write_file(save_to, baselines.baseline_text([r.report for r in runs]),
                              "baseline", problems)
        if runs:
            env = runs[0].report.session.environment
            typer.echo(f"recompile-cli check: {shown} (jax {env.jax_version}, {env.backend})")
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
    from recompile_cli.analysis.report import analyse
    from recompile_cli.session.files import load_session

    problems = Problems()
    with user_errors():
        files = ReportFiles(fmt.value if fmt else None, output.absolute(output_path), None,
                            show_all)
        if files.output is not None:
            output.output_format(files)
        loaded = load_session(session)
    output.emit_report(analyse(loaded), files, problems)
    raise typer.Exit(output.exit_code(None, None, True, problems))


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The earlier saved session (JSON).")],
    new: Annotated[Path, typer.Argument(help="The later saved session (JSON).")],
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 if any function compiles more often in NEW.")
    ] = False,
) -> None:
    """Per-function change in traces, compiles and compile seconds, and causes new in NEW."""
    from recompile_cli.analysis.compare import diff_reports
    from recompile_cli.analysis.report import analyse
    from recompile_cli.render.diff import render_diff
    from recompile_cli.session.files import load_session

    with user_errors():
        changes, new_causes = diff_reports(analyse(load_session(old)),
                                           analyse(load_session(new)))
    typer.echo(render_diff(changes, new_causes, str(old), str(new)), nl=False)
    regressed = fail_on_regression and any(c.regressed for c in changes)
    raise typer.Exit(exits.exit_code(gate_held=not regressed))


app.command(name="merge")(merge_command.merge)


def _finish(outcome: Outcome, request: Request) -> None:
    """Analyse, print and write the report, evaluate the gates, and exit with the code."""
    from recompile_cli.analysis.report import analyse
    from recompile_cli.gate import baseline as baselines
    from recompile_cli.gate.evaluate import Gated, evaluate

    env = outcome.session.environment  # the process index is known now: fill {process}
    request = replace(request, files=output.files_for_process(request.files, env),
                      junit=output.for_process(request.junit, env),
                      save_baseline=output.for_process(request.save_baseline, env))
    problems = Problems()
    with exits.deferred_signals() as received:
        output.save_session(outcome.session, request.files.save, problems)
        report = analyse(outcome.session)
        output.emit_report(report, request.files, problems)
        if request.save_baseline is not None:
            output.write_file(request.save_baseline, baselines.baseline_text([report]),
                              "baseline", problems)
        gated = request.gates.any or request.baseline is not None
        result = evaluate([Gated(outcome.session.target, report, request.gates,
                                 outcome.failure)],
                          request.baseline,
                          f"re-run with --save-baseline {request.baseline_path}")
        if gated:
            output.emit_gate(result, request.junit, outcome.session.target, problems)
    if outcome.traceback and not outcome.interrupted:
        typer.echo(outcome.traceback.rstrip("\n"), err=True)
    raise typer.Exit(output.exit_code(outcome.failure, outcome.interrupted or received.code,
                                      result.held or not gated, problems))


def _jit_flags(names: str | None, nums: str | None) -> dict[str, tuple[Any, ...]]:
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


def _cause_codes(text: str | None) -> tuple[CauseCode, ...]:
    try:
        return options.cause_codes(text, "--fail-on")
    except ValueError as exc:
        raise RecompileError(f"{exc}.") from None


def main() -> None:
    """The ``recompile-cli`` console script: Ctrl-C or SIGTERM before anything was recorded
    ends with 130/143 and one line, never a traceback."""
    with exits.sigterm_raises():
        try:
            app(prog_name="recompile-cli")
        except exits.INTERRUPTIONS as exc:
            code = exits.interruption_code(exc)
            typer.echo(f"recompile-cli: {exits.interruption_text(code)} before anything was "
                       "recorded.", err=True)
            raise SystemExit(code) from None
