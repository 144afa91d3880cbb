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
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from recompile_cli import exits
from recompile_cli.cli import collisions, output
from recompile_cli.cli.collisions import Use
from recompile_cli.cli.option_groups import BaselineOptions, Limits, ReportOptions
from recompile_cli.cli.output import Problems, ReportFiles
from recompile_cli.errors import BudgetError

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report
    from recompile_cli.gate.baseline import Baseline
    from recompile_cli.gate.limits import Gates
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
    output_on_stdout: bool = False  # an output file is stdout: the report goes to stderr

    @property
    def stdout_is_taken(self) -> bool:
        """Whether stdout is the report's for tools, or an output file's: the target's own
        output then goes to stderr."""
        return self.files.machine_readable or self.output_on_stdout


def request(report: ReportOptions, baselines: BaselineOptions, limits: Limits, *,
            events_log: Path | None = None, after_warmup: Path | None = None,
            uses: Iterable[Use] = ()) -> Request:
    """Resolve every path against the starting folder and validate every option; ``uses``:
    the command's other files (the script, the specs and the target's file it reads, a plan
    it writes), which no output may collide with (``collisions``)."""
    if baselines.baseline:  # its module (and the analysis behind it) only for a run that reads one
        from recompile_cli.gate import baseline as baseline_files

    files = ReportFiles(report.fmt.value if report.fmt else None,
                        output.absolute(report.output_path), output.absolute(report.save),
                        report.show_all)
    output.check_report_files(files)
    junit = output.absolute(baselines.junit_xml)
    save_baseline = output.absolute(baselines.save_baseline)
    on_stdout = collisions.check([
        Use("--output", files.output), Use("--save", files.save), Use("--junit-xml", junit),
        Use("--save-baseline", save_baseline), Use("--events-log", output.absolute(events_log)),
        Use("--baseline", output.absolute(baselines.baseline), writes=False),
        Use("--after-warmup", output.absolute(after_warmup), writes=False),
        *uses], report_on_stdout=files.machine_readable)
    output.take_stdout(on_stdout)
    for path, option in ((junit, "--junit-xml"), (output.absolute(events_log), "--events-log"),
                         (save_baseline, "--save-baseline")):
        output.check_writable(path, option)
    regression = baselines.fail_on_compile_regression
    needs_baseline(regression, baselines.baseline)
    baseline = output.absolute(baselines.baseline)
    loaded = baseline_files.load_baseline(baseline) if baseline is not None else None
    gates = limits.gates(list_all=junit is not None, after_warmup=after_warmup is not None)
    return Request(files, gates, loaded, baseline, save_baseline, junit,
                   output.for_process(output.absolute(events_log), None), regression,
                   on_stdout is not None)


def supervised(job: Job, events_log: Path | None = None, *, quiet: bool = False,
               timeout: float | None = None, stdout_to_stderr: bool = False,
               cwd: Path | None = None) -> Outcome:
    """Run ``job`` in the measured process and return its outcome (``process.supervisor``), with
    the live status line on stderr when it is a terminal (``output.wants_live_line``)."""
    from recompile_cli.process import supervisor  # only for a run (keeps --help light)

    live = None
    if output.wants_live_line(quiet):
        from recompile_cli.cli.live import LiveLine  # only on a terminal

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
        from recompile_cli.analysis.report import build_report  # only after a run (as above)

        self._last = None
        self._last = (session, build_report(session))

    def report(self, session: Session) -> Report:
        """The report of ``session``: the one analysed already when it is that very session."""
        from recompile_cli.analysis.report import build_report  # only after a run (as above)

        last, self._last = self._last, None
        return last[1] if last is not None and last[0] is session else build_report(session)


_analysed = _Analysed()
report_of = _analysed.report


def finish(outcome: Outcome, request: Request, problems: Problems | None = None) -> None:
    """Analyse, print and write the report, evaluate the gates, and exit with the code
    (``problems``: files the command could not write before, which make it 2)."""
    # the evaluator and the analysis behind it only after a run (keeps --help light)
    from recompile_cli.gate import baseline as baselines
    from recompile_cli.gate.evaluate import Gated, evaluate

    env = outcome.session.environment  # the process index is known now: fill {process}
    request = replace(request, files=output.files_for_process(request.files, env),
                      junit=output.for_process(request.junit, env),
                      save_baseline=output.for_process(request.save_baseline, env))
    problems = problems or Problems()
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
                          compile_regression=request.compile_regression)
        if gated:
            output.emit_gate(result, request.junit, outcome.session.target, problems)
    if outcome.traceback and not outcome.interrupted:
        output.message(outcome.traceback.rstrip("\n"))
    interrupted = exits.ExitCode(outcome.interrupted) if outcome.interrupted else received.code
    raise typer.Exit(output.exit_code(outcome.failure, interrupted,
                                      result.held or not gated, problems))
