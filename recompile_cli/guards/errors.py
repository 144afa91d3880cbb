"""What the runtime guard reports: a ``GuardViolation`` and the warnings and exceptions that
carry it (re-exported by ``recompile_cli.guards``, where the guard itself lives).

Every message is one line of inert text: function names, static values and paths come from the
user's program, so control characters (ESC, line breaks) are shown as escapes
(``render.escape.terminal``); no line of a message can start a GitHub workflow command
(``::error::``), since a message is a single line that starts with ``recompile-cli guard:``.
IPython shows what the guard raises from the user's line (``_render_traceback_``): the frames of
JAX and recompile_cli below it, where the guard raised, are left out.
"""

from __future__ import annotations

import sys
import traceback
import types
from dataclasses import dataclass
from typing import Any

from recompile_cli.capture.code.stack import is_user_file
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


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` from the first frame of the user's code to its last (a notebook cell, a module of
    theirs): without the shell's frames above it, nor JAX's and the guard's below it, where
    the guard raised on the compiling thread; ``tb`` itself when none of its frames is the
    user's."""
    links = []
    while tb is not None:
        links.append(tb)
        tb = tb.tb_next
    mine = [i for i, link in enumerate(links) if is_user_file(link.tb_frame.f_code.co_filename)]
    if not mine:
        return links[0] if links else None
    out = None
    for link in reversed(links[mine[0]:mine[-1] + 1]):
        out = types.TracebackType(out, link.tb_frame, link.tb_lasti, link.tb_lineno)
    return out


class _ShownFromUserCode(RuntimeError):
    """An exception the guard raises inside JAX's compile path, shown by IPython (a notebook, a
    terminal shell) from the user's call: the cell's line that compiled, and none of the frames
    of JAX or recompile_cli below it (IPython's ``_render_traceback_`` protocol)."""

    def _render_traceback_(self) -> list[str]:
        tb = user_traceback(self.__traceback__)
        ipython = sys.modules.get("IPython")
        try:
            shell = ipython.get_ipython() if ipython is not None else None
            if shell is not None:
                lines: list[str] = shell.InteractiveTB.structured_traceback(
                    type(self), self, tb, tb_offset=0)
                return lines
        except Exception:  # IPython's formatter refused: Python's own, never an error of ours
            pass
        return "".join(traceback.format_exception(type(self), self, tb)).splitlines()


class RecompileLimitExceeded(_ShownFromUserCode):
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


class GuardBlinded(_ShownFromUserCode):
    """Raised by ``guard(on="raise")`` when it can no longer see compiles (the program removed
    its ``jax.monitoring`` listeners): from ``jax.monitoring.clear_event_listeners()``, from the
    next compile, or when the guard is removed, whichever notices first."""

    def __init__(self, message: str) -> None:
        super().__init__(inert(message))


# Shown (and pickled) under the module users import them from.
for _class in (GuardViolation, RecompileWarning, GuardBlindWarning, UnmatchedBudgetWarning,
               RecompileLimitExceeded, GuardBlinded, SlowCallWarning, SlowCallLimitExceeded):
    _class.__module__ = "recompile_cli.guards"
