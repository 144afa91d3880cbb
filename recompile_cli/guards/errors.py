"""What the runtime guard reports: a ``GuardViolation`` and the warnings and exceptions that
carry it (re-exported by ``recompile_cli.guards``, where the guard itself lives).

Every message is one line of inert text: function names, static values and paths come from the
user's program, so control characters (ESC, line breaks) are shown as escapes
(``render.escape.terminal``); no line of a message can start a GitHub workflow command
(``::error::``), since a message is a single line that starts with ``recompile-cli guard:``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recompile_cli.render.escape import terminal


def inert(message: str) -> str:
    """A guard message as it may be printed: one line, control characters shown as escapes."""
    return terminal(message)


@dataclass(frozen=True, slots=True)
class GuardViolation:
    """One compile beyond a guarded function's limit, explained.

    Attributes:
        function: the function's name; ``defined_at`` its ``file:line``.
        compiles: its compiles counted so far, this one included; ``limit`` the allowed number.
        cause: the primary cause code (``shape``, ``dtype``, ``static_value``...), with the
            ``argument`` and its value ``before`` -> ``after`` where known, and ``detail``.
        call_site: ``file:line`` of the user's call that compiled.
        suggestion: how to avoid it, where the analysis has one.
        message: all of it in one paragraph (one line, escaped), as warned, logged or raised.
        slow_calls: for a function beyond ``max_slow_calls`` (``SlowCallLimitExceeded``): its
            slow calls counted so far, this one included (``limit`` is then that limit, ``cause``
            the slow-call reason code and ``call_site`` the line responsible); 0 otherwise.
    """

    function: str
    defined_at: str | None
    compiles: int
    limit: int
    cause: str
    argument: str | None
    before: str | None
    after: str | None
    detail: str
    call_site: str | None
    suggestion: str | None
    message: str
    slow_calls: int = 0


class RecompileWarning(UserWarning):
    """Warned by ``guard(on="warn")`` when a function compiles beyond its limit.

    ``.violation`` holds the ``GuardViolation`` (None for the subclasses below, which report
    the guard itself, not a compile).
    """

    def __init__(self, violation: GuardViolation | str) -> None:
        message = violation if isinstance(violation, str) else violation.message
        super().__init__(inert(message))
        self.violation = None if isinstance(violation, str) else violation


class SlowCallWarning(RecompileWarning):
    """Warned by ``guard(on="warn", max_slow_calls=N)`` when a function first makes more
    than N slow calls (calls JAX runs through its Python dispatch without compiling)."""


class GuardBlindWarning(RecompileWarning):
    """The guard (or a recording's gate) can no longer see compiles: the program removed its
    ``jax.monitoring`` listeners. The guard puts them back and says so."""


class UnmatchedBudgetWarning(RecompileWarning):
    """A budget (a glob of ``functions``/``max_compiles``, a ``check()`` or pytest marker limit
    per function) that matched no function: it guarded nothing."""


class RecompileLimitExceeded(RuntimeError):
    """Raised by ``guard(on="raise")`` from the jitted call that compiled beyond the limit.

    ``.violation`` holds the ``GuardViolation``.
    """

    def __init__(self, violation: GuardViolation) -> None:
        super().__init__(inert(violation.message))
        self.violation = violation

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.violation,))


class SlowCallLimitExceeded(RecompileLimitExceeded):
    """Raised by ``guard(on="raise", max_slow_calls=N)`` from each slow call of a function
    beyond N (a ``RecompileLimitExceeded``, so one ``except`` catches both)."""


class GuardBlinded(RuntimeError):
    """Raised by ``guard(on="raise")`` when it can no longer see compiles (the program removed
    its ``jax.monitoring`` listeners): from ``jax.monitoring.clear_event_listeners()``, from the
    next compile, or when the guard is removed, whichever notices first."""

    def __init__(self, message: str) -> None:
        super().__init__(inert(message))


# Shown (and pickled) under the module users import them from.
for _class in (GuardViolation, RecompileWarning, GuardBlindWarning, UnmatchedBudgetWarning,
               RecompileLimitExceeded, GuardBlinded, SlowCallWarning, SlowCallLimitExceeded):
    _class.__module__ = "recompile_cli.guards"
