"""pytest plugin: ``@pytest.mark.max_compiles(...)`` and the ``recompiles`` fixture.

Registered through the ``pytest11`` entry point. A marked test, or one using the fixture, starts
from clean JAX caches and is recorded with the Python API (``recompile_cli.record``); a broken
budget fails the test with the same message as ``recompile-cli``'s gates (function, counts,
causes with the argument diff), from the same gate evaluator. JAX is imported only in tests
that use the plugin.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from recompile_cli.api.report import RecompileReport

MARKER = "max_compiles"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(n=None, **per_function): fail the test when a function compiles "
        "more often: max_compiles(1) for every user function, max_compiles(train_step=1) per "
        "function (globs allowed).")


class Recompiles:
    """What the ``recompiles`` fixture gives a test: the recording so far, and assertions.

    A ``recompile_cli.record()`` of the test body; ``report`` is its ``RecompileReport``.
    """

    def __init__(self, name: str) -> None:
        # the plugin loads in every pytest session: the API only in tests that use it
        from recompile_cli.api.recording import Recording

        self._recording = Recording(name)
        self._recording.__enter__()

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
    """Records the test (from clean JAX caches); assert on ``compiles()``, ``causes()``..."""
    recording = Recompiles(request.node.nodeid)
    yield recording
    recording.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return (yield)
    # the plugin loads in every pytest session: the API only in marked tests
    from recompile_cli.api.report import compile_limits, gated
    from recompile_cli.guards.errors import UnmatchedBudgetWarning

    limit = marker.args[0] if marker.args else None
    usage = None
    try:
        if len(marker.args) > 1:
            raise ValueError(f"takes at most one positional limit, got {marker.args!r}")
        compile_limits(limit, dict(marker.kwargs))
    except (TypeError, ValueError) as exc:
        usage = f"@pytest.mark.{MARKER}: {exc}"
    if usage is not None:  # a usage message, not a traceback into the plugin
        pytest.fail(f"recompile-cli: {usage}", pytrace=False)
    shared = getattr(item, "funcargs", {}).get("recompiles")
    recording = shared if isinstance(shared, Recompiles) else Recompiles(item.nodeid)
    try:
        result = yield
    finally:
        listening = recording.stop() if recording is not shared else recording.listening()
    checked, unmatched = gated(recording.report, limit, dict(marker.kwargs))
    for message in unmatched:  # in pytest's warnings summary, at the test
        item.warn(UnmatchedBudgetWarning(message))
    messages = _messages(checked) + ([] if listening else [_BLIND])
    if messages:
        pytest.fail("\n".join(messages), pytrace=False)
    return result
