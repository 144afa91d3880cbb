"""From a recorded run to a warm-up plan, on real JAX: record, ``recompile-cli warmup``, then
``run --after-warmup``: nothing of yours compiles after the plan, a signature the plan lacks is
named with its cause, what cannot be replayed is listed with why."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT, SAMPLES
from jax_support import requires_private_hooks

import recompile_cli
from recompile_cli.session.files import load_session

pytestmark = requires_private_hooks

LOOP = """
import dataclasses
import functools
import sys

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Config:
    hidden: int = 4
    activation: str = "tanh"


CONFIG = Config()


@functools.partial(jax.jit, static_argnames=("config",))
def train_step(params, batch, lr, config):
    def loss(p):
        h = batch["x"] @ p["w"]
        h = jnp.tanh(h) if config.activation == "tanh" else h
        return jnp.mean((h - batch["y"]) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def main(sizes):
    params = {"w": jnp.zeros((4, 1))}
    for n in sizes:
        batch = {"x": jnp.ones((n, 4)), "y": jnp.ones((n, 1))}
        params = train_step(params, batch, 0.1, config=CONFIG)  # lr: a weakly typed scalar
    jax.block_until_ready(params)


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [32, 32, 16, 16, 8])
"""


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def recorded_plan(cli, tmp_path: Path, script: Path, *script_args: str,
                  name: str = "warmup_plan.py") -> Path:
    """Record ``script``, then write its plan; returns the plan's path."""
    session = tmp_path / f"{script.stem}.json"
    result = cli("run", "--save", session, script, *script_args)
    assert result.exit_code == 0, result.output
    plan = tmp_path / name
    result = cli("warmup", session, "-o", plan)
    assert result.exit_code == 0, result.output
    return plan


def after_warmup(cli, tmp_path: Path, plan: Path, script: Path, *args: str):
    return cli.json("run", "--after-warmup", plan, script, *args, tmp_path=tmp_path)


def user_compiles(report: dict, name: str) -> list[dict]:
    return [e for e in report["events"] if e["function"] == name and e["compiled"]
            and e["owner"] == "user"]


def test_the_cycle_compiles_nothing_after_the_warmup(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)
    text = plan.read_text()
    assert text.count("yield 'train_step'") == 3  # three batch shapes, one signature each
    assert "_array((), 'float32', weak_type=True)" in text  # lr, a Python float
    assert "config=_dataclass(_ref('__main__', 'Config'), hidden=4, activation='tanh')" in text
    assert "'x': _array((16, 4), 'float32')" in text
    compile(text, str(plan), "exec")

    result, report = after_warmup(cli, tmp_path, plan, script)
    assert result.exit_code == 0, result.output
    coverage = report["warmup_coverage"]
    assert coverage["compiles_after"] == 0 and coverage["misses"] == []
    assert coverage["compiled"] == 3 and coverage["plan"] == str(plan)
    ended = report["warmup"]["ended_seconds"]
    compiles = user_compiles(report, "train_step")
    assert len(compiles) == 3 and all(e["start_seconds"] < ended for e in compiles)
    assert "warm-up: your functions compiled nothing after it" in result.output


def test_a_signature_removed_from_the_plan_is_named_by_the_gate(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)
    lines = plan.read_text().splitlines(keepends=True)
    label = next(i for i, line in enumerate(lines) if "batch['x']=f32[16,4]" in line)
    start = label - 1  # its comment line
    end = next(i for i in range(label, len(lines)) if lines[i] == "    )\n")
    assert lines[start].startswith("    # first compiled at")
    plan.write_text("".join(lines[:start] + lines[end + 1:]))

    result, report = after_warmup(cli, tmp_path, plan, script)
    assert result.exit_code == 1, result.output
    assert "train_step: 1 compile after the warm-up" in result.output
    assert "the plan lacks train_step(" in result.output and "batch['x']=f32[16,4]" in result.output
    assert "shape at batch['x']: f32[8,4] -> f32[16,4]" in result.output
    assert "against the closest planned signature" in result.output
    (miss,) = report["warmup_coverage"]["misses"]
    assert miss["function"] == "train_step" and miss["causes"][0]["code"] == "shape"
    assert miss["causes"][0]["argument"] == "batch['x']"


def test_a_lambda_jitted_per_call_is_listed_as_not_replayable(cli, tmp_path):
    script = write(tmp_path, "lam.py", """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(x):
            return x * 2

        if __name__ == "__main__":
            for n in (3, 3):
                jax.jit(lambda v: v + 1)(jnp.ones(n))
            step(jnp.ones(3))
    """)
    session = tmp_path / "lam.json"
    assert cli("run", "--save", session, script).exit_code == 0
    plan = tmp_path / "plan.py"
    result = cli("warmup", session, "-o", plan, "-f", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert [p["function"] for p in summary["planned"]] == ["step"]
    (lam,) = [u for u in summary["not_replayable"] if u["function"] == "<lambda>"]
    assert lam["compiles"] == 2 and "a lambda jitted where no module-level name" in lam["reason"]
    assert "- the jitted object cannot be imported: a lambda jitted" in plan.read_text()
    table = cli("warmup", session, "-o", plan)
    assert "Not replayable (not in the plan):" in table.output and "<lambda> (2)" in table.output
    # after the plan, the lambda still compiles: the gate names it, with why it is not planned
    result, _ = after_warmup(cli, tmp_path, plan, script)
    assert result.exit_code == 1
    # the first lambda's call is its first call (warmed there); the second lambda, a new
    # function object, compiles again after it
    assert "<lambda>: 1 compile after the warm-up" in result.output
    assert "warm-up at first call: <lambda> at " in result.output
    assert "not replayable: the jitted object cannot be imported" in result.output


SHARDED = """
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P



@jax.jit
def step(w, x):
    return jnp.tanh(x @ w).sum()


def main():
    mesh = jax.make_mesh((2,), ("batch",))
    w = jnp.ones((4, 2))
    for n in (8, 16):
        x = jax.device_put(jnp.ones((n, 4)), NamedSharding(mesh, P("batch", None)))
        step(w, x).block_until_ready()
    second = jax.devices()[1]
    step(jax.device_put(w, second), jax.device_put(jnp.ones((8, 4)), second)).block_until_ready()


if __name__ == "__main__":
    main()
"""


def cli_process(*args: object, cwd: Path, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", **(env or {})}
    return subprocess.run([sys.executable, "-m", "recompile_cli", *map(str, args)], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=300)


def test_a_sharded_step_on_two_devices_keeps_its_sharding(tmp_path):
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    script = write(tmp_path, "sharded.py", SHARDED)
    done = cli_process("run", "--save", "s.json", script, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    done = cli_process("warmup", "s.json", "-o", "plan.py", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "plan.py").read_text()
    mesh = ("_named(_mesh('cpu', (0, 1), (2,), ('batch',), ('Explicit',)), ('batch', None), "
            "memory_kind='device')")
    assert f"_array((16, 4), 'float32', sharding={mesh})" in text
    assert "_array((4, 2), 'float32', sharding=_device('cpu', 1, memory_kind='device'))" in text
    done = cli_process("run", "--after-warmup", "plan.py", "-o", "after.json", script,
                       cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "after.json").read_text())
    assert report["warmup_coverage"]["compiled"] == 3
    assert report["warmup_coverage"]["compiles_after"] == 0
    # on a machine with one device, the plan skips what needs two, and says so
    done = cli_process("run", "--after-warmup", "plan.py", "-o", "one.json", script,
                       cwd=tmp_path)
    assert done.returncode == 3  # the script itself needs two devices
    report = json.loads((tmp_path / "one.json").read_text())
    skipped = report["warmup"]["skipped"]
    assert len(skipped) == 3 and all("this machine has 1" in s["reason"] for s in skipped)


def test_the_sample_training_loop(cli, tmp_path):
    script = SAMPLES / "train_loop.py"
    plan = recorded_plan(cli, tmp_path, script, "--epochs", "1")
    result, report = after_warmup(cli, tmp_path, plan, script, "--epochs", "1")
    assert result.exit_code == 0, result.output
    assert report["warmup_coverage"]["compiled"] == 2
    assert report["warmup_coverage"]["compiles_after"] == 0
    # JAX's own eager functions compile after it: reported, not gated
    assert report["warmup_coverage"]["others_after"]["jax"] > 0
    # in threads too
    result, report = cli.json("run", "--after-warmup", plan, "--warmup-parallel", "2", script,
                              "--epochs", "1", tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report["warmup_coverage"]["compiles_after"] == 0


def test_the_warmup_survives_in_the_events_log(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)
    log = tmp_path / "run.jsonl"
    saved = tmp_path / "after.json"
    result = cli("run", "--after-warmup", plan, "--events-log", log, "--save", saved, script,
                 "32", "7")
    assert result.exit_code == 1
    records = [json.loads(line) for line in log.read_text().splitlines()]
    warmups = [r for r in records if r["type"] == "warmup"]
    assert len(warmups) == 1 and warmups[0]["warmup"]["compiled"] == 3
    # cut the log after its last event (a killed run): the warm-up is still known
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(line + "\n" for line in log.read_text().splitlines()
                           if json.loads(line)["type"] != "end"))
    for source in (log, cut):
        assert load_session(source).warmup == load_session(saved).warmup
    report = cli("report", cut)
    assert "warm-up miss: train_step compiles at" in report.output
    assert "shape at batch['x'] (f32[8,4] -> f32[7,4])" in report.output


def test_the_guard_runs_the_plan_and_raises_on_a_signature_it_lacks(tmp_path, monkeypatch):
    module = write(tmp_path, "guarded_loop.py", LOOP)
    monkeypatch.syspath_prepend(str(tmp_path))
    import guarded_loop

    with recompile_cli.record(f"{module}:main") as rec:  # its project: tmp_path
        guarded_loop.main([32, 16])
    from recompile_cli.analysis.warmup.plan import plan
    from recompile_cli.render.warmup_plan import render_plan

    path = tmp_path / "plan.py"
    path.write_text(render_plan(plan(rec.session), "test", str(tmp_path)))
    assert f"_FILES = {{'guarded_loop': '{module.name}'}}" in path.read_text()
    import jax

    jax.clear_caches()
    with recompile_cli.guard(after_warmup=path, on="raise") as guard:
        guarded_loop.main([32, 16, 32])  # covered: nothing compiles
        with pytest.raises(recompile_cli.guards.RecompileLimitExceeded) as raised:
            guarded_loop.main([5])
    assert guard.session().warmup is not None and guard.session().warmup.compiled == 2
    message = str(raised.value)
    assert "train_step compiled 1 time after the warm-up plan, limit 0" in message
    assert "the plan lacks train_step(" in message and "batch['x']=f32[5,4]" in message
    assert "shape at batch['x']: f32[16,4] -> f32[5,4]" in message
    with pytest.raises(ValueError, match="no such file"):
        recompile_cli.guard(after_warmup=tmp_path / "missing.py")


def test_check_runs_the_plan_of_a_budget_target(cli, tmp_path, monkeypatch):
    script = write(tmp_path, "loop.py", LOOP)
    recorded_plan(cli, tmp_path, script, "32", "16")
    budget = tmp_path / "recompile-budget.yaml"
    budget.write_text("targets:\n"
                      "  - script: loop.py\n    script_args: ['16', '32']\n"
                      "    after_warmup: warmup_plan.py\n"
                      "  - script: loop.py\n    script_args: ['16', '8']\n"
                      "    after_warmup: warmup_plan.py\n")
    monkeypatch.chdir(tmp_path)
    result = cli("check", budget)
    assert result.exit_code == 1, result.output
    assert "train_step: 1 compile after the warm-up" in result.output
    assert "batch['x']=f32[8,4]" in result.output
    budget.write_text("targets:\n  - script: loop.py\n    after_warmup: nowhere.py\n")
    result = cli("check", budget)
    assert result.exit_code == 2 and "after_warmup: nowhere.py: no such file" in result.output


def test_a_forecast_emits_a_plan_before_any_run(cli, tmp_path):
    plan = tmp_path / "forecast_plan.py"
    result = cli("forecast", f"{SAMPLES / 'train_loop.py'}:train_step", "--args",
                 SAMPLES / "train_loop.yaml", "--emit-warmup", plan)
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and plan.read_text().count("yield 'train_step'") == 2
    result, report = after_warmup(cli, tmp_path, plan, SAMPLES / "train_loop.py", "--epochs",
                                  "1")
    assert result.exit_code == 0, result.output
    assert report["warmup_coverage"]["compiles_after"] == 0
    # profile runs it after importing the target, before the spec's calls
    result, report = cli.json("profile", f"{SAMPLES / 'train_loop.py'}:train_step", "--args",
                              SAMPLES / "train_loop.yaml", "--after-warmup", plan,
                              tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert report["warmup_coverage"] == {**report["warmup_coverage"], "compiled": 2,
                                         "compiles_after": 0}
    assert [e["call_index"] for e in user_compiles(report, "train_step")] == [None, None]



def test_a_forecast_plan_that_would_run_a_file_outside_the_project_is_exit_2_after_the_report(
        cli, tmp_path, monkeypatch):
    """The forecast's report is out and its plan refused (exit 2, no traceback) when the target
    lives in a module outside the project its program is in."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "outside_step.py").write_text(
        "import jax\n@jax.jit\ndef step(x):\n    return x * 2\n")
    (tmp_path / "proj" / "prog.py").write_text("from outside_step import step\n")
    (tmp_path / "proj" / "spec.yaml").write_text("calls:\n  - args: [{array: [3]}]\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.delitem(sys.modules, "outside_step", raising=False)
    plan = tmp_path / "proj" / "plan.py"
    result = cli("forecast", f"{tmp_path / 'proj' / 'prog.py'}:step", "--args",
                 tmp_path / "proj" / "spec.yaml", "--emit-warmup", plan)
    assert result.exit_code == 2, result.output
    assert "step: 1 compile" in result.stdout  # the report is out
    assert "outside_step.py" in result.stderr and "Traceback" not in result.output
    assert not plan.exists()


LIBRARIES = """
from typing import NamedTuple

import equinox as eqx
import flax.struct
import jax
import jax.numpy as jnp
import optax


@flax.struct.dataclass
class State:
    params: dict
    opt_state: optax.OptState
    scale: float = flax.struct.field(pytree_node=False, default=1.0)


class Batch(NamedTuple):
    x: jax.Array
    y: jax.Array


TX = optax.adam(1e-3)


@jax.jit
def flax_step(state, batch):
    def loss(p):
        return jnp.mean((batch.x @ p["w"] - batch.y) ** 2) * state.scale
    grads = jax.grad(loss)(state.params)
    updates, opt_state = TX.update(grads, state.opt_state, state.params)
    return state.replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state)


@jax.jit
def eqx_forward(model, x):
    return jax.vmap(model)(x)


@eqx.filter_jit
def eqx_filtered(model, x):
    return jax.vmap(model)(x)


if __name__ == "__main__":
    params = {"w": jnp.zeros((4, 1))}
    state = State(params, TX.init(params), 2.0)
    for n in (8, 16):
        state = flax_step(state, Batch(jnp.ones((n, 4)), jnp.ones((n, 1))))
    model = eqx.nn.Linear(4, 2, key=jax.random.PRNGKey(0))
    eqx_forward(model, jnp.ones((3, 4))).block_until_ready()
    eqx_filtered(model, jnp.ones((3, 4))).block_until_ready()
"""


def test_flax_optax_and_equinox_arguments(cli, tmp_path):
    pytest.importorskip("equinox")
    pytest.importorskip("flax")
    script = write(tmp_path, "libs.py", LIBRARIES)
    plan = recorded_plan(cli, tmp_path, script)
    text = plan.read_text()
    assert "_node(\n            _ref('__main__', 'State'),\n            (2.0,)," in text
    assert "_ref('optax._src.transform', 'ScaleByAdamState')" in text
    assert "_ref('equinox.nn._linear', 'Linear')" in text
    assert "_jitted('__main__', 'eqx_filtered._cached')" in text  # equinox.filter_jit's jit
    result, report = after_warmup(cli, tmp_path, plan, script)
    assert result.exit_code == 0, result.output
    assert report["warmup_coverage"]["misses"] == []
    assert report["warmup_coverage"]["compiled"] == 4  # flax_step twice, eqx_forward, filtered


def test_the_persistent_cache_filled_by_a_build_step_is_hit_by_the_job(tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    assert cli_process("run", "--save", "run.json", script, cwd=tmp_path).returncode == 0
    assert cli_process("warmup", "run.json", "-o", "plan.py", cwd=tmp_path).returncode == 0
    cache = tmp_path / "cache"
    build = subprocess.run(
        [sys.executable, "plan.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "JAX_COMPILATION_CACHE_DIR": str(cache),
             "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"})
    assert build.returncode == 0, build.stderr
    assert "warm-up: 3 signatures compiled, 0 skipped" in build.stdout
    done = cli_process("run", "--compilation-cache", cache, "-f", "json", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    outcomes = [e["persistent_cache"] for e in user_compiles(report, "train_step")]
    assert outcomes == ["hit", "hit", "hit"]


def test_plans_that_cannot_run(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)
    broken = tmp_path / "broken.py"
    broken.write_text(plan.read_text().replace("_jitted('__main__', 'train_step')",
                                               "_jitted('__main__', 'renamed_step')"))
    result, report = after_warmup(cli, tmp_path, broken, script)
    assert result.exit_code == 3
    assert "the warm-up plan broken.py raised AttributeError" in report["target_exception"]
    assert report["warmup"]["error"] and not user_compiles(report, "train_step")  # no workload
    # a script without a main guard: warmed at its first call (test_warmup_first_call.py)
    flat = write(tmp_path, "flat.py", LOOP.replace('if __name__ == "__main__":\n    ', ""))
    result, report = after_warmup(cli, tmp_path, recorded_plan(cli, tmp_path, flat), flat)
    assert result.exit_code == 0, result.output
    assert report["warmup"]["at_first_call"] and report["warmup_coverage"]["misses"] == []
    assert cli("run", "--after-warmup", tmp_path / "none.py", script).exit_code == 2
    assert cli("run", "--after-warmup", script, script).exit_code == 2  # no warm_up()
    result = cli("run", "--warmup-parallel", "2", script)
    assert result.exit_code == 2 and "pass --after-warmup" in result.output


def test_a_public_only_session_has_nothing_to_plan(cli, tmp_path):
    script = write(tmp_path, "loop.py", LOOP)
    session = tmp_path / "public.json"
    assert cli("run", "--hook-mode", "public-only", "--save", session, script).exit_code == 0
    result = cli("warmup", session, "-o", tmp_path / "plan.py")
    assert result.exit_code == 2 and "public-only mode" in result.output
    assert not (tmp_path / "plan.py").exists()


def test_a_session_naming_a_file_outside_the_project_gets_no_plan(cli, tmp_path):
    """Stored files are data: a session edited so that its replays name a file outside the
    recorded project root (``..``, an absolute path, a link that resolves outside) is refused
    when the plan is written (exit 2, naming the file, no plan); a plan that is written names
    every module it imports and every file it may run in its docstring."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    script = write(project, "loop.py", LOOP)
    plan = recorded_plan(cli, tmp_path, script)
    docstring = ast.get_docstring(ast.parse(plan.read_text())) or ""
    written = ast.literal_eval(next(line for line in plan.read_text().splitlines()
                                    if line.startswith("_FILES = ")).partition(" = ")[2])
    assert written == {"__main__": os.path.relpath(script, tmp_path)}
    assert f"project root, {project}." in docstring
    assert f"    __main__  {script}\n" in docstring + "\n"  # every file the plan may run

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("open('PWNED', 'w').close()\n")
    (project / "link.py").symlink_to(outside / "evil.py")
    session = json.loads((tmp_path / "loop.json").read_text())
    for module, evil, why in [
            ("evil_helper", "../../outside/evil.py", "not an absolute path"),
            ("evil_helper", f"{project}/../outside/evil.py", "'..'"),
            ("evil_helper", str(outside / "evil.py"), f"outside the project root '{project}'"),
            ("evil_helper", str(project / "link.py"), "once its links are resolved"),
            ("__main__", str(outside / "evil.py"), "but the script it records running is")]:
        edited = json.loads(json.dumps(session))
        for event in edited["events"]:
            if event.get("replay"):
                event["replay"].setdefault("files", {})[module] = evil
        hostile = tmp_path / "hostile.json"
        hostile.write_text(json.dumps(edited))
        target = tmp_path / "hostile_plan.py"
        result = cli("warmup", hostile, "-o", target)
        assert result.exit_code == 2, (evil, result.output)
        assert repr(evil) in result.output and why in result.output, result.output
        assert "Refusing to write a plan" in result.output
        assert not target.exists()
    assert not (tmp_path / "PWNED").exists() and not (project / "PWNED").exists()


def test_a_plan_that_is_a_folder_or_a_fifo_is_named_as_such(cli, program, tmp_path):
    """Issue 44: --after-warmup given a folder or a FIFO said "no such file"."""
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    script = program("s", "print('ran')\n")
    for plan, words in ((tmp_path, "a folder"), (fifo, "not a regular file")):
        result = cli("run", "--after-warmup", plan, script)
        assert result.exit_code == 2 and f"{plan}: {words}" in result.output, result.output
        assert "ran" not in result.stdout
