"""What a recording command does around its run: ``request`` validates every report, save and
gate option before the target runs (a ``Request``), ``supervised`` runs the target in the
measured process (``process.supervisor``, with the live status line on a terminal), and ``finish``
analyses the outcome, prints and writes the report, evaluates the gates and exits with the code
(``exits``).

Shared by ``profile``, ``run`` (``cli.app``), ``check`` (``cli.check_runner``) and ``forecast``
(``cli.forecast_command``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from recompile_cli import exits
from recompile_cli.cli import output
from recompile_cli.cli.options_cli import cause_codes
from recompile_cli.cli.output import Problems, ReportFiles

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report
    from recompile_cli.gate.baseline import Baseline
    from recompile_cli.gate.gates import Gates
    from recompile_cli.process.job import Job
    from recompile_cli.session.model import Outcome, Session


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
    compile_regression: float | None = None
    allow_unrecorded: bool = False  # --allow-unrecorded


def request(fmt: Any, output_path: Path | None, save: Path | None, show_all: bool,
             max_compiles: int | None, fail_on: str | None, baseline: Path | None,
             save_baseline: Path | None, junit: Path | None, events_log: Path | None,
             compile_regression: float | None = None, after_warmup: bool = False,
             allow_unrecorded: bool = False, max_slow_calls: int | None = None,
             max_eager_compiles: int | None = None) -> Request:
    """Resolve every path against the starting folder and validate every option."""
    from recompile_cli.gate.gates import Gates  # not the evaluator, which is for after the run

    if baseline:  # its module (and the analysis behind it) only for a run that reads one
        from recompile_cli.gate import baseline as baselines

    files = ReportFiles(fmt.value if fmt else None, output.absolute(output_path),
                        output.absolute(save), show_all)
    output.check_report_files(files)
    for path, option in ((output.absolute(junit), "--junit-xml"),
                         (output.absolute(events_log), "--events-log"),
                         (output.absolute(save_baseline), "--save-baseline")):
        output.check_writable(path, option)
    needs_baseline(compile_regression, baseline)
    loaded = baselines.load_baseline(output.absolute(baseline)) if baseline else None  # type: ignore[arg-type]
    gates = Gates(max_compiles=max_compiles, fail_on=cause_codes(fail_on),
                  list_all=junit is not None, after_warmup=after_warmup,
                  allow_unrecorded=allow_unrecorded, max_slow_calls=max_slow_calls,
                  max_eager_compiles=max_eager_compiles)
    return Request(files, gates, loaded, output.absolute(baseline),
                   output.absolute(save_baseline), output.absolute(junit),
                   output.for_process(output.absolute(events_log), None), compile_regression,
                   allow_unrecorded)


def supervised(job: Job, events_log: Path | None = None, *, quiet: bool = False,
               timeout: float | None = None, stdout_to_stderr: bool = False,
               cwd: Path | None = None) -> Outcome:
    """Run ``job`` in the measured process and return its outcome (``process.supervisor``), with
    the live status line on stderr when it is a terminal (``output.wants_live_line``)."""
    from recompile_cli.process import supervisor

    live = None
    if output.wants_live_line(quiet):
        from recompile_cli.cli.live import LiveLine

        live = LiveLine(sys.stderr)
    try:
        return supervisor.supervise(job, cwd=cwd, events_log=events_log, timeout=timeout,
                                    observer=live, stdout_to_stderr=stdout_to_stderr,
                                    ended=_analysed.build_ahead)
    finally:
        if live is not None:
            live.close()


def needs_baseline(compile_regression: float | None, baseline: Path | None) -> None:
    """--fail-on-compile-regression needs --baseline: exit 2 without it."""
    if compile_regression is not None and baseline is None:
        from recompile_cli.errors import BudgetError

        raise BudgetError("--fail-on-compile-regression compares compile seconds and equations "
                          "with a baseline: pass --baseline FILE too (write one with "
                          "--save-baseline FILE on a run you trust).")


class _Analysed:
    """The report of the session a run ended with, analysed while its measured process was
    still ending (``supervise``'s ``ended``: the child's interpreter shutdown takes as long as
    the analysis of a large session), so that the two overlap."""

    def __init__(self) -> None:
        self._last: tuple[Session, Report] | None = None

    def build_ahead(self, session: Session) -> None:
        from recompile_cli.analysis.report import build_report

        self._last = None
        self._last = (session, build_report(session))

    def report(self, session: Session) -> Report:
        """The report of ``session``: the one analysed already when it is that very session."""
        from recompile_cli.analysis.report import build_report

        last, self._last = self._last, None
        return last[1] if last is not None and last[0] is session else build_report(session)


_analysed = _Analysed()
report_of = _analysed.report


def finish(outcome: Outcome, request: Request) -> None:
    """Analyse, print and write the report, evaluate the gates, and exit with the code."""
    from recompile_cli.gate import baseline as baselines
    from recompile_cli.gate.evaluate import Gated, evaluate

    env = outcome.session.environment  # the process index is known now: fill {process}
    request = replace(request, files=output.files_for_process(request.files, env),
                      junit=output.for_process(request.junit, env),
                      save_baseline=output.for_process(request.save_baseline, env))
    problems = Problems()
    with exits.deferred_signals() as received:
        output.write_session(outcome.session, request.files.save, problems)
        report = report_of(outcome.session)
        output.emit_report(report, request.files, problems)
        if request.save_baseline is not None:
            output.write_file(request.save_baseline, baselines.baseline_text([report]),
                              "baseline", problems)
        gated = request.gates.any or request.baseline is not None
        result = evaluate([Gated(outcome.session.target, report, request.gates,
                                 outcome.failure)],
                          request.baseline,
                          f"re-run with --save-baseline {request.baseline_path}",
                          compile_regression=request.compile_regression,
                          allow_unrecorded=request.allow_unrecorded)
        if gated:
            output.emit_gate(result, request.junit, outcome.session.target, problems)
    if outcome.traceback and not outcome.interrupted:
        output.message(outcome.traceback.rstrip("\n"))
    interrupted = exits.ExitCode(outcome.interrupted) if outcome.interrupted else received.code
    raise typer.Exit(output.exit_code(outcome.failure, interrupted,
                                      result.held or not gated, problems))
