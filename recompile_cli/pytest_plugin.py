"""pytest plugin: ``@pytest.mark.max_compiles(...)`` and the ``recompiles`` fixture.

Registered through the ``pytest11`` entry point. A marked test, or one using the fixture, starts
from clean JAX caches and is recorded; a broken budget fails the test with the same message as
``recompile-cli``'s gates (function, counts, causes with the argument diff). Heavy imports (JAX,
pandas) happen only in tests that use the plugin.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from recompile_cli.gate.evaluate import Gates

MARKER = "max_compiles"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(n=None, **per_function): fail the test when a function compiles "
        "more often: max_compiles(1) for every user function, max_compiles(train_step=1) per "
        "function (globs allowed).")


class Recompiles:
    """What the ``recompiles`` fixture gives a test: the recording so far, and assertions."""

    def __init__(self, name: str) -> None:
        import jax

        from recompile_cli.capture.recorder import Recorder

        jax.clear_caches()
        self._recorder = Recorder(name).start()
        self._stopped = False

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._recorder.stop()

    @property
    def report(self) -> Any:
        """The analysed recording so far (``recompile_cli.analysis.report.Report``)."""
        from recompile_cli.analysis.report import analyse

        session = self._recorder.session
        return analyse(session if session is not None else self._recorder.snapshot())

    def compiles(self, function: str | None = None) -> int:
        """Compiles of ``function`` (a name), or of all your functions."""
        return int(self._rows(function)["compiles"].sum())

    def traces(self, function: str | None = None) -> int:
        return int(self._rows(function)["traces"].sum())

    def causes(self, function: str) -> list[str]:
        """The primary cause code of each trace or compile of ``function``, in order."""
        report = self.report
        return [report.primary(e).code for e in report.session.events
                if e.function == function and e.depth == 0]

    def assert_max_compiles(self, n: int | None = None, **per_function: int) -> None:
        messages = budget_violations(self.report, _limits(n, per_function))
        if messages:
            raise AssertionError("\n".join(messages))

    def _rows(self, function: str | None) -> Any:
        frame = self.report.functions
        if function is None:
            return frame[frame["owner"] == "user"]
        return frame[frame["name"] == function]


def _limits(n: Any, per_function: dict[str, Any]) -> Gates:
    """The gates of ``max_compiles(n, name=limit, ...)``; ``ValueError`` when a limit is not a
    non-negative integer."""
    from recompile_cli.gate.budgets import Budget
    from recompile_cli.gate.evaluate import Gates

    for name, value in [("n", n), *per_function.items()]:
        if value is None and name == "n":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"@pytest.mark.{MARKER}: {name}={value!r} is not a compile limit. Use "
                f"{MARKER}(N) for every user function or {MARKER}(function_name=N, ...) with "
                "non-negative integers (globs allowed in names).")
    budgets = tuple(Budget(name, max_compiles=limit) for name, limit in per_function.items())
    return Gates(budgets=budgets, max_compiles=n, budget_owners=("user",))


def budget_violations(report: Any, gates: Gates) -> list[str]:
    """The gate evaluator's messages for one test's recording (empty: within budget)."""
    from recompile_cli.gate.evaluate import Gated, evaluate

    result = evaluate([Gated(report.session.target, report, gates)])
    return [f"recompile-cli: {v.message}" for v in result.every_violation]


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
    usage = None
    try:
        if len(marker.args) > 1:
            raise ValueError(f"@pytest.mark.{MARKER} takes at most one positional limit, got "
                             f"{marker.args!r}.")
        gates = _limits(marker.args[0] if marker.args else None, dict(marker.kwargs))
    except ValueError as exc:
        usage = str(exc)
    if usage is not None:  # a usage message, not a traceback into the plugin
        pytest.fail(f"recompile-cli: {usage}", pytrace=False)
    shared = getattr(item, "funcargs", {}).get("recompiles")
    recording = shared if isinstance(shared, Recompiles) else Recompiles(item.nodeid)
    try:
        result = yield
    finally:
        if recording is not shared:
            recording.stop()
    messages = budget_violations(recording.report, gates)
    if messages:
        pytest.fail("\n".join(messages), pytrace=False)
    return result
