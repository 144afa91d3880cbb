"""``pytest --recompile``: every test recorded, an end-of-run table, a baseline saved and gated.

The pytest plugin (``api.pytest_plugin``) records each test's call (with JAX's caches forgotten
for every function outside JAX, so that a test's count of those is what it compiles in a fresh
process, whatever ran before it; JAX's own programs stay compiled, and count in the first test
that needed them) and hands the analysed recording to ``Suite.measured``: its compiles per
function outside JAX (the user's and libraries') are kept, and with ``--recompile-compare`` a
function that compiles more often than in the baseline fails the test with the function,
``before -> after``, the causes and where.

The counts travel on the test's report (``recompile_counts``, plain JSON data), so that under
pytest-xdist the controller, which runs no test, sees every worker's tests: it prints the table
(``pytest_terminal_summary``) and writes ``--recompile-save``'s file.

Loaded only when the suite-wide mode is on; the analysis it needs is imported here, JAX never.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from recompile_cli.analysis.messages import advice, describe
from recompile_cli.session.kinds import CauseCode, Owner
from recompile_cli.session.model import NO_BACKEND, function_key

if TYPE_CHECKING:
    from recompile_cli.analysis.report import FunctionRow
    from recompile_cli.api.report import RecompileReport

FORMAT = "recompile-cli pytest counts"
VERSION = 1
COUNTS = pytest.StashKey[dict[str, Any]]()  # a test's counts, from its call to its report


def counts_of(report: RecompileReport, listening: bool) -> dict[str, Any]:
    """A test's counts as JSON data: per function outside JAX (by its label, ``step`` or
    ``update_fn (optax)``) its compiles, re-compiles, traces and compile seconds; JAX's own
    compiles and seconds; ``blind`` when the test removed the recorder's listeners."""
    inner = report.report
    rows: dict[str, FunctionRow] = {row.key: row for row in inner.functions}
    functions: dict[str, dict[str, Any]] = {}
    for row in inner.functions:
        if row.owner == Owner.JAX or not (row.compiles or row.traces):
            continue
        entry = functions.setdefault(row.label, {"compiles": 0, "recompiles": 0, "traces": 0,
                                                 "compile_seconds": 0.0})
        entry["compiles"] += row.compiles
        entry["traces"] += row.traces
        entry["compile_seconds"] += row.compile_seconds
    for event in inner.session.events:
        owner = rows.get(function_key(event.function, event.defined_at))
        if (event.compiled and owner is not None and owner.label in functions
                and inner.primary(event).code != CauseCode.FIRST_COMPILE):
            functions[owner.label]["recompiles"] += 1
    jax = inner.totals.by_owner.get(Owner.JAX)
    return {"functions": functions, "jax_compiles": jax.compiles if jax else 0,
            "jax_compile_seconds": jax.compile_seconds if jax else 0.0, "blind": not listening}


@dataclass(frozen=True)
class Growth:
    """A function that compiles more often in a test than in the baseline."""

    test: str
    function: str
    before: int
    after: int
    message: str
    call_site: str | None


def grown(test: str, report: RecompileReport, counts: dict[str, Any],
          baseline: dict[str, int]) -> list[Growth]:
    """The functions of ``test`` that compile more often than in its ``baseline``, each with
    its excess compiles described (causes, arguments, where) as the gates describe them."""
    from recompile_cli.gate.evaluate import _site  # the gates' place of a violation

    inner = report.report
    labels = {row.key: row.label for row in inner.functions}
    names = {row.label: row.name for row in inner.functions}
    out = []
    for label, entry in sorted(counts["functions"].items()):
        before, after = baseline.get(label, 0), entry["compiles"]
        if after <= before:
            continue
        compiled = [e for e in inner.session.events if e.compiled
                    and labels.get(function_key(e.function, e.defined_at)) == label]
        excess = compiled[before:]
        new = "" if label in baseline else ", a function new in this test"
        text = (f"{label}: {before} -> {after} compiles against the baseline{new}. Excess: "
                f"{describe(inner, excess)}.{advice(inner, names.get(label, label), excess)}"
                if excess else f"{label}: {before} -> {after} compiles against the baseline")
        out.append(Growth(test, label, before, after, text,
                          _site(excess[0]) if excess else None))
    return out


class Suite:
    """The suite-wide mode's state: options, the baseline, and the counts of the tests seen
    (in the process that reports: the only one, or xdist's controller)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.save: str | None = config.getoption("recompile_save", None)
        self.compare: str | None = config.getoption("recompile_compare", None)
        self.top: int = config.getoption("recompile_top", 10) or 0
        if self.top < 0:
            raise pytest.UsageError("--recompile-top N: N is 0 (every row) or more")
        self.baseline: dict[str, dict[str, int]] | None = None
        self.baseline_meta: dict[str, Any] = {}
        if self.compare:
            self.baseline, self.baseline_meta = load(self.compare)
        self.tests: dict[str, dict[str, Any]] = {}
        self.growth: list[dict[str, Any]] = []
        self.environment: dict[str, str] = {}

    # -- in the process that runs the test ----------------------------------------------------
    def measured(self, item: pytest.Item, report: RecompileReport, listening: bool) -> list[str]:
        """Keep the test's counts for its report; the failure messages of the functions that
        grew against the baseline (none without one)."""
        try:
            counts = counts_of(report, listening)
            environment = report.session.environment
            counts["environment"] = {"jax": environment.jax_version,
                                     "backend": environment.backend}
            found: list[Growth] = []
            if self.baseline is not None and item.nodeid in self.baseline:
                found = grown(item.nodeid, report, counts, self.baseline[item.nodeid])
            counts["grown"] = [vars(g) for g in found]
            item.stash[COUNTS] = counts
            return [f"recompile-cli: {g.message}" for g in found]
        except Exception as exc:  # never break the test run; say what went wrong
            return [f"recompile-cli: could not count this test's compiles ({type(exc).__name__}: "
                    f"{exc}); please report it"]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call" and COUNTS in item.stash:
            # plain data, in the report's __dict__: pytest-xdist sends it to the controller
            report.recompile_counts = item.stash[COUNTS]  # type: ignore[attr-defined]
        return report

    # -- in the process that reports -----------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        counts = getattr(report, "recompile_counts", None)
        if report.when != "call" or not isinstance(counts, dict) or report.skipped:
            return
        self.tests[report.nodeid] = counts
        self.growth += counts.get("grown", [])
        environment = counts.get("environment") or {}
        if environment.get("backend") not in (None, "", NO_BACKEND):  # a test that compiled
            self.environment = environment

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.save and not hasattr(self.config, "workerinput"):
            write(self.save, self.tests, self.environment)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        write_line = terminalreporter.write_line
        terminalreporter.write_sep("=", "recompile-cli: compiles per test")
        for line in summary(self.tests, self.top):
            write_line(line)
        if self.baseline is not None:
            for line in comparison(self.tests, self.baseline, self.baseline_meta,
                                   self.environment, self.compare or "", self.growth,
                                   self.top):
                write_line(line)
        if self.save:
            write_line(f"recompile-cli: saved the counts of {len(self.tests)} tests to "
                       f"{self.save}")
        if self.growth and os.environ.get("GITHUB_ACTIONS") == "true":
            for line in github_lines(self.growth):
                write_line(line)


# -- the file ------------------------------------------------------------------------------------
def write(path: str, tests: dict[str, dict[str, Any]], environment: dict[str, str]) -> None:
    """The baseline: per test (sorted) its compiles per function (sorted); versioned."""
    data = {"format": FORMAT, "version": VERSION, "jax": environment.get("jax", ""),
            "backend": environment.get("backend", ""),
            "tests": {test: {name: f["compiles"] for name, f in
                             sorted(counts["functions"].items()) if f["compiles"]}
                      for test, counts in sorted(tests.items())}}
    target = Path(path)
    if target.parent != Path(""):
        target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(partial, target)


def load(path: str) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """The baseline's counts per test and its environment; a usage error for a file that is
    not one (``pytest`` exits 4 with the message)."""
    where = f"--recompile-compare {path}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise pytest.UsageError(f"{where}: no such file; write it first with --recompile-save "
                                f"{path}") from None
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"{where}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise pytest.UsageError(f"{where}: not a file of --recompile-save")
    if data.get("version") != VERSION:
        raise pytest.UsageError(f"{where}: version {data.get('version')!r}, this recompile-cli "
                                f"reads version {VERSION}; save it again with --recompile-save")
    tests = data.get("tests")
    if not isinstance(tests, dict) or not all(
            isinstance(v, dict) and all(isinstance(n, int) and n >= 0 for n in v.values())
            for v in tests.values()):
        raise pytest.UsageError(f"{where}: 'tests' must map each test to its compiles per "
                                "function")
    return tests, {"jax": data.get("jax", ""), "backend": data.get("backend", "")}


# -- the report ----------------------------------------------------------------------------------
def _compiles(counts: dict[str, Any]) -> int:
    return sum(f["compiles"] for f in counts["functions"].values())


def summary(tests: dict[str, dict[str, Any]], top: int) -> list[str]:
    """The end-of-run lines: the suite's totals, then the tests and the functions with the most
    compiles (as ``--durations`` lists the slowest tests)."""
    if not tests:
        return ["no test was recorded"]
    compiles = sum(_compiles(c) for c in tests.values())
    recompiles = sum(f["recompiles"] for c in tests.values() for f in c["functions"].values())
    seconds = sum(f["compile_seconds"] for c in tests.values() for f in c["functions"].values())
    again = sum(1 for c in tests.values() if any(f["recompiles"]
                                                  for f in c["functions"].values()))
    jax = sum(c["jax_compiles"] for c in tests.values())
    jax_seconds = sum(c["jax_compile_seconds"] for c in tests.values())
    lines = [f"{len(tests)} tests recorded, {again} with re-compiles: {compiles} compiles of "
             f"functions outside JAX ({recompiles} re-compiles), {seconds:.3f} s compiling; "
             f"{jax} compiles inside JAX, {jax_seconds:.3f} s (each in the first test that "
             "needed it)"]
    blind = [t for t, c in tests.items() if c.get("blind")]
    if blind:
        lines.append(f"{len(blind)} tests removed recompile-cli's jax.monitoring listeners, so "
                     f"their counts are incomplete: {', '.join(sorted(blind)[:3])}"
                     + (" ..." if len(blind) > 3 else ""))
    ranked = sorted(((_compiles(c), sum(f["recompiles"] for f in c["functions"].values()),
                      sum(f["compile_seconds"] for f in c["functions"].values()), test)
                     for test, c in tests.items() if _compiles(c)),
                    key=lambda r: (-r[0], -r[2], r[3]))
    if ranked:
        shown = ranked if not top else ranked[:top]
        lines += ["", f"tests with the most compiles ({len(shown)} of {len(ranked)}):",
                  "compiles  re-compiles  compile s  test"]
        lines += [f"{n:>8}  {r:>11}  {s:>9.3f}  {test}" for n, r, s, test in shown]
    per_function: dict[str, list[float]] = {}
    for counts in tests.values():
        for name, f in counts["functions"].items():
            if f["compiles"]:
                entry = per_function.setdefault(name, [0, 0, 0, 0.0])
                entry[0] += f["compiles"]
                entry[1] += f["recompiles"]
                entry[2] += 1
                entry[3] += f["compile_seconds"]
    functions = sorted(per_function.items(), key=lambda kv: (-kv[1][0], -kv[1][3], kv[0]))
    if functions:
        shown_f = functions if not top else functions[:top]
        lines += ["", f"functions with the most compiles ({len(shown_f)} of {len(functions)}):",
                  "compiles  re-compiles  tests  compile s  function"]
        lines += [f"{int(n):>8}  {int(r):>11}  {int(t):>5}  {s:>9.3f}  {name}"
                  for name, (n, r, t, s) in shown_f]
    return lines


def comparison(tests: dict[str, dict[str, Any]], baseline: dict[str, dict[str, int]],
               meta: dict[str, Any], environment: dict[str, str], path: str,
               growth: list[dict[str, Any]], top: int) -> list[str]:
    """The baseline's verdict: tests that compile more (they failed), fewer, new, not run."""
    grew = sorted({g["test"] for g in growth})
    fell = sorted(t for t, c in tests.items() if t in baseline and t not in grew
                  and _compiles(c) < sum(baseline[t].values()))
    new = sorted(t for t in tests if t not in baseline)
    missing = sorted(t for t in baseline if t not in tests)
    lines = ["", f"baseline {path}: {len(grew)} tests compile more (failed), {len(fell)} "
             f"fewer, {len(new)} new, {len(missing)} of its tests not run"]
    for g in growth:
        lines.append(f"- {g['test']}: {g['function']} {g['before']} -> {g['after']}")
    limit = top or None
    for label, names in (("new (not in the baseline)", new),
                         ("not run (deselected, skipped or removed)", missing),
                         ("fewer compiles (save the baseline again to keep the gain)", fell)):
        if names:
            shown = names[:limit]
            lines.append(f"{label}: {', '.join(shown)}"
                         + (f" ... and {len(names) - len(shown)} more" if len(shown) < len(names)
                            else ""))
    if environment and meta.get("jax") and (meta.get("jax"), meta.get("backend")) != (
            environment.get("jax"), environment.get("backend")):
        lines.append(f"warning: the baseline was saved with JAX {meta.get('jax')} on "
                     f"{meta.get('backend') or '?'}, this run is JAX {environment.get('jax')} on "
                     f"{environment.get('backend') or '?'}: counts may differ for that reason")
    return lines


def github_lines(growth: list[dict[str, Any]]) -> list[str]:
    """GitHub Actions ``::error`` lines, one per function that grew, at its call site
    (``render.ci.github_annotations``)."""
    from recompile_cli.gate.rules import Rule, Violation  # only on GitHub Actions
    from recompile_cli.render.ci import github_annotations

    return github_annotations([Violation(g["function"], Rule.BASELINE,
                                         f"{g['test']}: {g['message']}", g["call_site"])
                               for g in growth])
