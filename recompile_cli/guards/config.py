"""The runtime guard's configuration: what it checks, and ``RECOMPILE_CLI_GUARD``'s syntax.

::

    RECOMPILE_CLI_GUARD = MODE [":" ITEM ("," ITEM)*]
    MODE = warn | raise | log | off
    ITEM = N                    every user function: at most N compiles (default 1; with
                                GLOB items, your functions that match no GLOB)
         | GLOB "=" N           functions whose name matches GLOB: at most N compiles
                                (with GLOB items and no N, only matching functions are guarded)
         | "warmup_calls=" N    compiles during a function's first N calls are not counted
         | "check_hosts=" N     in a multi-process job, check at each compile that every
                                process compiles the same program (wait N s for them)
         | "slow_calls=" N      at most N slow calls (run through JAX's Python dispatch
                                without compiling) per guarded function
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from recompile_cli import options
from recompile_cli.session.model import Owner

ENV_VAR = "RECOMPILE_CLI_GUARD"

Mode = Literal["warn", "raise", "log"]
_MODES = ("warn", "raise", "log")



@dataclass(frozen=True, slots=True)
class GuardConfig:
    """What a guard checks (see ``guard``); ``parse_guard_spec`` makes one from the
    environment variable's syntax. Every value is checked by ``recompile_cli.options``, as the
    other front doors check theirs (a ``TypeError``/``ValueError`` naming the parameter).

    ``other_limit``: with a mapping of globs, the limit of your functions that match no glob
    (``RECOMPILE_CLI_GUARD=raise:2,train_*=1``); None guards only the matching functions.

    ``host_timeout``: check the processes of a ``jax.distributed`` job against each other at
    each compile, waiting this many seconds for them (``capture.hosts.host_check``); None: no.

    ``after_warmup``: a warm-up plan (``recompile-cli warmup``) the guard runs when installed,
    in ``warmup_parallel`` threads; its compiles do not count, and the limits count the
    compiles after it.

    ``max_slow_calls``: the most slow calls allowed per guarded function (the functions
    ``max_compiles`` and ``functions`` guard); None: slow calls are not limited.
    """

    max_compiles: int | Mapping[str, int] = 1
    warmup_calls: int = 0
    on: Mode = "warn"
    functions: tuple[str, ...] | None = None
    enabled: bool = True
    other_limit: int | None = None
    host_timeout: float | None = None
    after_warmup: str | None = None
    warmup_parallel: int | None = None
    max_slow_calls: int | None = None

    def __post_init__(self) -> None:
        options.choice(self.on, "on", _MODES)
        options.limits(self.max_compiles, "max_compiles")
        options.limit(self.warmup_calls, "warmup_calls")
        if self.other_limit is not None:
            options.limit(self.other_limit, "max_compiles")
        if self.host_timeout is not None:
            options.host_timeout(self.host_timeout)
        if self.warmup_parallel is not None:
            options.limit(self.warmup_parallel, "warmup_parallel")
        if self.max_slow_calls is not None:
            options.limit(self.max_slow_calls, "max_slow_calls")
        if self.functions is not None and not self.functions:
            raise ValueError("functions=[]: an empty list guards nothing; leave it out to "
                             "guard all your functions, or name some (functions='train_*')")

    def limit_of(self, name: str, owner: str) -> int | None:
        """The compile limit of the function ``name``, or None when it is not guarded.

        Without globs only your functions are guarded; a glob (in ``functions`` or as a key
        of ``max_compiles``) also matches installed libraries' functions, never JAX's own.
        """
        if owner == Owner.JAX:
            return None
        if isinstance(self.max_compiles, Mapping):
            for pattern, limit in self.max_compiles.items():
                if fnmatch.fnmatchcase(name, pattern):
                    return limit
            return self.other_limit if owner == Owner.USER else None
        if self.functions is None:
            return self.max_compiles if owner == Owner.USER else None
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.functions):
            return self.max_compiles
        return None

    def slow_limit_of(self, name: str, owner: str) -> int | None:
        """The slow-call limit of the function ``name``, or None when it is not limited: the
        functions the compile limits guard (``limit_of``)."""
        if self.max_slow_calls is None or self.limit_of(name, owner) is None:
            return None
        return self.max_slow_calls

    def patterns(self) -> tuple[str, ...]:
        """The globs the user named (``functions``, or the keys of ``max_compiles``)."""
        if isinstance(self.max_compiles, Mapping):
            return tuple(self.max_compiles)
        return self.functions or ()


_ITEM = re.compile(r"^(?:(?P<n>\d+)|(?P<glob>[^=]+)=(?P<limit>\d+))$")


def parse_guard_spec(text: str) -> GuardConfig:
    """A ``GuardConfig`` from ``RECOMPILE_CLI_GUARD``'s syntax (see the module docstring).

    Raises:
        ValueError: naming the variable, the bad part and the syntax.
    """
    text = text.strip()
    if not text:
        return GuardConfig()
    mode, _, items = text.partition(":")
    mode = mode.strip().lower()
    if mode == "off":
        return GuardConfig(enabled=False)
    if mode not in _MODES:
        raise ValueError(_spec_error(text, f"unknown mode {mode!r}"))
    max_compiles: int | None = None
    globs: dict[str, int] = {}
    warmup = 0
    hosts: float | None = None
    slow: int | None = None
    for item in filter(None, (part.strip() for part in items.split(","))):
        match = _ITEM.match(item)
        if match is None:
            raise ValueError(_spec_error(text, f"cannot read {item!r}"))
        if match["n"] is not None:
            max_compiles = int(match["n"])
        elif match["glob"].strip() == "warmup_calls":
            warmup = int(match["limit"])
        elif match["glob"].strip() == "check_hosts":  # 0: off
            hosts = _seconds(text, int(match["limit"])) or None
        elif match["glob"].strip() == "slow_calls":
            slow = int(match["limit"])
        else:
            globs[match["glob"].strip()] = int(match["limit"])
    if globs:  # a plain N next to globs limits your other functions
        return GuardConfig(max_compiles=globs, warmup_calls=warmup, on=mode,  # type: ignore[arg-type]
                           other_limit=max_compiles, host_timeout=hosts, max_slow_calls=slow)
    return GuardConfig(max_compiles=1 if max_compiles is None else max_compiles,
                       warmup_calls=warmup, on=mode, host_timeout=hosts,  # type: ignore[arg-type]
                       max_slow_calls=slow)


def _seconds(text: str, value: int) -> float:
    """``check_hosts=N``'s seconds, checked as ``guard(host_timeout=...)`` checks them."""
    if value == 0:
        return 0.0
    try:
        return options.host_timeout(value, "check_hosts")
    except ValueError as exc:
        raise ValueError(_spec_error(text, str(exc))) from None


def _spec_error(text: str, problem: str) -> str:
    return (f"{ENV_VAR}={text!r}: {problem}. Use MODE[:ITEM,...] with MODE warn, raise, log "
            "or off and ITEMs N (every function: at most N compiles), GLOB=N (functions "
            "matching GLOB), warmup_calls=N, check_hosts=N (in a multi-process job, check "
            "that every process compiles the same program, waiting at most N seconds for "
            "them) or slow_calls=N (at most N slow calls per function), e.g. "
            "raise:train_*=1,warmup_calls=2")
