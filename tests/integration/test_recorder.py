"""The recorder's contract: nothing on cache hits, never raising into user code, JAX restored."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax._src import monitoring as jax_monitoring
from jax._src import pjit
from jax_support import requires_private_hooks

from recompile_cli.analysis.report import build_report
from recompile_cli.capture.jax import hooks
from recompile_cli.capture.jax.arguments import signatures
from recompile_cli.capture.recorder import Recorder


def _listener_count() -> int:
    return len(jax_monitoring.get_event_duration_listeners())


@requires_private_hooks
def test_jax_is_left_as_found():
    trace, lower, listeners = pjit._trace_for_jit, pjit._pjit_lower, _listener_count()
    with Recorder("t") as recorder:
        assert pjit._trace_for_jit is not trace and _listener_count() == listeners + 1
        jax.jit(lambda x: x + 1)(jnp.ones(2))
    assert pjit._trace_for_jit is trace and pjit._pjit_lower is lower
    assert _listener_count() == listeners
    events = len(recorder.session.events)
    jax.jit(lambda x: x * 3)(jnp.ones(5))  # after stop: not recorded
    assert len(recorder.session.events) == events


@requires_private_hooks
def test_jax_is_restored_when_the_program_raises():
    trace = pjit._trace_for_jit
    with pytest.raises(ZeroDivisionError), Recorder("t"):
        1 / 0
    assert pjit._trace_for_jit is trace


def test_nothing_of_ours_runs_on_cache_hits(monkeypatch):
    calls = []

    def counting(original):
        def wrapper(*args, **kwargs):
            calls.append(original.__name__)
            return original(*args, **kwargs)
        wrapper.__name__ = original.__name__
        return wrapper

    # Every entry point JAX can call into: the two private hooks and the public listeners.
    monkeypatch.setattr(hooks.Hooks, "_trace_for_jit",
                        counting(hooks.Hooks._trace_for_jit))
    monkeypatch.setattr(hooks._LowerWrapper, "__call__",
                        counting(hooks._LowerWrapper.__call__))
    monkeypatch.setattr(Recorder, "_on_duration", counting(Recorder._on_duration))
    monkeypatch.setattr(Recorder, "_on_event", counting(Recorder._on_event))
    f = jax.jit(lambda x: x * 2)
    x = jnp.ones(4)
    with Recorder("t") as recorder:
        f(x).block_until_ready()
        after_first = len(calls)
        for _ in range(1000):
            f(x)
        f(x).block_until_ready()
        assert after_first > 0 and len(calls) == after_first
    report = build_report(recorder.session)
    [row] = [f for f in report.functions if f.name == "<lambda>"]
    assert (row.traces, row.compiles) == (1, 1)


_LEFT_BEHIND = """
import gc, sys, jax, jax.numpy as jnp
from recompile_cli.capture.recorder import Recorder
f = jax.jit(lambda x, y: jnp.tanh(x) * y + 1.0)
y = jax.ShapeDtypeStruct((), jnp.float32)
def run(first, n):
    for i in range(first, first + n):
        f.trace(jax.ShapeDtypeStruct((i, 4), jnp.float32), y)
def tracked():
    gc.collect()
    return len(gc.get_objects())
recorder = Recorder("t")
if sys.argv[1] == "recorded":
    recorder.start()
run(1, 50)  # JAX's and our first-use caches
before = tracked()
run(100, 300)
print(tracked() - before, len(recorder.snapshot().events) if sys.argv[1] == "recorded" else 0)
"""


@requires_private_hooks
def test_a_recording_gives_the_garbage_collector_nothing_more_to_walk_per_trace():
    """A recording keeps every event until it stops, and each full collection walks every
    tracked object: what it keeps per trace must be untracked (events, drafts, replays, the
    names of slow calls). The same 300 trace-only misses, in two fresh processes, leave about as
    many tracked objects behind recorded as not (1 more per trace: the bounded cache of leaves;
    before the drafts, replays and slow-call names were untracked, 17 more)."""
    import subprocess
    import sys

    def left_behind(mode: str) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", _LEFT_BEHIND, mode], capture_output=True,
                             text=True, check=True).stdout.split()
        return int(out[0]), int(out[1])

    (plain, _), (recorded, events) = left_behind("plain"), left_behind("recorded")
    assert events >= 350  # the lambda's traces (and JAX's jits of its operations) recorded
    assert (recorded - plain) / 300 <= 2, (recorded, plain)


@requires_private_hooks
def test_a_failing_hook_never_raises_into_user_code(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("bug in recompile-cli")

    monkeypatch.setattr(signatures, "trace_info", broken)
    monkeypatch.setattr(hooks, "_lower_info", broken)
    with Recorder("t") as recorder:
        result = jax.jit(lambda x: x + 1)(jnp.ones(3))
    assert result.tolist() == [2.0, 2.0, 2.0]
    assert any("internal recorder error" in w for w in recorder.session.warnings)


def test_a_failing_listener_never_raises_into_user_code(monkeypatch):
    monkeypatch.setattr(Recorder, "_on_stage", lambda self, *a: 1 / 0)
    with Recorder("t", hook_mode="public-only") as recorder:
        assert jax.jit(lambda x: x - 1)(jnp.ones(2)).tolist() == [0.0, 0.0]
    assert any("internal recorder error" in w for w in recorder.session.warnings)


def test_public_only_on_this_jax_restores_listeners_when_the_program_raises():
    listeners = _listener_count()
    with pytest.raises(ZeroDivisionError), Recorder("t", hook_mode="public-only"):
        1 / 0
    assert _listener_count() == listeners


def test_missing_internals_degrade_to_public_events(monkeypatch):
    monkeypatch.setattr(hooks, "probe", lambda: "this JAX version lacks X")
    f = jax.jit(lambda x: x + 1)
    with Recorder("t") as recorder:
        f(jnp.ones(2))
        f(jnp.ones(3))
    session = recorder.session
    assert session.environment.hook_mode == "public-only"
    assert any("lacks X" in w and "public" in w for w in session.warnings)
    mine = [e for e in session.events if e.function == "<lambda>"]
    assert [(e.traced, e.compiled) for e in mine] == [(True, True), (True, True)]
    assert all(e.signature is None for e in mine)


@requires_private_hooks
def test_events_from_threads_are_kept_apart():
    import threading

    f = jax.jit(lambda x: x + 1)
    g = jax.jit(lambda x: x * 2)
    with Recorder("t") as recorder:
        threads = [threading.Thread(target=lambda fn=fn, n=n: fn(jnp.ones(n)))
                   for fn, n in ((f, 3), (g, 5))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    mine = [e for e in recorder.session.events if e.function == "<lambda>"]
    assert sorted(e.signature.leaves["x"].shape for e in mine) == [(3,), (5,)]
    assert all(e.traced and e.compiled for e in mine)
