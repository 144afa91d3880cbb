"""What must hold on every supported JAX (0.4.30 and newer), in both hook modes: counts and times
that match JAX's own ``jax_log_compiles``, listeners that come off without raising (even after the
program cleared them), and JAX left as found (even when the program patched over our hooks)."""

from __future__ import annotations

import collections
import logging
import re
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest
from helpers import user_functions
from jax._src import monitoring as jax_monitoring
from jax_support import PRIVATE_HOOKS, requires_private_hooks

from recompile_cli.capture.jax import hooks as jax_internals
from recompile_cli.capture.jax import listeners
from recompile_cli.capture.jax.arguments import signatures
from recompile_cli.capture.recorder import Recorder

MODES = ["private", "public-only"]


@pytest.fixture
def keep_listeners(monkeypatch):
    """Put JAX's listener lists back after a test that clears them."""
    for name in ("_event_listeners", "_event_duration_secs_listeners",
                 "_event_time_span_listeners", "_scalar_listeners"):
        if hasattr(jax_monitoring, name):
            monkeypatch.setattr(jax_monitoring, name, list(getattr(jax_monitoring, name)))


def _durations() -> int:
    return len(jax_monitoring.get_event_duration_listeners())


def _events() -> int:
    return len(jax_monitoring.get_event_listeners())


# -- counts and times against jax_log_compiles ---------------------------------------------------
_LOG = re.compile(r"Finished (tracing(?: \+ transforming)? (?P<traced>\S+) for p?jit"
                  r"|XLA compilation of (?P<compiled>\S+)) in (?P<secs>[0-9.e-]+) sec")


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reset()

    def reset(self) -> None:
        self.traces: collections.Counter = collections.Counter()
        self.compiles: collections.Counter = collections.Counter()
        self.compile_seconds: collections.Counter = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        match = _LOG.search(record.getMessage())
        if match and match["traced"]:
            self.traces[match["traced"]] += 1
        elif match:
            name = match["compiled"]
            name = name[4:-1] if name.startswith("jit(") and name.endswith(")") else name
            self.compiles[name] += 1
            self.compile_seconds[name] += float(match["secs"])


@pytest.fixture
def log_compiles():
    capture = _Capture()
    logger = logging.getLogger("jax._src.dispatch")
    logger.addHandler(capture)
    previous = jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    try:
        yield capture
    finally:
        jax.config.update("jax_log_compiles", previous)
        logger.removeHandler(capture)


@pytest.mark.parametrize("mode", MODES)
def test_counts_and_times_match_jax_log_compiles(mode, log_compiles):
    def step(x):
        return jnp.sin(x).sum() * 2  # nested jnp jits: JAX < 0.10 sends trace events for them

    def scaled(x, n):
        return jnp.where(x > 0, x * n, 0.0)

    step_jit = jax.jit(step)
    scaled_jit = jax.jit(scaled, static_argnums=1)  # the partial/argument form works everywhere
    a3, a4, a22 = jnp.ones(3), jnp.ones(4), jnp.ones((2, 2))
    log_compiles.reset()  # only what happens while recording
    with Recorder("t", hook_mode=mode) as recorder:
        for x in (a3, a3, a4, a22, a3):
            step_jit(x).block_until_ready()
        for n in (2, 3, 2):
            scaled_jit(a3, n).block_until_ready()
    session = recorder.session
    assert session.environment.hook_mode == ("private" if mode == "private" and PRIVATE_HOOKS
                                             else "public-only")
    top = [e for e in session.events if e.depth == 0]
    traces = collections.Counter(e.function for e in top if e.traced)
    compiles = collections.Counter(e.function for e in session.events if e.compiled)
    compile_seconds = collections.Counter()
    for e in session.events:
        compile_seconds[e.function] += e.compile_seconds
    # Top-level traces of our functions: JAX's log and the recorder agree, and so do the compiles
    # of every function (JAX's internal ones included).
    assert (traces["step"], traces["scaled"]) == (3, 2)
    assert (log_compiles.traces["step"], log_compiles.traces["scaled"]) == (3, 2)
    assert {k: v for k, v in compiles.items() if v} == dict(log_compiles.compiles)
    assert (compiles["step"], compiles["scaled"]) == (3, 2)
    for name in ("step", "scaled"):  # the same measurement: JAX logs what it sends as an event
        assert compile_seconds[name] == pytest.approx(log_compiles.compile_seconds[name],
                                                      abs=1e-4)
        assert compile_seconds[name] > 0
    mine = [e for e in top if e.function in ("step", "scaled")]
    assert all(e.traced and e.compiled and e.trace_seconds > 0 and e.lower_seconds > 0
               for e in mine)


# -- listeners come off, whatever happened to them ------------------------------------------------
def test_unregistering_never_raises():
    def listener(event, duration, **kwargs):
        pass

    before = _durations()
    assert listeners.unregister_listener("event_duration", listener) is False  # never added
    listeners.register_listener("event_duration", listener)
    assert _durations() == before + 1
    assert listeners.unregister_listener("event_duration", listener) is True
    assert _durations() == before
    assert listeners.unregister_listener("event_duration", listener) is False  # twice
    assert _durations() == before


def test_an_adapted_listener_is_found_and_removed_by_its_callback():
    """An adapter (JAX < 0.10) registered by an earlier import of the listeners module (pytest's
    in-process pytester drops and imports it again): this import, which has no record of it,
    still finds it by its callback and removes it, on every JAX."""
    def listener(event, duration, **kwargs):
        pass

    before = _durations()
    jax.monitoring.register_event_duration_secs_listener(listeners._LegacyDurations(listener))
    assert listeners.is_registered("event_duration", listener) is True
    assert listeners.unregister_listener("event_duration", listener) is True
    assert _durations() == before
    assert listeners.is_registered("event_duration", listener) is False


def test_listeners_are_removed_on_every_version():
    durations, events = _durations(), _events()
    with Recorder("t", hook_mode="public-only"):
        assert (_durations(), _events()) == (durations + 1, events + 1)
        jax.jit(lambda x: x + 1)(jnp.ones(2))
    assert (_durations(), _events()) == (durations, events)


@pytest.mark.parametrize("mode", MODES)
def test_program_that_clears_jax_listeners_mid_run(mode, keep_listeners):
    f = jax.jit(lambda x: x * 2)
    with Recorder("t", hook_mode=mode) as recorder:
        f(jnp.ones(2)).block_until_ready()
        jax.monitoring.clear_event_listeners()  # public API: drops ours too
        f(jnp.ones(3)).block_until_ready()
    session = recorder.session  # stop() did not raise
    mine = [e for e in session.events if e.function == "<lambda>" and e.compiled]
    assert len(mine) == 1  # the compile after the clear could not be seen
    assert any("clear_event_listeners" in w for w in session.warnings)
    assert _durations() == 0 and _events() == 0  # nothing of ours is left behind

    # A later run starts from scratch and records normally, and cleans up after itself.
    g = jax.jit(lambda x: x - 1)
    with Recorder("t2", hook_mode=mode) as later:
        g(jnp.ones(2)).block_until_ready()
        g(jnp.ones(3)).block_until_ready()
    assert _durations() == 0 and _events() == 0
    compiled = [e for e in later.session.events if e.function == "<lambda>" and e.compiled]
    assert len(compiled) == 2
    assert not any("clear_event_listeners" in w for w in later.session.warnings)


def test_cli_run_of_a_script_that_clears_listeners(cli, program, keep_listeners, tmp_path):
    script = program("clears", """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda v: v + 1)
        f(jnp.ones(2))
        jax.monitoring.clear_event_listeners()
        f(jnp.ones(3))
        print("script done")
    """)
    result = cli("run", script)
    assert result.exit_code == 0, result.output
    assert "script done" in result.output and "clear_event_listeners" in result.output
    again = program("plain", """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda v: v + 1)
        f(jnp.ones(2)); f(jnp.ones(3))
    """)
    result, report = cli.json("run", again, tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert "clear_event_listeners" not in result.output
    assert user_functions(report)["<lambda>"]["compiles"] == 2


# -- a program that patches over our hooks ---------------------------------------------------------
@requires_private_hooks
def test_program_that_replaces_a_patched_jax_function():
    from jax._src import pjit

    original = pjit._trace_for_jit
    seen = []
    try:
        with Recorder("t") as recorder:
            ours = pjit._trace_for_jit

            def theirs(*args, **kwargs):  # delegates to whatever was there: our wrapper
                seen.append(1)
                return ours(*args, **kwargs)

            pjit._trace_for_jit = theirs
            jax.jit(lambda x: x + 1)(jnp.ones(2))
        assert pjit._trace_for_jit is theirs  # left as they set it
        assert any("_trace_for_jit was replaced" in w for w in recorder.session.warnings)
        assert pjit._pjit_lower is not None and not isinstance(pjit._pjit_lower,
                                                               jax_internals._LowerWrapper)
        # Their function still calls our (now inactive) wrapper: it must just run JAX's.
        events, calls = len(recorder.session.events), len(seen)
        assert jax.jit(lambda x: x * 5)(jnp.ones(2)).tolist() == [5.0, 5.0]
        assert len(seen) > calls and len(recorder.session.events) == events
        x = jnp.ones(3)
        with Recorder("t2") as later:  # a later run still records (their function has an
            jax.jit(lambda x: x * 7)(x)  # unknown signature: it falls back to public-only)
        assert pjit._trace_for_jit is theirs
        assert "unknown signature" in " ".join(later.session.warnings)
        assert [(e.traced, e.compiled) for e in later.session.events
                if e.function == "<lambda>"] == [(True, True)]
    finally:
        pjit._trace_for_jit = original


def test_uninstall_is_idempotent_and_survives_a_deleted_function(monkeypatch):
    if not PRIVATE_HOOKS:
        pytest.skip("no private hooks on this JAX")
    from jax._src import pjit

    hooks = jax_internals.Hooks(lambda info: None, lambda info: None, lambda exc: None)
    hooks.install()
    monkeypatch.delattr(pjit, "_pjit_lower")
    problems = hooks.uninstall()
    assert any("_pjit_lower" in p for p in problems)
    assert hooks.uninstall() == []


# -- names and locations ------------------------------------------------------------------------
@pytest.mark.parametrize("src, func_name, expected", [
    ("f at /p/x.py:12", "f", ("f", "/p/x.py:12")),
    ("meet at noon at /p/x.py:3", "meet at noon", ("meet at noon", "/p/x.py:3")),
    ("look at me", "look at me", ("look at me", None)),
    ("g at <unknown>", "g", ("g", None)),
    ("", "h", ("h", None)),
    (None, None, ("fallback", None)),
])
def test_name_and_location_split_on_the_last_at(src, func_name, expected):
    dbg = SimpleNamespace(func_src_info=src, func_name=func_name)
    assert signatures.name_and_location(dbg, fallback="fallback") == expected


@requires_private_hooks
def test_function_name_containing_at_is_not_a_location():
    def f(x):
        return x + 1

    f.__name__ = f.__qualname__ = "meet at noon"
    with Recorder("t") as recorder:
        jax.jit(f)(jnp.ones(2))
    [event] = [e for e in recorder.session.events if e.function == "meet at noon"]
    assert event.defined_at.endswith(f":{f.__code__.co_firstlineno}")
    assert event.defined_at.rsplit(":", 1)[0].endswith("test_jax_versions.py")


@pytest.mark.parametrize("mode", MODES)
def test_aot_compile_after_another_function_has_a_name(mode):
    def f(x):
        return x * 2

    def g(x):
        return x + 1

    x = jnp.ones(3)
    with Recorder("t", hook_mode=mode) as recorder:
        lowered = jax.jit(f).lower(x)
        jax.jit(g)(x).block_until_ready()
        compiled = lowered.compile()
    assert compiled(x).tolist() == [2.0, 2.0, 2.0]
    events = recorder.session.events
    [g_event] = [e for e in events if e.function == "g"]
    assert g_event.traced and g_event.compiled
    f_events = [e for e in events if e.function == "f"]
    assert sum(e.compiled for e in f_events) == 1
    assert sum(e.traced for e in f_events if e.depth == 0) == 1
    late = next(e for e in f_events if e.compiled)
    assert late.defined_at is None or late.defined_at.endswith(f":{f.__code__.co_firstlineno}")
