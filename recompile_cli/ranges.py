"""The ranges of the numbers the tool reads: options, budget and baseline fields, saved files.

A count (compiles, traces, equations, calls, a limit on any of them) is an integer from 0 to
``MAX_COUNT``; a duration a finite number of seconds from 0 to ``MAX_SECONDS``; a percentage
from 0 to ``MAX_PERCENT``. Past these a number is not a measurement or a limit but a mistake or
a damaged file (``equations: 10**400`` in a baseline, a cache hit that saved 7e64 s), and
letting it through would make a gate that can never fail or a figure that means nothing.
``Count`` and ``Seconds`` carry the ranges into msgspec, so that a saved file is checked as it
is decoded; ``count_problem`` and ``number_problem`` check a value given in any other way
(Python, YAML, TOML, the command line) and say what is wrong with it. A leaf: no imports of the
package.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec

MAX_COUNT = 10 ** 12  # no program compiles, traces or is called that often
MAX_SECONDS = 1e8  # about three years: longer than any recording or compile
MAX_PERCENT = 1e6  # --fail-on-compile-regression: 10,000 times the baseline
MAX_TOLERANCE = 1e4  # a budget's tolerance (a fraction of max_compile_seconds)
MAX_BYTES = 1 << 60
MAX_CALLS = 10_000_000  # the most calls --max-calls may allow one run of specs to make
MAX_THREADS = 1024  # --warmup-parallel: threads compiling a warm-up plan at once

Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_SECONDS)]
Bytes = Annotated[int, msgspec.Meta(ge=0, le=MAX_BYTES)]


def count_problem(value: Any, minimum: int = 0, maximum: int = MAX_COUNT) -> str | None:
    """None when ``value`` is an integer (not a bool) from ``minimum`` to ``maximum``, else
    what it must be: ``must be a non-negative integer, at most 1,000,000,000,000, got 1.5``."""
    if not isinstance(value, bool) and isinstance(value, int) and minimum <= value <= maximum:
        return None
    kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
        minimum, f"an integer from {minimum:,}")
    return f"must be {kind}, at most {maximum:,}, got {shown(value)}"


def number_problem(value: Any, maximum: float, minimum: float = 0.0,
                   above_minimum: bool = False) -> str | None:
    """None when ``value`` is a finite number (int or float, not a bool) from ``minimum``
    (excluded when ``above_minimum``) to ``maximum``, else what it must be. NaN, the
    infinities and an int too large for a float are refused."""
    number = as_float(value)
    low_ok = number is not None and (number > minimum if above_minimum else number >= minimum)
    if number is not None and low_ok and number <= maximum:
        return None
    if minimum == 0:
        kind = "a finite number above 0" if above_minimum else "a finite, non-negative number"
    else:
        kind = f"a finite number {'above' if above_minimum else 'from'} {_plain(minimum)}"
    return f"must be {kind}, at most {_plain(maximum)}, got {shown(value)}"


def _plain(number: float) -> str:
    """``100,000,000`` for 1e8, ``0.5`` for 0.5."""
    return f"{number:,.0f}" if number == int(number) else f"{number:g}"


def as_float(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a finite number (a bool, a text,
    NaN, an infinity, an int beyond any float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def shown(value: Any) -> str:
    """``repr(value)``, shortened when long (a 400-digit number)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text):,} characters)"
