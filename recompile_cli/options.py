"""User-given option values, checked once for every front door (the CLI, the Python API, the
guard and the notebook magics): the same types, the same refusals, the same words.

A single name where a list of names is expected is one item, never a list of its characters
(``functions="train_step"``, ``fail_on="shape"``). A wrong type is a ``TypeError`` and a wrong
value a ``ValueError``, each naming the parameter; the command line turns them into exit 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from recompile_cli import ranges
from recompile_cli.session.kinds import CauseCode, HookMode


def names(value: str | Iterable[str] | None, parameter: str) -> tuple[str, ...] | None:
    """Function names or globs: ``None`` (not given), one text, or an iterable of texts."""
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else _items(value, parameter)
    for item in items:
        _name(item, parameter)
    return items


def _name(item: Any, parameter: str) -> str:
    if not isinstance(item, str) or not item:
        raise TypeError(f"{parameter}: {item!r} is not a function name or glob; pass a "
                        "name, e.g. 'train_step', or a list of names")
    return item


def cause_codes(value: str | CauseCode | Iterable[str | CauseCode] | None, parameter: str
                ) -> tuple[CauseCode, ...]:
    """Cause codes: one code (``"shape"``), a comma-separated text (``"shape,dtype"``, as on the
    command line) or an iterable of codes; an unknown one is a ``ValueError`` naming them all."""
    if value is None:
        return ()
    if isinstance(value, str):
        items: tuple[Any, ...] = tuple(part.strip() for part in value.split(",") if part.strip())
    else:
        items = _items(value, parameter)
    known = [code.value for code in CauseCode]
    unknown = [item for item in items if not isinstance(item, str) or item not in known]
    if unknown:
        raise ValueError(f"{parameter}: unknown cause code(s) "
                         f"{', '.join(map(repr, unknown))}; use {', '.join(known)}")
    return tuple(CauseCode(item) for item in items)


def _items(value: Any, parameter: str) -> tuple[Any, ...]:
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{parameter}: {value!r} is not a list; pass one value or a list of "
                        "them") from None


def limit(value: Any, parameter: str) -> int:
    """A count limit (``max_compiles``, ``warmup_calls``): an integer from 0 to
    ``ranges.MAX_COUNT``, not a bool."""
    problem = ranges.count_problem(value)
    if problem is None:
        return int(value)
    error = TypeError if isinstance(value, bool) or not isinstance(value, int) else ValueError
    raise error(f"{parameter}={ranges.shown(value)} is not a limit: it {problem}; e.g. "
                f"{parameter}=1")


def threads(value: Any, parameter: str) -> int | None:
    """A number of threads (``warmup_parallel``): None, or an integer from 1 to
    ``ranges.MAX_THREADS``, not a bool."""
    if value is None:
        return None
    problem = ranges.count_problem(value, minimum=1, maximum=ranges.MAX_THREADS)
    if problem is None:
        return int(value)
    error = TypeError if isinstance(value, bool) or not isinstance(value, int) else ValueError
    raise error(f"{parameter}={ranges.shown(value)} is not a number of threads: it {problem}; "
                f"e.g. {parameter}=4")


def limits(value: Any, parameter: str) -> int | dict[str, int]:
    """One limit for every function, or a non-empty mapping from function-name globs to
    limits (``{"train_*": 1}``); an empty mapping would guard nothing and is refused."""
    if not isinstance(value, Mapping):
        return limit(value, parameter)
    if not value:
        raise ValueError(f"{parameter}={{}}: an empty mapping guards nothing; give a limit "
                         f"for every function ({parameter}=1) or globs ({{'train_*': 1}})")
    checked: dict[str, int] = {}
    for key, item in value.items():
        checked[_name(key, parameter)] = limit(item, f"{parameter}[{key!r}]")
    return checked


def choice(value: Any, parameter: str, allowed: Iterable[str]) -> str:
    """One of a fixed set of words (``on="warn"``, ``fmt="table"``, ``hook_mode=...``)."""
    allowed = tuple(allowed)
    if not isinstance(value, str):
        raise TypeError(f"{parameter}={value!r} is not a text: use one of "
                        f"{', '.join(allowed)}")
    if value not in allowed:
        raise ValueError(f"{parameter}={value!r}: use one of {', '.join(allowed)}")
    return value


def hook_mode(value: Any, parameter: str = "hook_mode") -> HookMode:
    """``HookMode.PRIVATE`` / ``HookMode.PUBLIC_ONLY`` or their values."""
    return HookMode(choice(str(value) if isinstance(value, HookMode) else value, parameter,
                           [mode.value for mode in HookMode]))


def flag(value: Any, parameter: str) -> bool:
    """A yes/no option: a bool (``keep_caches=True``), never a text or a number."""
    if not isinstance(value, bool):
        raise TypeError(f"{parameter}={value!r}: use True or False")
    return value


MAX_RUN_TIMEOUT = 30 * 86400.0  # --timeout: thirty days
MAX_HOST_TIMEOUT = 86400.0  # seconds (a day): --check-hosts never waits without a bound


def host_timeout(value: Any, parameter: str = "host_timeout") -> float:
    """Seconds to wait for the other processes' compiles (``check_hosts``): ``seconds`` up to
    ``MAX_HOST_TIMEOUT`` (a day)."""
    return seconds(value, parameter, MAX_HOST_TIMEOUT, "a day")


def seconds(value: Any, parameter: str, maximum: float, maximum_text: str) -> float:
    """A number of seconds: finite, above 0 and at most ``maximum`` (``maximum_text`` says it
    in words), not a bool or a text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{parameter}={value!r} is not a number of seconds: use a number above "
                        f"0, at most {maximum:g}, e.g. {parameter}=60")
    if ranges.number_problem(value, maximum, above_minimum=True):
        raise ValueError(f"{parameter}={ranges.shown(value)}: use a number of seconds above 0, "
                         f"at most {maximum:g} ({maximum_text}), e.g. {parameter}=60")
    return float(value)


def percent(value: Any, parameter: str) -> float:
    """A percentage (``--fail-on-compile-regression``): a finite number from 0 to
    ``ranges.MAX_PERCENT``; an infinite one would make a gate that can never fail."""
    problem = ranges.number_problem(value, ranges.MAX_PERCENT)
    if problem is None:
        return float(value)
    number = not isinstance(value, bool) and isinstance(value, int | float)
    error = ValueError if number else TypeError
    raise error(f"{parameter}={ranges.shown(value)} is not a percentage: it {problem}")


# -- a function and its calls, given to the Python API (``forecast``) ----------------------------


def function(value: Any, parameter: str = "fn") -> Any:
    """A callable to call (plain or already jitted)."""
    if not callable(value):
        raise TypeError(f"{parameter}={value!r} is not callable: pass the function itself, "
                        "plain or jitted, e.g. forecast(step, calls)")
    return value


Call = tuple[tuple[Any, ...], dict[str, Any]]


def calls(value: Any, parameter: str) -> tuple[Call, ...]:
    """A non-empty list of calls, each a tuple (or list) of positional arguments or a mapping
    ``{"args": (...), "kwargs": {...}}``; returns each as ``(args, kwargs)``."""
    def problem() -> TypeError:  # made only when raised: the repr of arrays is not free
        return TypeError(f"{parameter}={value!r} is not a list of calls; pass e.g. "
                         f"{parameter}=[(x,), {{'args': (x,), 'kwargs': {{'n': 2}}}}]")

    if value is None or isinstance(value, str | bytes | Mapping):
        raise problem()
    try:
        items = tuple(value)
    except TypeError:
        raise problem() from None
    if not items:
        raise ValueError(f"{parameter} is empty: give at least one call")
    return tuple(_call(call, f"{parameter}[{i}]") for i, call in enumerate(items))


def _call(call: Any, where: str) -> Call:
    if isinstance(call, tuple | list):
        return tuple(call), {}
    if not isinstance(call, Mapping):
        raise TypeError(f"{where}: a call is a tuple of positional arguments or "
                        f"{{'args': ..., 'kwargs': ...}}, got {type(call).__name__}")
    unknown = set(call) - {"args", "kwargs"}
    if unknown:
        raise TypeError(f"{where}: a call mapping has 'args' and 'kwargs' only, "
                        f"got {sorted(map(str, unknown))}")
    args, kwargs = call.get("args", ()), call.get("kwargs", {})
    if not isinstance(args, tuple | list):
        raise TypeError(f"{where}['args']={args!r} is not a tuple of positional arguments; "
                        "e.g. {'args': (x,)}")
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise TypeError(f"{where}['kwargs']={kwargs!r} is not a mapping of argument names to "
                        "values; e.g. {'kwargs': {'n': 2}}")
    return tuple(args), dict(kwargs)
