"""The command line: parse options, call the library, hand results to ``cli_io``, exit.

Exit codes: 0 ran (and every gate held), 1 a gate failed, 2 bad input, 3 the profiled target
raised (the report of what was recorded is still printed and written).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from recompile_cli.cli import output as cli_io
from recompile_cli.errors import RecompileError

app = typer.Typer(
    name="recompile-cli", no_args_is_help=True, add_completion=False,
    pretty_exceptions_show_locals=False,
    help="Find out which JAX functions re-trace and re-compile, why, and what it costs.")


class Format(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"
    chrome_trace = "chrome-trace"
    html = "html"


class GateFormat(str, Enum):
    table = "table"
    markdown = "markdown"


class HookMode(str, Enum):
    private = "private"
    public_only = "public-only"


FormatOption = Annotated[Optional[Format], typer.Option(
    "--format", "-f", help="Report format (default: table; inferred from --output's extension).")]
OutputOption = Annotated[Optional[Path], typer.Option(
    "--output", "-o", help="Also write the report to this file (.json, .md, .txt, .csv, "
    ".html, .trace.json); with csv, a folder (no extension) gets functions.csv, events.csv "
    "and causes.csv.")]
SaveOption = Annotated[Optional[Path], typer.Option(
    "--save", help="Save the whole session as JSON, to read later with `recompile-cli report`.")]
AllOption = Annotated[bool, typer.Option(
    "--all", help="List JAX- and library-internal functions and events too.")]
CacheOption = Annotated[Optional[Path], typer.Option(
    "--compilation-cache", help="Use JAX's persistent compilation cache in this folder and "
    "report hits, misses written and misses not written (below JAX's minimum compile time).")]
HookOption = Annotated[HookMode, typer.Option(
    "--hook-mode", help="'private' uses JAX's tracing internals for causes (falls back "
    "automatically); 'public-only' uses only the public jax.monitoring events.")]
MaxCompilesOption = Annotated[Optional[int], typer.Option(
    "--max-compiles", help="Gate: exit 1 if any of your functions compiles more often.")]
FailOnOption = Annotated[Optional[str], typer.Option(
    "--fail-on", help="Gate: exit 1 on any event with these cause codes, e.g. "
    "new_function,weak_type.")]
SaveBaselineOption = Annotated[Optional[Path], typer.Option(
    "--save-baseline", help="Write per-function compile counts to this baseline file.")]
BaselineOption = Annotated[Optional[Path], typer.Option(
    "--baseline", help="Gate: exit 1 on more compiles than this baseline, or a new function "
    "that compiles.")]
EventsLogOption = Annotated[Optional[Path], typer.Option(
    "--events-log", help="Append every event to this JSON-lines file as it happens (flushed), "
    "so a killed run still leaves everything recorded; read it with `recompile-cli report`.")]
QuietOption = Annotated[bool, typer.Option(
    "--quiet", "-q", help="No progress display.")]
JunitOption = Annotated[Optional[Path], typer.Option(
    "--junit-xml", help="Write the gate results as JUnit XML (one test case per function).")]


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
    fmt: FormatOption = None, output: OutputOption = None, save: SaveOption = None,
    show_all: AllOption = False, hook_mode: HookOption = HookMode.private,
    compilation_cache: CacheOption = None, max_compiles: MaxCompilesOption = None,
    fail_on: FailOnOption = None, save_baseline: SaveBaselineOption = None,
    baseline: BaselineOption = None, junit_xml: JunitOption = None,
    events_log: EventsLogOption = None, quiet: QuietOption = False,
) -> None:
    """Call TARGET as the spec says, under the recorder, and report every trace and compile."""
    from recompile_cli.target import loader
    from recompile_cli.capture import runner
    from recompile_cli.target.spec import load_spec, single_call

    try:
        spec = load_spec(args) if args else single_call()
        jit_options = dict(spec.jit_options)
        jit_options.update(_jit_flags(static_argnames, static_argnums))
        codes = _cause_codes(fail_on)
        baseline_data = _load_baseline(baseline)
        if compilation_cache:
            runner.use_compilation_cache(compilation_cache)
        found = loader.load_target(target)
        progress = None if quiet else cli_io.progress_printer()
        outcome = runner.profile(found, spec, jit_options, no_jit, keep_going,
                                 runner.RunOptions(hook_mode.value, events_log, progress))
        cli_io.end_progress(progress)
    except RecompileError as exc:
        cli_io.fail(exc)
    _report_and_gate(outcome, fmt, output, save, show_all, max_compiles, codes, save_baseline,
                     baseline, baseline_data, junit_xml)


@app.command(context_settings={"allow_interspersed_args": False,
                               "ignore_unknown_options": True})
def run(
    script: Annotated[str, typer.Argument(help="The Python script to run as __main__.")],
    script_args: Annotated[Optional[list[str]], typer.Argument(
        help="Arguments passed to the script (sys.argv[1:]).")] = None,
    count_calls: Annotated[bool, typer.Option(
        "--count-calls", help="Count calls of the functions the script jits (adds ~1-3 us to "
        "each call) to fill the calls column and know during which call each compile came.")
    ] = False,
    fmt: FormatOption = None, output: OutputOption = None, save: SaveOption = None,
    show_all: AllOption = False, hook_mode: HookOption = HookMode.private,
    compilation_cache: CacheOption = None, max_compiles: MaxCompilesOption = None,
    fail_on: FailOnOption = None, save_baseline: SaveBaselineOption = None,
    baseline: BaselineOption = None, junit_xml: JunitOption = None,
    events_log: EventsLogOption = None,
) -> None:
    """Run SCRIPT like `python SCRIPT ARGS...` and report every trace and compile it caused.

    Options go before SCRIPT; everything after it is passed to the script."""
    from recompile_cli.capture import runner

    try:
        codes = _cause_codes(fail_on)
        baseline_data = _load_baseline(baseline)
        if compilation_cache:
            runner.use_compilation_cache(compilation_cache)
        outcome = runner.run_script(script, list(script_args or []), runner.RunOptions(
            hook_mode.value, events_log, count_calls=count_calls))
    except RecompileError as exc:
        cli_io.fail(exc)
    _report_and_gate(outcome, fmt, output, save, show_all, max_compiles, codes, save_baseline,
                     baseline, baseline_data, junit_xml)


@app.command()
def check(
    budget_file: Annotated[Optional[Path], typer.Argument(
        help="The budget file (default: recompile-budget.yaml, else the tool.recompile-cli "
        "table of pyproject.toml, in the current folder).")] = None,
    fmt: Annotated[GateFormat, typer.Option(
        "--format", "-f", help="The gate summary as a terminal table or as Markdown.")
    ] = GateFormat.table,
    save_baseline: SaveBaselineOption = None, baseline: BaselineOption = None,
    junit_xml: JunitOption = None, hook_mode: HookOption = HookMode.private,
) -> None:
    """Run every target of the budget file and fail (exit 1) when a budget is broken."""
    from recompile_cli.gate import evaluate as gate
    from recompile_cli.gate.budgets import find_budget_file, load_budget_file
    from recompile_cli.gate.check import run_checks

    try:
        path = find_budget_file(budget_file)
        budgets = load_budget_file(path)
        baseline_data = _load_baseline(baseline)
        result = run_checks(budgets, hook_mode.value)
    except RecompileError as exc:
        cli_io.fail(exc)
    reports = [report for _, report in result.reports]
    improvements, warnings = [], []
    violations = list(result.violations)
    if baseline_data is not None:
        compared = gate.compare_baseline(reports, baseline_data, str(baseline),
                                         f"recompile-cli check {path} --save-baseline {baseline}")
        violations += compared.violations
        improvements, warnings = compared.improvements, compared.warnings
    if save_baseline is not None:
        gate.save_baseline(reports, save_baseline)
    env = reports[0].session.environment if reports else None
    if env is not None:
        typer.echo(f"recompile-cli check: {path} (jax {env.jax_version}, {env.backend})")
    held = cli_io.emit_gate(result.rows, violations, improvements, warnings, junit_xml,
                            str(path), markdown=fmt == GateFormat.markdown)
    cli_io.finish("; ".join(result.failures) or None, held)


@app.command()
def report(
    session: Annotated[Path, typer.Argument(help="A session saved with --save or --output "
                                                 "FILE.json, or an --events-log FILE.jsonl.")],
    fmt: FormatOption = None, output: OutputOption = None, show_all: AllOption = False,
) -> None:
    """Render a saved session again, in any format, without running anything."""
    from recompile_cli.analysis.report import analyse
    from recompile_cli.session.files import load_session

    try:
        loaded = load_session(session)
    except RecompileError as exc:
        cli_io.fail(exc)
    cli_io.emit_report(analyse(loaded), fmt.value if fmt else None, output, None, show_all)


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The earlier saved session (JSON).")],
    new: Annotated[Path, typer.Argument(help="The later saved session (JSON).")],
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 if any function compiles more often in NEW.")
    ] = False,
) -> None:
    """Per-function change in traces, compiles and compile seconds, and causes new in NEW."""
    from recompile_cli.analysis.report import analyse
    from recompile_cli.gate.diff import diff_reports
    from recompile_cli.render.diff import render_diff
    from recompile_cli.session.files import load_session

    try:
        changes, new_causes = diff_reports(analyse(load_session(old)),
                                           analyse(load_session(new)))
    except RecompileError as exc:
        cli_io.fail(exc)
    typer.echo(render_diff(changes, new_causes, str(old), str(new)), nl=False)
    cli_io.finish(None, not (fail_on_regression and any(c.regressed for c in changes)))


def _report_and_gate(outcome, fmt, output, save, show_all, max_compiles, codes, save_baseline,
                     baseline, baseline_data, junit_xml) -> None:
    from recompile_cli.gate import evaluate as gate
    from recompile_cli.analysis.report import analyse

    result = analyse(outcome.session)
    cli_io.emit_report(result, fmt.value if fmt else None, output, save, show_all)
    if save_baseline is not None:
        gate.save_baseline([result], save_baseline)
    gated = (max_compiles is not None or codes or baseline_data is not None
             or junit_xml is not None)
    held = True
    if gated:
        rows = gate.check_max_compiles(result, max_compiles)
        violations = []
        if codes:
            violations += gate.check_fail_on(result, codes)
        improvements, warnings = [], []
        if baseline_data is not None:
            compared = gate.compare_baseline([result], baseline_data, str(baseline),
                                             f"re-run with --save-baseline {baseline}")
            violations += compared.violations
            improvements, warnings = compared.improvements, compared.warnings
        held = cli_io.emit_gate(rows, violations, improvements, warnings, junit_xml,
                                outcome.session.target)
    cli_io.finish(outcome.failure, held, outcome.interrupted)


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


def _cause_codes(text: str | None) -> tuple[str, ...]:
    from recompile_cli.analysis.causes import CAUSE_CODES

    codes = tuple(c.strip() for c in (text or "").split(",") if c.strip())
    unknown = [c for c in codes if c not in CAUSE_CODES]
    if unknown:
        raise RecompileError(f"--fail-on: unknown cause code(s) {', '.join(unknown)}; use "
                             f"{', '.join(CAUSE_CODES)}.")
    return codes


def _load_baseline(path: Path | None) -> dict | None:
    from recompile_cli.gate.evaluate import load_baseline

    return load_baseline(path) if path is not None else None


def main() -> None:
    app(prog_name="recompile-cli")
