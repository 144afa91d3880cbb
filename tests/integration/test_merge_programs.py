"""``merge`` across processes (issue 47, item 4): a function whose same signature lowered to
different programs on different processes is named in the divergence section (table, Markdown,
JSON, the merged session merged again), with what the reports know to differ there (the JAX
configuration each process traced under, the function's trace history), and fails
``--fail-on-divergence``; the same program on every process is never named.

Each "process" is a real recording of the same script in this test's process (the JAX
configuration set around it as a launcher's environment would), saved with its place in a
two-process job, as ``recompile-cli run --save run-{process}.json`` writes it in a
``jax.distributed`` job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jax
import pytest
from jax_support import requires_private_hooks
from msgspec.structs import replace

from recompile_cli.analysis.hosts.divergence import NOTHING_KNOWN
from recompile_cli.session.files import load_session, save_session

pytestmark = requires_private_hooks  # program fingerprints come from the private hooks

MATMUL = """
import jax, jax.numpy as jnp

@jax.jit
def step(x, w):
    return jnp.tanh(x @ w).sum()

@jax.jit
def metric(x):
    return x.sum() * 2

x = jnp.ones((4, 4), jnp.float32)
step(x, x)
metric(x[0])
"""

# the positions are int64 under x64, int32 without: the same f32 argument, another program
POSITIONS = """
import jax, jax.numpy as jnp

@jax.jit
def shifted(x):
    return x + jnp.arange(x.shape[0])

shifted(jnp.ones(4, jnp.float32))
"""

# the scale is read from the environment when the function is traced: nothing the report
# records says so
READS_ENVIRONMENT = """
import os
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return x * float(os.environ["H47_SCALE"])

step(jnp.ones(4, jnp.float32))
"""

# every trace bumps a counter that the program bakes in: the program of f32[4] depends on how
# many times ``step`` was traced before
TRACE_HISTORY = """
import os
import jax, jax.numpy as jnp

traces = 0

@jax.jit
def step(x):
    global traces
    traces += 1
    return x + traces

if os.environ.get("H47_WARM_UP_FIRST"):
    step(jnp.ones(8, jnp.float32))
step(jnp.ones(4, jnp.float32))
"""


@contextmanager
def config(**values: object) -> Iterator[None]:
    """JAX's configuration set as a process's environment would set it, restored after."""
    before = {name: getattr(jax.config, name) for name in values}
    try:
        for name, value in values.items():
            jax.config.update(name, value)
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)


def record(cli, script: Path, folder: Path, index: int) -> str:
    """Record ``script`` in this process and save it as process ``index`` of a job of 2."""
    jax.clear_caches()
    path = folder / f"run-{index}.json"
    result = cli("run", "--save", path, script)
    assert result.exit_code == 0, result.output
    session = load_session(path)
    environment = replace(session.environment, process_index=index, process_count=2)
    save_session(replace(session, environment=environment), path)
    return str(path)


def merged_json(cli, paths: list[str]) -> dict:
    result = cli("merge", *paths, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_config_that_changes_the_lowering_is_named_with_the_function(cli, program, tmp_path):
    script = program("matmul", MATMUL)
    zero = record(cli, script, tmp_path, 0)
    with config(jax_default_matmul_precision="highest"):
        one = record(cli, script, tmp_path, 1)
    result = cli("merge", zero, one, "--fail-on-divergence")
    print(result.stdout)  # the merge report, as a user reads it (pytest -s)
    assert result.exit_code == 1  # the gate: the processes would run different programs
    text = " ".join(result.stdout.split())
    assert "Divergence: 1 function compiles differently across processes" in text
    assert "step (" in text and "programs differ; compiles: 1 on processes 0, 1" in text
    assert ("the same signature (x: f32[4,4], w: f32[4,4]) lowered to different programs: "
            in text)
    assert ("jax config jax_default_matmul_precision: None on process 0; 'highest' on "
            "process 1") in text
    # metric has no matmul: the same program on both, so it is not named
    assert "- metric" not in result.stdout

    data = merged_json(cli, [zero, one])
    (divergence,) = data["divergences"]
    assert (divergence["name"], divergence["aspects"]) == ("step", ["programs"])
    (programs,) = divergence["programs"]
    assert sorted(i for where in programs["programs"].values() for i in where) == [0, 1]
    assert len(programs["programs"]) == 2  # one program per process
    assert programs["differs"] == [
        "jax config jax_default_matmul_precision: None on process 0; 'highest' on process 1"]

    markdown = cli("merge", zero, one, "--format", "markdown").stdout
    assert "- **step (" in markdown and "    - jax config jax_default_matmul_precision" in markdown

    # the merged session keeps each process's configuration: merged again, it says the same
    assert cli("merge", zero, one, "--save", tmp_path / "merged.json").exit_code == 0
    again = merged_json(cli, [str(tmp_path / "merged.json")])
    assert again["divergences"][0]["programs"][0]["differs"] == programs["differs"]


def test_x64_with_the_same_argument_dtypes_lowers_another_program(cli, program, tmp_path):
    script = program("positions", POSITIONS)
    with config(jax_enable_x64=True):
        zero = record(cli, script, tmp_path, 0)
    one = record(cli, script, tmp_path, 1)
    (divergence,) = merged_json(cli, [zero, one])["divergences"]
    assert (divergence["name"], divergence["aspects"]) == ("shifted", ["programs"])
    (programs,) = divergence["programs"]
    assert programs["signature"] == "x: f32[4]"
    assert programs["differs"] == [
        "jax config jax_enable_x64: True on process 0; False on process 1"]


def test_the_same_program_on_every_process_is_never_named(cli, program, tmp_path):
    script = program("matmul", MATMUL)
    with config(jax_default_matmul_precision="highest"):
        paths = [record(cli, script, tmp_path, i) for i in range(2)]
    result = cli("merge", *paths, "--fail-on-divergence")
    assert result.exit_code == 0, result.stdout
    assert "Divergence: none" in result.stdout
    assert "Every process traced and compiled the same programs (2 functions compared)" in (
        result.stdout)
    assert merged_json(cli, paths)["divergences"] == []


def test_a_value_read_at_trace_time_that_no_report_records(cli, program, tmp_path, monkeypatch):
    script = program("reads_environment", READS_ENVIRONMENT)
    paths = []
    for index, scale in enumerate(("2.0", "3.0")):
        monkeypatch.setenv("H47_SCALE", scale)
        paths.append(record(cli, script, tmp_path, index))
    (divergence,) = merged_json(cli, paths)["divergences"]
    assert divergence["aspects"] == ["programs"]
    (programs,) = divergence["programs"]
    assert programs["signature"] == "x: f32[4]"
    assert programs["differs"] == [NOTHING_KNOWN]
    # the same value on both: nothing to name
    monkeypatch.setenv("H47_SCALE", "2.0")
    same = [paths[0], record(cli, script, tmp_path, 1)]
    assert merged_json(cli, same)["divergences"] == []


def test_the_trace_history_that_changed_the_program_is_named(cli, program, tmp_path,
                                                           monkeypatch):
    script = program("trace_history", TRACE_HISTORY)
    zero = record(cli, script, tmp_path, 0)
    monkeypatch.setenv("H47_WARM_UP_FIRST", "1")
    one = record(cli, script, tmp_path, 1)
    (divergence,) = merged_json(cli, [zero, one])["divergences"]
    assert "programs" in divergence["aspects"] and "signatures" in divergence["aspects"]
    (programs,) = divergence["programs"]  # f32[8] ran on process 1 only: not compared
    assert programs["signature"] == "x: f32[4]"
    assert ("traces of the function before this signature's first compile: 0 on process 0; "
            "1 on process 1") in programs["differs"]


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_every_process_but_one_agreeing_is_grouped(cli, program, tmp_path, fmt):
    script = program("matmul", MATMUL)
    paths = [record(cli, script, tmp_path, 0)]
    with config(jax_default_matmul_precision="highest"):
        paths.append(record(cli, script, tmp_path, 1))
    output = " ".join(cli("merge", *paths, "--format", fmt).stdout.split())
    assert "on process 0;" in output and "on process 1" in output
    assert "lowered to different programs" in output
