"""Every gate limit, declared once (``LIMITS``): its key (the budget file's key, the Python
keyword and the field of ``Budget`` or ``Gates``), what it takes, its help text, its command-line
flag and the commands that have it. The command line (``cli.option_groups``), the budget file
(``gate.budgets``), the docs' table (``table_markdown``) and the checks of values read it; the
evaluator (``gate.evaluate``) reads the ``Budget`` and ``Gates`` built from it. Pure: no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from recompile_cli import ranges
from recompile_cli.inputs.fields import Invalid, Where
from recompile_cli.session.kinds import CauseCode, Owner

DEFAULT_TOLERANCE = 0.5
RECORDING_COMMANDS = ("profile", "run", "check")  # forecast records no call, slow or eager
EVERY_COMMAND = (*RECORDING_COMMANDS, "forecast")


class Kind(enum.StrEnum):
    """What a limit takes."""

    COUNT = "count"  # an integer from 0 to ranges.MAX_COUNT
    SECONDS = "seconds"  # a finite number from 0 to ranges.MAX_SECONDS
    TOLERANCE = "tolerance"  # a finite fraction from 0 to ranges.MAX_TOLERANCE
    SWITCH = "switch"  # true or false
    CAUSES = "causes"  # cause codes (a list in a file, comma-separated on the command line)


@dataclass(frozen=True, slots=True)
class Limit:
    """One gate limit: ``help`` says what it limits in a budget; ``per_function``: a key of a
    budget's function glob in the budget file (a ``Budget`` field); ``flag``: its command-line
    option (a ``Gates`` field) on ``commands``, with ``flag_help``."""

    key: str
    kind: Kind
    help: str
    per_function: bool = True
    flag: str | None = None
    commands: tuple[str, ...] = ()
    flag_help: str = ""  # the flag's help (on every function of yours, every target)

    def check(self, value: Any, where: Where) -> Any:
        """``value`` as the limit takes it (cause codes as a tuple), or ``Invalid`` naming
        ``where`` and what it must be."""
        if self.kind == Kind.COUNT:
            problem = ranges.count_problem(value)
        elif self.kind in (Kind.SECONDS, Kind.TOLERANCE):
            maximum = ranges.MAX_SECONDS if self.kind == Kind.SECONDS else ranges.MAX_TOLERANCE
            problem = ranges.number_problem(value, maximum)
            value = value if problem else float(value)
        elif self.kind == Kind.SWITCH:
            problem = None if isinstance(value, bool) else f"must be true or false, got {value!r}"
        else:
            return _causes(value, where)
        if problem:
            raise Invalid(where, problem)
        return value


def _causes(value: Any, where: Where) -> tuple[CauseCode, ...]:
    known = [code.value for code in CauseCode]
    if not isinstance(value, list):
        raise Invalid(where, "must be a list of cause codes: " + ", ".join(known))
    for i, code in enumerate(value):
        if code not in known:
            raise Invalid((*where, i), f"{code!r} is not a cause code; {where[-1]} must be a "
                                       "list of cause codes: " + ", ".join(known))
    return tuple(map(CauseCode, value))


LIMITS = (
    Limit("max_compiles", Kind.COUNT, "the most compiles of each matching function",
          flag="--max-compiles", commands=EVERY_COMMAND,
          flag_help="Gate: exit 1 if any of your functions compiles more often."),
    Limit("max_traces", Kind.COUNT, "the most traces of each matching function"),
    Limit("max_compile_seconds", Kind.SECONDS, "the most seconds of XLA compile of each "
          "matching function (with the tolerance)"),
    Limit("tolerance", Kind.TOLERANCE, "the fraction by which compile seconds may exceed "
          f"max_compile_seconds (default {DEFAULT_TOLERANCE})"),
    Limit("allowed_causes", Kind.CAUSES, "the only cause codes a matching function may be "
          "traced or compiled for"),
    Limit("max_equations", Kind.COUNT, "the most jaxpr equations of any one compiled program "
          "of each matching function (needs the private hooks)"),
    Limit("fail_on", Kind.CAUSES, "cause codes that fail the gate wherever they occur",
          per_function=False, flag="--fail-on", commands=EVERY_COMMAND,
          flag_help="Gate: exit 1 on any event with these cause codes, e.g. "
          "new_function,weak_type."),
    Limit("allow_unrecorded", Kind.SWITCH, "a limit with no recorded value to check warns "
          "instead of failing", flag="--allow-unrecorded", commands=EVERY_COMMAND,
          flag_help="Gate: a limit with no recorded value to check (equations without the "
          "private hooks, a steady state with no counted call) warns instead of failing."),
    Limit("max_slow_calls", Kind.COUNT, "the most slow calls (run through JAX's Python "
          "dispatch without compiling) of each matching function", flag="--max-slow-calls",
          commands=RECORDING_COMMANDS,
          flag_help="Gate: exit 1 if any of your functions makes more than N slow calls (calls "
          "JAX runs through its Python dispatch without compiling); fails where they cannot "
          "be seen."),
    Limit("max_eager_compiles", Kind.COUNT, "the most compiles of code not yours at any one "
          "line of yours inside a matching function", flag="--max-eager-compiles",
          commands=RECORDING_COMMANDS,
          flag_help="Gate: exit 1 if code not yours (eager operations such as x[mask] outside "
          "jit, libraries' jitted functions) compiles more than N times at any one line of "
          "yours."),
    Limit("max_wasted_compiles", Kind.COUNT, "the most wasted compiles (a program the function "
          "had already compiled, compiled again) of each matching function (needs the private "
          "hooks)", flag="--max-wasted-compiles", commands=RECORDING_COMMANDS,
          flag_help="Gate: exit 1 if any of your functions compiles a program it had already "
          "compiled (a static field the program never reads, a function made anew) more than "
          "N times."),
    Limit("max_stale_statics", Kind.COUNT, "the most static arguments of each matching "
          "function seen equal to the one an executable was compiled for while their state "
          "differs (every reuse only with --count-calls)", flag="--max-stale-statics",
          commands=RECORDING_COMMANDS,
          flag_help="Gate: exit 1 if more than N static arguments of any of your functions "
          "ran an executable compiled for other values (equal by __eq__, other state); "
          "--count-calls sees every reuse."),
    Limit("max_compiles_after_warmup", Kind.COUNT, "the most compiles of each matching "
          "function after the warm-up plan (a run without one fails it)",
          flag="--max-compiles-after-warmup", commands=RECORDING_COMMANDS,
          flag_help="Gate: exit 1 if any of your functions compiles more than N times after "
          "the warm-up plan (--after-warmup alone allows 0), each compile named with what the "
          "plan lacked; fails where no warm-up ran."),
)
BUDGET_KEYS = tuple(limit.key for limit in LIMITS if limit.per_function)


def flags_of(command: str) -> tuple[Limit, ...]:
    """The limits that ``command`` takes on its command line, in ``LIMITS``' order."""
    return tuple(limit for limit in LIMITS if limit.flag and command in limit.commands)


def budget_values(raw: dict[str, Any], where: Where) -> dict[str, Any]:
    """A budget's limits (a budget file's mapping under a function glob), each checked; one
    that sets no limit (only ``null``s, or only how limits are checked) is ``Invalid``: a
    gate that checks nothing would print "passed"."""
    by_key = {limit.key: limit for limit in LIMITS if limit.per_function}
    values = {}
    for key, value in raw.items():
        if value is None:
            raise Invalid((*where, key), "is null, which sets no limit: give a value or "
                                         "remove the key")
        values[key] = by_key[key].check(value, (*where, key))
    if all(by_key[key].kind in _MODIFIERS for key in raw):
        raise Invalid(where, "sets no limit (" + ", ".join(raw) + " only change how limits "
                             "are checked): add one of " + ", ".join(
                                 k for k, limit in by_key.items() if limit.kind not in _MODIFIERS))
    return values


_MODIFIERS = (Kind.SWITCH, Kind.TOLERANCE)  # change how the limits are checked, limit nothing


def table_markdown() -> str:
    """The budget keys as a Markdown table (docs/ci.md shows it)."""
    rows = [f"| `{limit.key}` | {limit.kind} | {limit.help} | "
            f"{f'`{limit.flag}`' if limit.flag else ''} |"
            for limit in LIMITS if limit.per_function]
    return "\n".join(["| key | takes | what it limits | on the command line |",
                      "| --- | --- | --- | --- |", *rows]) + "\n"


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits for the functions whose name matches ``pattern`` (a glob), each on its own; the
    fields besides ``pattern`` are the per-function ``LIMITS``."""

    pattern: str
    max_compiles: int | None = None
    max_traces: int | None = None
    max_compile_seconds: float | None = None
    tolerance: float = DEFAULT_TOLERANCE
    allowed_causes: tuple[CauseCode, ...] | None = None
    max_equations: int | None = None
    allow_unrecorded: bool = False
    max_slow_calls: int | None = None
    max_eager_compiles: int | None = None
    max_wasted_compiles: int | None = None
    max_stale_statics: int | None = None
    max_compiles_after_warmup: int | None = None


@dataclass(frozen=True, slots=True)
class Gates:
    """What to check on one target's report: the command-line ``LIMITS`` (on every function of
    yours) and these.

    Args:
        budgets: limits per function-name glob (from a budget file or the pytest marker).
        steady_state_after: no compile once this many calls of ``steady_state_of`` completed.
        steady_state_of: function keys whose calls count (None: any counted function).
        list_all: a row per user function even without ``max_compiles`` (for JUnit).
        budget_owners: whose functions ``budgets`` apply to (``max_compiles``: the user's).
        after_warmup: no compile of your functions after the warm-up plan
            (``Session.warmup``; a run that recorded no warm-up fails it).
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
    max_wasted_compiles: int | None = None
    max_stale_statics: int | None = None
    max_compiles_after_warmup: int | None = None

    @property
    def any(self) -> bool:
        return bool(self.budgets or self.steady_state_after is not None or self.list_all
                    or self.after_warmup or _set(self, flagged()))


def flagged() -> Iterable[Limit]:
    """The limits that are ``Gates`` fields (every one with a command-line flag)."""
    return (limit for limit in LIMITS if limit.flag)


def _set(gates: Gates, limits: Iterable[Limit]) -> bool:
    """Whether any of ``limits`` sets a limit on ``gates`` (a switch such as allow_unrecorded
    only changes how others are checked)."""
    return any(getattr(gates, limit.key) not in (None, ()) for limit in limits
               if limit.kind != Kind.SWITCH)


def _same_fields() -> None:
    """The declarations and the dataclasses name the same limits (checked on import)."""
    budget = {f.name for f in fields(Budget)} - {"pattern"}
    gates = {f.name for f in fields(Gates)}
    assert budget == set(BUDGET_KEYS), budget ^ set(BUDGET_KEYS)
    assert {limit.key for limit in flagged()} <= gates


_same_fields()
