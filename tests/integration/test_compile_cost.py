"""Compile cost on real JAX (issue 20): sample_programs/heavy.py's 300-step Python loop and its
16 MB closed-over numpy table are named by line, with sizes and fixes, in every report format;
the JSON and CSV carry per-compile equations; the per-line counts agree with JAX's own
``eqn_count_pprof`` profile; the budget and regression gates and their CI outputs."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

import jax
import pytest
from helpers import SAMPLES, budget, on_python_path
from jax_support import requires_private_hooks

from recompile_cli.capture.jax.programs import cost as jax_cost
from recompile_cli.capture.recorder import Recorder

HEAVY = SAMPLES / "heavy.py"
LOOP = "sample_programs/heavy.py:23 produced 1,500 of 1,530 equations (a Python loop unrolled " \
       "300 times): use jax.lax.scan or jax.lax.fori_loop"
TABLE = "16.0 MB numpy array TABLE (float32[2048,2048]) (defined at sample_programs/heavy.py:12)" \
        " captured at sample_programs/heavy.py:24 is embedded in the program of simulate: pass " \
        "it as an argument"


@pytest.fixture(scope="module")
def heavy_session(tmp_path_factory):
    """heavy.py run once through the CLI, its session saved."""
    from typer.testing import CliRunner

    from recompile_cli.cli.app import app

    saved = tmp_path_factory.mktemp("heavy") / "heavy.json"
    jax.clear_caches()
    result = CliRunner().invoke(app, ["run", "--save", str(saved), str(HEAVY)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return saved


@requires_private_hooks
def test_the_json_report_carries_equations_constants_and_the_patterns(cli, heavy_session,
                                                                      tmp_path, monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    result = cli("report", heavy_session, "--format", "json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    events = {e["function"]: e for e in report["events"] if e["owner"] == "user"}
    simulate, normalize = events["simulate"], events["normalize"]
    assert (simulate["equations"], simulate["constants_bytes"]) == (1530, 16 * 2**20)
    assert (normalize["equations"], normalize["constants_bytes"]) == (21, 0)
    cost = simulate["cost"]
    assert cost["lines"][0] == {"location": str(HEAVY) + ":23", "equations": 1500,
                                "in_bodies": 0, "group": 5, "repeats": 300}
    assert cost["module_ops"] > 1500 and cost["walked"] == 1530
    (constant,) = cost["large_constants"]
    assert (constant["variable"], constant["defined_at"], constant["captured_at"]) == (
        "TABLE", f"{HEAVY}:12", f"{HEAVY}:24")
    assert cost["inlined"] == [[f"normalize@{HEAVY}:15", 21]]
    section = report["compile_cost"]
    assert [f["function"] for f in section["functions"]] == ["simulate", "normalize"]
    kinds = [(p["kind"], p["function"]) for p in section["patterns"]]
    # normalize's 21 equations are 1% of simulate's: too small to be worth a word
    assert kinds == [("unrolled_loop", "simulate"), ("large_constant", "simulate")]
    messages = [p["message"] for p in section["patterns"]]
    assert messages[0].startswith(LOOP) and messages[1].startswith(TABLE)
    assert section["patterns"][0]["equations_saved"] == 1495


@requires_private_hooks
@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_every_human_format_names_the_loop_and_the_table(cli, heavy_session, fmt,
                                                          monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    result = cli("report", heavy_session, "--format", fmt)
    assert result.exit_code == 0
    text = result.stdout
    assert "Compile cost" in text
    if fmt == "markdown":  # Markdown escapes the underscore of sample_programs
        text = text.replace("\\_", "_")
    assert LOOP in text and TABLE in text and "inlined" not in text
    assert "1,530 equations" in text and "16.0 MB" in text
    if fmt == "html":
        assert 'class="bar"' in text and "width:98.0%" in text  # the loop line's bar
        assert "http" not in text.split("<h2>Compile cost</h2>")[1].split("</table>")[0]
        # a column per header, and cells set apart (they ran together: "train.py:95 281")
        table = text.split('<table class="cost"')[1].split("</table>")[0]
        assert re.findall(r"<th[^>]*>([^<]*)</th>", table) == [
            "line", "equations", "share", "est. compile s", "repeats"]
        style = text.split("<style>")[1].split("</style>")[0]
        rules: dict[str, str] = {}
        for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", style):
            for selector in selectors.split(","):
                rules[selector.strip()] = rules.get(selector.strip(), "") + body
        for cell in ("td", "th"):
            assert "padding" in rules[f".recompile-cli table.cost {cell}"]
            assert "border" in rules[f".recompile-cli table.cost {cell}"]


@requires_private_hooks
def test_the_csv_files_carry_the_equations_and_the_lines(cli, heavy_session, tmp_path):
    folder = tmp_path / "csv"
    folder.mkdir()
    result = cli("report", heavy_session, "--format", "csv", "--output", f"{folder}/")
    assert result.exit_code == 0, result.output
    events = {row["function"]: row for row in csv.DictReader(io.StringIO(
        (folder / "events.csv").read_text())) if row["owner"] == "user"}
    assert (events["simulate"]["equations"], events["simulate"]["constants_bytes"]) == (
        "1530", str(16 * 2**20))
    assert events["simulate"]["top_line"] == f"{HEAVY}:23"
    lines = list(csv.DictReader(io.StringIO((folder / "compile_cost.csv").read_text())))
    loop = next(row for row in lines if row["function"] == "simulate")
    assert (loop["line"], loop["equations"], loop["repeats"]) == (f"{HEAVY}:23", "1500", "300")


@requires_private_hooks
def test_the_fixed_program_has_no_pattern_left(cli, tmp_path):
    result, report = cli.json("run", str(HEAVY), "--fixed", tmp_path=tmp_path)
    assert result.exit_code == 0
    (fixed,) = [e for e in report["events"] if e["function"] == "simulate_fixed"]
    assert fixed["equations"] < 50 and fixed["cost"]["in_bodies"] > 0
    assert fixed["cost"]["large_constants"] == [] and fixed["constants_bytes"] == 0
    kinds = [p["kind"] for p in report["compile_cost"]["patterns"]]
    assert kinds == []
    assert "in loop or branch bodies, each body counted once" in cli(
        "report", tmp_path / "report-0.json").stdout


def test_public_only_mode_says_cost_needs_the_private_hooks(cli, tmp_path):
    result, report = cli.json("run", "--hook-mode", "public-only", str(SAMPLES / "shapes.py"),
                              tmp_path=tmp_path)
    assert result.exit_code == 0
    assert all(e["equations"] is None and e["cost"] is None for e in report["events"])
    assert "needs the private hooks" in report["compile_cost"]["note"]
    table = cli("run", "--hook-mode", "public-only", str(SAMPLES / "shapes.py")).stdout
    assert "Compile cost" in table and "needs the private hooks" in table


# -- the cross-check with JAX's own per-line equation counts ------------------------------------
def _varints(data: bytes, i: int, end: int):
    """(field number, wire type, value) of a protobuf message (a minimal reader)."""
    while i < end:
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            yield field, wire, value
        elif wire == 2:
            size, i = _varint(data, i)
            yield field, wire, data[i:i + size]
            i += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, i
        shift += 7


def _packed(value) -> list[int]:
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):
        number, i = _varint(value, i)
        out.append(number)
    return out


def jax_lines(jaxpr) -> Counter:
    """Equations per ``file:line`` as JAX's ``pprof_equation_profile`` counts them (the
    ``JAX_DUMP_IR_MODES=eqn_count_pprof`` dump): each sample's first location."""
    from jax._src import jaxpr_util

    data = gzip.decompress(jaxpr_util.pprof_equation_profile(jaxpr))
    strings, samples, locations, functions = [], [], {}, {}
    for field, _, value in _varints(data, 0, len(data)):
        if field == 6:
            strings.append(value.decode())
        elif field == 2:
            parts = dict.fromkeys((1, 2), None)
            for f, _, v in _varints(value, 0, len(value)):
                if f in (1, 2):
                    parts[f] = (parts[f] or []) + _packed(v)
            samples.append(parts)
        elif field == 4:
            ident, line = None, None
            for f, _, v in _varints(value, 0, len(value)):
                if f == 1:
                    ident = v
                elif f == 4:
                    line = dict((g, w) for g, _, w in _varints(v, 0, len(v)))
            locations[ident] = line
        elif field == 5:
            parts = {f: v for f, _, v in _varints(value, 0, len(value))}
            functions[parts[1]] = parts.get(4, 0)
    counts: Counter = Counter()
    for sample in samples:
        ids = sample[1] or []
        if not ids:
            continue
        line = locations[ids[0]]
        counts[f"{strings[functions[line[1]]]}:{line.get(2, 0)}"] += sum(sample[2] or [1])
    return counts


def _traced(path, name, *args):
    sys.path.insert(0, str(path.parent))
    try:
        module = __import__(path.stem)
    finally:
        sys.path.pop(0)
    return getattr(module, name), args


CROSS_CHECKS = {
    "heavy": lambda jnp: ("heavy", "simulate", jnp.ones(1024), jnp.arange(4)),
    "shapes": lambda jnp: ("shapes", "slow_function", jnp.ones((8, 8))),
    "lax_cond": lambda jnp: ("lax_cond", "example_function_lax", jnp.arange(10.0),
                             jnp.array(3)),
}


@requires_private_hooks
@pytest.mark.parametrize("sample", list(CROSS_CHECKS))
def test_per_line_equations_agree_with_jax_own_profile(sample):
    jaxpr_util = pytest.importorskip("jax._src.jaxpr_util")
    if not hasattr(jaxpr_util, "pprof_equation_profile"):
        pytest.skip("this JAX has no eqn_count_pprof profile")
    import jax.numpy as jnp

    stem, name, *args = CROSS_CHECKS[sample](jnp)
    function, args = _traced(SAMPLES / f"{stem}.py", name, *args)
    closed = function.trace(*args).jaxpr
    ours = jax_cost.cost_of(closed, None)
    assert ours is not None and ours.walked == ours.equations
    theirs = jax_lines(closed.jaxpr)
    assert sum(theirs.values()) == ours.equations
    assert ours.lines, sample
    for line in ours.lines:
        assert theirs[line.location] == line.equations, (line, theirs)


# -- gates ----------------------------------------------------------------------------------
LOOP_PROGRAM = """
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    for _ in range({steps}):
        x = jnp.sin(x) * 1.01
    return x

step(jnp.ones(8))
"""


@requires_private_hooks
def test_max_equations_budget_fails_with_the_line_in_every_ci_output(cli, tmp_path,
                                                                     monkeypatch):
    (tmp_path / "prog.py").write_text(LOOP_PROGRAM.format(steps=50))
    path = budget(tmp_path, "targets:\n  - script: prog.py\n    budgets:\n"
                            "      step: {max_equations: 40}\n")
    junit = tmp_path / "junit.xml"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = cli("check", path, "--junit-xml", junit)
    assert result.exit_code == 1, result.output
    message = "step: a compiled program of 100 jaxpr equations, budget 40; "
    assert message in result.output and "prog.py:7 produced 100 of them (a group repeated " \
                                         "50 times)" in result.output
    assert "100 / 40" in result.output  # the equations column of the budget table
    (failure,) = ET.parse(junit).getroot().iter("failure")
    assert failure.get("type") == "max_equations" and message in failure.get("message")
    annotations = [line for line in result.output.splitlines() if line.startswith("::error")]
    assert any("recompile-cli max_equations" in line for line in annotations)
    result = cli("check", budget(tmp_path, "targets:\n  - script: prog.py\n    budgets:\n"
                                           "      step: {max_equations: 100}\n"))
    assert result.exit_code == 0, result.output


@requires_private_hooks
def test_compile_regression_against_a_baseline(cli, tmp_path, monkeypatch):
    program = tmp_path / "prog.py"
    program.write_text(LOOP_PROGRAM.format(steps=10))
    base = tmp_path / "base.json"
    assert cli("run", "--save-baseline", base, program).exit_code == 0
    saved = json.loads(base.read_text())["functions"]["prog.py:step"]
    assert saved["equations"] == 20 and saved["compile_seconds"] > 0
    # the same program: no regression beyond a threshold nothing can cross
    result = cli("run", "--baseline", base, "--fail-on-compile-regression", "1000000",
                 program)
    assert result.exit_code == 0, result.output
    program.write_text(LOOP_PROGRAM.format(steps=30))  # three times the equations
    junit = tmp_path / "junit.xml"
    result = cli("run", "--baseline", base, "--fail-on-compile-regression", "50",
                 "--junit-xml", junit, program)
    assert result.exit_code == 1, result.output
    assert "prog.py:step: 60 equations, baseline 20 (+200%, more than 50%)" in result.output
    types = {f.get("type") for f in ET.parse(junit).getroot().iter("failure")}
    assert "compile_regression" in types
    # without a baseline the option is refused before anything runs
    result = cli("run", "--fail-on-compile-regression", "10", program)
    assert result.exit_code == 2 and "pass --baseline FILE" in result.output


@requires_private_hooks
def test_diff_compares_equations(cli, tmp_path):
    program = tmp_path / "prog.py"
    sessions = []
    for steps in (10, 30):
        program.write_text(LOOP_PROGRAM.format(steps=steps))
        sessions.append(tmp_path / f"s{steps}.json")
        assert cli("run", "--save", sessions[-1], program).exit_code == 0
    result = cli("diff", *sessions)
    assert "equations" in result.output and "20 -> 60 (+200%)" in result.output


@requires_private_hooks
def test_the_cost_is_profiled_on_the_miss_path_only(monkeypatch):
    calls = []
    original = jax_cost.cost_of
    monkeypatch.setattr(jax_cost, "cost_of", lambda *a, **k: calls.append(1) or original(*a, **k))
    import jax.numpy as jnp

    f = jax.jit(lambda x: x * 2)
    x = jnp.ones(3)
    with Recorder("t") as recorder:
        for _ in range(5):
            f(x)
    assert len(calls) == 1  # one compile; the four cached calls never reach it
    (event,) = [e for e in recorder.session.events if e.cost is not None and e.compiled
                and e.owner == "user"]
    assert event.cost.equations == 1


@requires_private_hooks
def test_library_frames_roll_up_to_the_user_line_that_called_them(tmp_path, monkeypatch):
    """A library's equations (anything under site-packages, as flax or optax) count for the
    line of your code that called it, and a big jaxpr's attribution is capped, and says so."""
    library = tmp_path / "site-packages" / "fakelib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(
        "import jax.numpy as jnp\n\ndef layer(x):\n    for _ in range(20):\n"
        "        x = jnp.tanh(x) + 1\n    return x\n")
    user = tmp_path / "userprog.py"
    user.write_text("import jax\nimport fakelib\n\n@jax.jit\ndef model(x):\n"
                    "    y = fakelib.layer(x)\n    return y * 2\n")
    on_python_path(monkeypatch, str(tmp_path / "site-packages"))
    on_python_path(monkeypatch, str(tmp_path))
    for name in ("fakelib", "userprog"):  # another test's module of that name
        monkeypatch.delitem(sys.modules, name, raising=False)
    import jax.numpy as jnp
    import userprog

    with Recorder("t") as recorder:
        userprog.model(jnp.ones(3))
    (event,) = [e for e in recorder.session.events if e.function == "model"]
    assert [(line.location, line.equations, line.repeats) for line in event.cost.lines] == [
        (f"{user}:6", 40, 20), (f"{user}:7", 1, 0)]
    monkeypatch.setattr(jax_cost, "EQUATION_LIMIT", 10)
    capped = jax_cost.cost_of(userprog.model.trace(jnp.ones(3)).jaxpr, None)
    assert (capped.equations, capped.walked, capped.capped) == (41, 10, True)
    assert sum(line.equations for line in capped.lines) == 10
