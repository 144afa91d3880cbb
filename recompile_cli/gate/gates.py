"""What to check on one target's report (``Gates``), on its own: the command line builds it
while it validates its options, before the target runs, without importing the evaluator
(``gate.evaluate``, which re-exports it) or the analysis behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from recompile_cli.session.kinds import CauseCode, Owner

if TYPE_CHECKING:
    from recompile_cli.gate.budgets import Budget


@dataclass(frozen=True, slots=True)
class Gates:
    """What to check on one target's report.

    Args:
        budgets: limits per function-name glob (from a budget file or the pytest marker).
        max_compiles: ``--max-compiles``: a limit on every user function; with ``list_all``
            and no limit, every user function still gets a row (for JUnit).
        fail_on: cause codes that fail the gate wherever they occur.
        steady_state_after: no compile once this many calls of ``steady_state_of`` completed.
        steady_state_of: function keys whose calls count (None: any counted function).
        list_all: a row per user function even without ``max_compiles``.
        budget_owners: whose functions ``budgets`` apply to (``max_compiles``: the user's).
        after_warmup: no compile of your functions after the warm-up plan
            (``Session.warmup``; a run that recorded no warm-up fails it).
        allow_unrecorded: a limit with no recorded value to check warns instead of failing
            (``--allow-unrecorded``; a budget's own ``allow_unrecorded`` does it for its limits).
        max_slow_calls: ``--max-slow-calls``: a limit on the slow calls of every user function.
        max_eager_compiles: ``--max-eager-compiles``: a limit on the compiles of code not
            yours (eager operations, libraries' jitted functions) at any one line of yours.
    """

    budgets: tuple[Budget, ...] = ()
    max_compiles: int | None = None
    fail_on: tuple[CauseCode, ...] = ()
    steady_state_after: int | None = None
    steady_state_of: frozenset[str] | None = None
    list_all: bool = False
    budget_owners: tuple[Owner, ...] = (Owner.USER, Owner.LIBRARY)
    after_warmup: bool = False
    allow_unrecorded: bool = False
    max_slow_calls: int | None = None
    max_eager_compiles: int | None = None

    @property
    def any(self) -> bool:
        return bool(self.budgets or self.max_compiles is not None or self.fail_on
                    or self.steady_state_after is not None or self.list_all
                    or self.after_warmup or self.max_slow_calls is not None
                    or self.max_eager_compiles is not None)
