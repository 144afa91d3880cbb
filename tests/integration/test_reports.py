"""Reports from saved sessions: golden text formats, CSV round trips, the Perfetto trace, the
HTML page in a real browser, the events log (killed runs included), signals and progress."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import DATA, ROOT
from jax_support import requires_private_hooks

SESSION = DATA / "session.json"  # a real recorded run of train_loop.py, paths made neutral
GOLDEN = DATA / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"  # UPDATE_GOLDEN=1 pytest rewrites them
# Screenshots of the HTML pages in a real browser, kept for a person to look at (CI uploads the
# folder): $RECOMPILE_CLI_ARTIFACTS, else tests/artifacts (ignored by git).
ARTIFACTS = Path(os.environ.get("RECOMPILE_CLI_ARTIFACTS", ROOT / "tests" / "artifacts"))


@pytest.fixture
def neutral_cwd(tmp_path, monkeypatch):
    """Render from a folder that is no prefix of the session's paths, so output is exact."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("fmt, golden", [("table", "report.txt"), ("markdown", "report.md"),
                                         ("csv", "events.csv")])
def test_text_formats_match_golden_files(cli, neutral_cwd, monkeypatch, fmt, golden):
    monkeypatch.setenv("COLUMNS", "100")  # the table fits a terminal 100 columns wide
    result = cli("report", SESSION, "--format", fmt)
    assert result.exit_code == 0, result.output
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / golden).write_text(result.stdout)
    assert result.stdout == (GOLDEN / golden).read_text()


def test_json_report_round_trips_exactly(cli, neutral_cwd):
    result = cli("report", SESSION, "--format", "json")
    assert json.loads(result.stdout) == json.loads(SESSION.read_text())


def test_csv_folder_has_three_tables_that_pandas_reads_back(cli, neutral_cwd):
    out = neutral_cwd / "tables"
    result = cli("report", SESSION, "--format", "csv", "--output", out)
    assert result.exit_code == 0
    for name in ("functions.csv", "events.csv", "causes.csv"):
        if UPDATE:
            shutil.copy(out / name, GOLDEN / name)
        assert (out / name).read_text() == (GOLDEN / name).read_text()
    events = pd.read_csv(out / "events.csv")
    session = json.loads(SESSION.read_text())
    assert len(events) == len(session["events"])
    assert list(events["function"]) == [e["function"] for e in session["events"]]
    step_events = events[events["function"] == "train_step"]
    assert list(step_events["cause"]) == ["first_compile", "shape"]
    assert step_events["argument"].iloc[1] == "batch['x']"
    functions = pd.read_csv(out / "functions.csv")
    step = functions[functions["name"] == "train_step"].iloc[0]
    assert (step["compiles"], step["causes"]) == (2, "first_compile:1;shape:1")
    causes = pd.read_csv(out / "causes.csv")
    assert list(causes.columns) == ["function", "owner", "code", "argument", "call_site",
                                    "count", "seconds", "values", "first_event", "kind",
                                    "also"]


def test_report_does_not_import_jax(neutral_cwd):
    code = ("import sys; from typer.testing import CliRunner; "
            "from recompile_cli.cli.app import app; "
            f"r = CliRunner().invoke(app, ['report', {str(SESSION)!r}]); "
            "assert r.exit_code == 0, r.output; print('jax' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_other_schema_version_says_what_to_do(cli, neutral_cwd):
    data = json.loads(SESSION.read_text())
    data["schema_version"] = 99
    old = neutral_cwd / "old.json"
    old.write_text(json.dumps(data))
    result = cli("report", old)
    assert result.exit_code == 2
    assert "schema_version 99; this recompile-cli reads version 1" in result.stderr
    (neutral_cwd / "junk.json").write_text("not json")
    assert cli("report", neutral_cwd / "junk.json").exit_code == 2


def test_chrome_trace_structure(cli, neutral_cwd):
    result = cli("report", SESSION, "--format", "chrome-trace")
    trace = json.loads(result.stdout)
    events = trace["traceEvents"]
    session = json.loads(SESSION.read_text())
    wall_us = session["totals"]["wall_seconds"] * 1e6
    timed = [e for e in events if e["ph"] != "M"]
    assert all({"ph", "pid", "name", "ts"} <= set(e) for e in timed)
    stamps = [e["ts"] for e in timed]
    assert stamps == sorted(stamps)  # monotonic
    spans = [e for e in timed if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 and e["ts"] + e["dur"] <= wall_us + 1
               for e in spans)
    assert {e["cat"] for e in spans} == {"trace", "lower", "compile"}
    # every compile of the session appears exactly once, as a span and on the counter
    compiled = [e["seq"] for e in session["events"] if e["compiled"]]
    assert sorted(e["args"]["seq"] for e in spans if e["cat"] == "compile") == sorted(compiled)
    counter = [e["args"]["compiles"] for e in timed if e["ph"] == "C"]
    assert counter == list(range(1, len(compiled) + 1))
    # one named track per function, and a marker carrying the recompile's cause and diff
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert "train_step" in names
    [marker] = [e for e in timed if e["ph"] == "i" and e["name"] == "shape: train_step"]
    assert marker["args"]["argument"] == "batch['x']"
    assert marker["args"]["change"] == "f32[32,8] -> f32[4,8]"


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(profile: Path) -> list[str]:
    """Headless Chromium that needs no network and keeps its profile in ``profile``."""
    return [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}"]


@pytest.mark.skipif(_chromium() is None, reason="needs the Debian package chromium")
def test_html_report_in_a_real_browser(cli, neutral_cwd):
    page = neutral_cwd / "report.html"
    result = cli("report", SESSION, "--output", page)
    assert result.exit_code == 0
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text  # self-contained: nothing to fetch
    browser = _browser(neutral_cwd / "chromium-profile")
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, check=False, timeout=120).stdout
    assert 'data-ready="true"' in dom  # the page's script ran
    compiles = sum(e["compiled"] for e in json.loads(SESSION.read_text())["events"])
    assert 'id="timeline"' in dom and dom.count('class="stage compile"') == compiles
    assert '>train_step</text>' in dom and '>JAX internals</text>' in dom
    assert '<table class="sortable" id="causes">' in dom and "batch['x']" in dom
    assert "f32[32,8] -&gt; f32[4,8]" in dom
    assert "Pad the last batch to 32" in dom
    # it leads with the fix: the suggestion comes before the tables and the pictures
    assert (dom.index("Pad the last batch to 32") < dom.index('id="causes"')
            < dom.index('id="compile-chart"') < dom.index('id="timeline"'))
    assert "<code>batch['x']</code>" in dom  # the suggestion's code span, not backticks
    _screenshot(browser, page, "report.png")


@requires_private_hooks  # the picture is of the full report, compile cost by line included
@pytest.mark.skipif(_chromium() is None, reason="needs the Debian package chromium")
def test_the_docs_picture_is_the_page_of_a_real_run(cli, monkeypatch, tmp_path):
    """docs/html-report.png (``UPDATE_GOLDEN=1``) is today's page of the README's first run,
    made from the repository as a reader runs it: paths relative, no /project/... left."""
    monkeypatch.chdir(ROOT)
    page = tmp_path / "report.html"
    result = cli("run", "--format", "html", "--output", page, "sample_programs/train_loop.py",
                 "--epochs", "1")
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert str(ROOT) not in text and "sample_programs/train_loop.py:51 (main)" in text
    assert '<th scope="col" class="num">est. compile s</th>' in text
    shot = _screenshot(_browser(tmp_path / "chromium-profile"), page, "html-report.png")
    if UPDATE:
        shutil.copy(shot, ROOT / "docs" / "html-report.png")


def _screenshot(browser: list[str], page: Path, name: str) -> Path:
    """A screenshot of ``page`` in ``ARTIFACTS``, checked to be a real picture."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / name
    shot.unlink(missing_ok=True)
    subprocess.run([*browser, "--window-size=1100,1400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, check=False, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    return shot


@pytest.mark.skipif(_chromium() is None, reason="needs the Debian package chromium")
def test_html_pictures_and_a_merged_page_in_a_real_browser(cli, neutral_cwd):
    """The compile-seconds chart and a shape sweep's sizes and buckets draw in the browser;
    a merged session's page has the per-process table and the divergence."""
    from builders import ENV, f32_event, many_rows_report, session
    from msgspec.structs import replace

    from recompile_cli.render import render
    from recompile_cli.session.files import save_session

    browser = _browser(neutral_cwd / "chromium-profile")
    sweep = neutral_cwd / "sweep.html"
    sweep.write_text(render(many_rows_report(), "html"))
    dom = subprocess.run([*browser, "--dump-dom", sweep.as_uri()], capture_output=True,
                         text=True, check=False, timeout=120).stdout
    assert dom.count('class="size"') == 12 and dom.count('class="edge"') == 5
    assert dom.count('class="bar"') == 6  # fa, fb, fc: first compile + shape each
    _screenshot(browser, sweep, "report-sweep.png")
    paths = []
    for index in (0, 1):
        env = replace(ENV, process_index=index, process_count=2, host=f"host{index}")
        events = [f32_event(i, "step", n=3 + i, defined_at="/p/prog.py:3")
                  for i in range(1 + index)]
        paths.append(neutral_cwd / f"run-{index}.json")
        save_session(replace(session(events, target="prog.py"), environment=env), paths[-1])
    cli("merge", *paths, "--save", neutral_cwd / "merged.json")
    page = neutral_cwd / "merged.html"
    assert cli("report", neutral_cwd / "merged.json", "--output", page).exit_code == 0
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, check=False, timeout=120).stdout
    assert '<table class="sortable" id="processes">' in dom
    assert "Divergence: 1 function compiles differently across processes" in dom
    _screenshot(browser, page, "report-merged.png")


# Runs after the page's own script: clicks headers of every table, in order, and writes the
# column each click left behind (and the header's aria-sort) into the page for --dump-dom.
_CLICKS = """<script>
const clicks = %s;
const results = clicks.map(([id, column]) => {
  const table = document.getElementById(id);
  const header = table.tHead.rows[0].cells[column];
  header.click();
  return {id, column, order: header.getAttribute("aria-sort"),
          values: Array.from(table.tBodies[0].rows, row => row.cells[column].textContent)};
});
const out = document.createElement("pre");
out.id = "sort-results";
out.textContent = JSON.stringify(results);
document.body.appendChild(out);
</script>
"""


@pytest.mark.skipif(_chromium() is None, reason="needs the Debian package chromium")
def test_html_tables_sort_by_the_clicked_column(neutral_cwd):
    """Each table sorts by the column of the header clicked in it (not by that header's place
    among all headers of the page): largest first, then smallest first; numbers as numbers."""
    from html import unescape

    from builders import many_rows_report

    from recompile_cli.render import render

    # functions: compiles is column 3 (no calls column: calls were not counted, nor errors)
    clicks = [("causes", 0), ("causes", 0), ("functions", 3), ("functions", 3),
              ("events", 0), ("events", 1), ("events", 1)]
    page = render(many_rows_report(), "html")
    page = page.replace("</body>", _CLICKS % json.dumps(clicks) + "</body>")
    path = neutral_cwd / "sort.html"
    path.write_text(page)
    dom = subprocess.run([*_browser(neutral_cwd / "chromium-profile"), "--dump-dom",
                          path.as_uri()],
                         capture_output=True, text=True, check=False, timeout=120).stdout
    assert 'data-ready="true"' in dom
    found = re.search(r'<pre id="sort-results">(.*?)</pre>', dom, re.DOTALL)
    assert found, dom[-2000:]
    results = [(r["id"], r["order"], r["values"]) for r in json.loads(unescape(found[1]))]
    seqs = [str(seq) for seq in (16, 15, 13, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)]
    assert results == [
        ("causes", "descending", ["x11", "x2", "x1"]),  # 11 > 2: numbers, not text
        ("causes", "ascending", ["x1", "x2", "x11"]),
        ("functions", "descending", ["12", "3", "2"]),
        ("functions", "ascending", ["2", "3", "12"]),
        ("events", "descending", seqs),
        ("events", "descending", ["fc"] * 2 + ["fb"] + ["fa"] * 11),
        ("events", "ascending", ["fa"] * 11 + ["fb"] + ["fc"] * 2),
    ]


LONG_SCRIPT = """
import sys, time
import jax, jax.numpy as jnp
f = jax.jit(lambda x: x + 1)
for n in range(1, 4):
    f(jnp.ones(n)).block_until_ready()
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def _start(tmp_path, *args):
    script = tmp_path / "long.py"
    script.write_text(LONG_SCRIPT)
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "recompile_cli", "run", *args, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path)
    deadline = time.time() + 120
    line = ""
    while "ready" not in line and time.time() < deadline:
        line = proc.stdout.readline()
    assert "ready" in line
    return proc


def _copied_compiles(log: Path, function: str) -> int:
    """The compiles of ``function`` that the events log's copy holds so far."""
    latest: dict[int, dict] = {}
    for line in log.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line still being written
            continue
        if record.get("type") == "event":
            latest[record["id"]] = record["event"]
    return sum(e["function"] == function and e["compiled"] for e in latest.values())


@requires_private_hooks
def test_kill_9_leaves_a_readable_events_log(cli, tmp_path):
    log = tmp_path / "events.jsonl"
    proc = _start(tmp_path, "--events-log", str(log))
    # The script's "ready" comes straight from the measured process; the supervisor copies
    # the events it streamed a moment later. Killed once they are copied, nothing is lost.
    deadline = time.time() + 60
    while _copied_compiles(log, "<lambda>") < 3 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    _, report = cli.json("report", log, tmp_path=tmp_path)
    mine = [e for e in report["events"] if e["function"] == "<lambda>"]
    assert [(e["compiled"], e["cause"]["code"]) for e in mine] == [
        (True, "first_compile"), (True, "shape"), (True, "shape")]
    assert sum("did not finish" in w for w in report["warnings"]) == 1
    assert cli("report", log).output.count("did not finish") == 1  # the warning, once


@pytest.mark.parametrize("signum, code, words", [(signal.SIGINT, 130, "Ctrl-C"),
                                                 (signal.SIGTERM, 143, "SIGTERM")])
@requires_private_hooks
def test_signals_stop_the_target_and_report(tmp_path, signum, code, words):
    out = tmp_path / "report.json"
    log = tmp_path / "events.jsonl"
    proc = _start(tmp_path, "--output", str(out), "--events-log", str(log))
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    assert words in stderr and "Traceback" not in stderr
    assert "Recompilation events" in stdout
    report = json.loads(out.read_text())
    assert words in report["target_exception"]
    assert [e["cause"]["code"] for e in report["events"] if e["function"] == "<lambda>"] == [
        "first_compile", "shape", "shape"]
    assert json.loads(log.read_text().splitlines()[-1])["type"] == "end"
