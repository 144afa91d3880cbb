"""The gate's vocabulary: the ``Rule`` a problem broke and the ``Violation`` that reports it.

Shared by the gate evaluator (``gate.evaluate``) and the baseline rules (``gate.against_baseline``);
``gate.evaluate`` re-exports both. Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Rule(StrEnum):
    """The gate a ``Violation`` broke."""

    MAX_COMPILES = "max_compiles"
    MAX_TRACES = "max_traces"
    MAX_COMPILE_SECONDS = "max_compile_seconds"
    ALLOWED_CAUSES = "allowed_causes"
    STEADY_STATE = "steady_state"
    FAIL_ON = "fail_on"
    BASELINE = "baseline"
    NO_MATCH = "no_match"  # with ``strict``, a budget that matches no function
    MAX_EQUATIONS = "max_equations"
    COMPILE_REGRESSION = "compile_regression"  # --fail-on-compile-regression, with a baseline
    # a limit with no recorded value to check (equations without the private hooks, ...)
    NOT_RECORDED = "not_recorded"
    AFTER_WARMUP = "after_warmup"  # a compile after the warm-up plan (--after-warmup)
    MAX_SLOW_CALLS = "max_slow_calls"  # calls run through JAX's Python dispatch (slow calls)
    MAX_EAGER_COMPILES = "max_eager_compiles"  # code not yours compiled at one line of yours
    MAX_WASTED_COMPILES = "max_wasted_compiles"  # a program the function had, compiled again
    MAX_STALE_STATICS = "max_stale_statics"  # an equal static with other state ran stale
    MAX_COMPILES_AFTER_WARMUP = "max_compiles_after_warmup"  # more compiles after the plan


# the end of every NOT_RECORDED message: how to let such a limit pass
ALLOW_UNRECORDED = ("a limit that cannot be checked fails; to let it pass with a warning, set "
                    "allow_unrecorded: true in the budget, or pass --allow-unrecorded")


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken gate, its ``rule``, and a message naming the function and the numbers."""

    function: str
    rule: Rule
    message: str
    # where the first offending compile was triggered; for a call made by a spec file (no
    # source line: ``spec.yaml calls[1]``), where the function is defined (``_site``)
    call_site: str | None = None
    target: str | None = None  # the target it was found on (None: across targets, a baseline)
