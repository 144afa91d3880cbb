"""pytest plugin: ``@pytest.mark.max_compiles(...)``, the ``recompiles`` fixture, and
``pytest --recompile``.

Registered through the ``pytest11`` entry point. A marked test, or one using the fixture, starts
with JAX's caches forgotten for every function outside JAX (``Recording(keep_jax_caches=True)``:
JAX's own op-by-op programs stay compiled from test to test) and is recorded with the Python API
(``recompile_cli.record``), a marked one from its setup (its own fixtures; a shared fixture's
setup is paused); a broken budget fails the test with the same message as ``recompile-cli``'s
gates (function, counts, causes with the argument diff), from the same gate evaluator. With
``--recompile`` (or the ini key ``recompile = true``, or ``--recompile-save`` /
``--recompile-compare``) every test is recorded the same way, and ``api.suite`` prints the
end-of-run table, saves the counts and fails the tests whose compiles grew against a saved
baseline. JAX is imported only in tests that are recorded; ``api.suite`` only when the
suite-wide mode is on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from recompile_cli.api.report import RecompileReport
    from recompile_cli.api.suite import Suite

MARKER = "max_compiles"
SUITE: pytest.StashKey[Suite] = pytest.StashKey()  # the suite-wide mode's state, when on
# a recorded test's recording, from its setup (its function-scoped fixtures) to its call
RECORDING: pytest.StashKey[Recompiles] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("recompile-cli", "recompile-cli: JAX compile counts per test")
    group.addoption("--recompile", action="store_true", default=None,
                    help="record every test's JAX traces and compiles (each as in a fresh "
                    "process for every function outside JAX) and print the tests and "
                    "functions with the most compiles at the end (ini: recompile = true)")
    group.addoption("--recompile-save", metavar="FILE", default=None,
                    help="write each test's compiles per function to FILE (JSON), a baseline "
                    "for --recompile-compare; implies --recompile")
    group.addoption("--recompile-compare", metavar="FILE", default=None,
                    help="fail each test that compiles a function more often than in the "
                    "baseline FILE (from --recompile-save); implies --recompile")
    group.addoption("--recompile-top", metavar="N", type=int, default=10,
                    help="rows of the end-of-run tables of --recompile (default 10; 0: all)")
    parser.addini("recompile", type="bool", default=False,
                  help="record every test's JAX compiles, as --recompile does")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(n=None, **per_function): fail the test when a function compiles "
        "more often: max_compiles(1) for every user function, max_compiles(train_step=1) per "
        "function (globs allowed).")
    if (config.getoption("recompile", None) or config.getoption("recompile_save", None)
            or config.getoption("recompile_compare", None) or _ini_flag(config)):
        # the suite-wide mode's module (and the analysis it imports) only when it is on
        from recompile_cli.api.suite import Suite

        suite = Suite(config)
        config.stash[SUITE] = suite
        config.pluginmanager.register(suite, "recompile-cli-suite")


def _ini_flag(config: pytest.Config) -> bool:
    try:
        return bool(config.getini("recompile"))
    except ValueError:  # the ini key is not registered (the plugin was loaded late)
        return False


class Recompiles:
    """What the ``recompiles`` fixture gives a test: the recording so far, and assertions.

    A ``recompile_cli.record()`` of the test body; ``report`` is its ``RecompileReport``.
    """

    def __init__(self, name: str) -> None:
        # the plugin loads in every pytest session: the API only in tests that use it
        from recompile_cli.api.recording import Recording

        # JAX's own programs stay compiled from test to test (``keep_jax_caches``)
        self._recording = Recording(name, keep_jax_caches=True)
        self._recording.__enter__()

    def paused(self) -> Any:
        """A context in which nothing is recorded (a fixture shared by several tests)."""
        recorder = self._recording._recorder
        return recorder.paused() if recorder is not None else contextlib.nullcontext()

    def stop(self) -> bool:
        """End the recording; False when the test removed its listeners (it went blind)."""
        listening = self._recording.listening()
        if self._recording.running:
            self._recording.__exit__(None, None, None)
        return listening

    def listening(self) -> bool:
        """False once the test removed the recording's listeners (see ``Recording``)."""
        return self._recording.listening()

    @property
    def report(self) -> RecompileReport:
        """The analysed recording so far."""
        return self._recording.report

    def compiles(self, function: str | None = None) -> int:
        """Compiles of ``function`` (a name), or of all your functions."""
        return self.report.compiles(function)

    def traces(self, function: str | None = None) -> int:
        return self.report.traces(function)

    def causes(self, function: str) -> list[str]:
        """The primary cause code of each trace or compile of ``function``, in order."""
        return self.report.causes(function)

    def assert_max_compiles(self, n: int | None = None, **per_function: int) -> None:
        from recompile_cli.api.report import gated  # the plugin itself stays light

        checked, unmatched = gated(self.report, n, per_function)
        messages = _messages(checked) + unmatched
        if messages:
            raise AssertionError("\n".join(messages))


def _messages(checked: RecompileReport) -> list[str]:
    return [f"recompile-cli: {v.message}" for v in checked.violations]


_BLIND = ("recompile-cli: the test removed recompile-cli's jax.monitoring listeners (e.g. "
          "jax.monitoring.clear_event_listeners()), so compiles after that were not seen and "
          "the @pytest.mark.max_compiles budget cannot be checked; do not clear the listeners "
          "in a test with a budget")


@pytest.fixture
def recompiles(request: pytest.FixtureRequest) -> Iterator[Recompiles]:
    """Records the test (as in a fresh process for every function outside JAX); assert on
    ``compiles()``, ``causes()``..."""
    started = request.node.stash.get(RECORDING, None)  # a marked or suite-wide test's
    recording = started if started is not None else Recompiles(request.node.nodeid)
    yield recording
    if started is None:
        recording.stop()


def _recorded(item: pytest.Item) -> bool:
    return (item.get_closest_marker(MARKER) is not None
            or item.config.stash.get(SUITE, None) is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A recorded test's recording starts before its fixtures are set up: what its own
    (function-scoped) fixtures compile is the test's."""
    if _recorded(item):
        item.stash[RECORDING] = Recompiles(item.nodeid)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fixture shared by several tests (module, class, package or session scope) is set up
    unrecorded: it would count in whichever test came first."""
    item = getattr(request, "_pyfuncitem", request.node)  # the test (its node: the module...)
    recording = item.stash.get(RECORDING, None) if fixturedef.scope != "function" else None
    if recording is None:
        return (yield)
    with recording.paused():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A recording whose test never reached its call (a fixture raised) is stopped."""
    recording = item.stash.get(RECORDING, None)
    if recording is not None:
        recording.stop()
        del item.stash[RECORDING]
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    marker = item.get_closest_marker(MARKER)
    suite = item.config.stash.get(SUITE, None)
    if marker is None and suite is None:
        return (yield)
    # the plugin loads in every pytest session: the API only in recorded tests
    from recompile_cli.api.report import compile_limits, gated
    from recompile_cli.guards.errors import UnmatchedBudgetWarning

    limit = marker.args[0] if marker is not None and marker.args else None
    usage = None
    try:
        if marker is not None and len(marker.args) > 1:
            raise ValueError(f"takes at most one positional limit, got {marker.args!r}")
        if marker is not None:
            compile_limits(limit, dict(marker.kwargs))
    except (TypeError, ValueError) as exc:
        usage = f"@pytest.mark.{MARKER}: {exc}"
    if usage is not None:  # a usage message, not a traceback into the plugin
        pytest.fail(f"recompile-cli: {usage}", pytrace=False)
    started = item.stash.get(RECORDING, None)  # since the test's setup
    shared = getattr(item, "funcargs", {}).get("recompiles")
    if started is not None:
        recording = started
    else:
        recording = shared if isinstance(shared, Recompiles) else Recompiles(item.nodeid)
    try:
        result = yield
    finally:
        listening = (recording.stop() if recording is not shared or started is not None
                     else recording.listening())
        grown = suite.measured(item, recording.report, listening) if suite is not None else []
    messages = list(grown)
    if marker is not None:
        checked, unmatched = gated(recording.report, limit, dict(marker.kwargs))
        for message in unmatched:  # in pytest's warnings summary, at the test
            item.warn(UnmatchedBudgetWarning(message))
        messages = _messages(checked) + ([] if listening else [_BLIND]) + messages
    if messages:
        pytest.fail("\n".join(messages), pytrace=False)
    return result
