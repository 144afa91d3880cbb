"""The runtime guard's configuration: what it checks, and ``RECOMPILE_CLI_GUARD``'s syntax.

::

    RECOMPILE_CLI_GUARD = MODE [":" ITEM ("," ITEM)*]
    MODE = warn | raise | log | off
    ITEM = N                    every user function: at most N compiles (default 1)
         | GLOB "=" N           functions whose name matches GLOB: at most N compiles
         | "warmup_calls=" N    compiles during a function's first N calls are not counted
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from recompile_cli.session.model import Owner

ENV_VAR = "RECOMPILE_CLI_GUARD"

Mode = Literal["warn", "raise", "log"]
_MODES = ("warn", "raise", "log")



@dataclass(frozen=True, slots=True)
class GuardConfig:
    """What a guard checks (see ``guard``); ``parse_guard_spec`` makes one from the
    environment variable's syntax."""

    max_compiles: int | Mapping[str, int] = 1
    warmup_calls: int = 0
    on: Mode = "warn"
    functions: tuple[str, ...] | None = None
    enabled: bool = True

    def __post_init__(self) -> None:
        if self.on not in _MODES:
            raise ValueError(f"on={self.on!r}: use one of {', '.join(_MODES)}")
        if isinstance(self.max_compiles, Mapping) and not self.max_compiles:
            raise ValueError("max_compiles={}: an empty mapping guards nothing; give a limit "
                             "for every function (max_compiles=1) or globs ({'train_*': 1})")
        limits = (self.max_compiles.values() if isinstance(self.max_compiles, Mapping)
                  else [self.max_compiles])
        for value in [*limits, self.warmup_calls]:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{value!r} is not a limit: max_compiles and warmup_calls "
                                 "are non-negative integers")

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
            return None
        if self.functions is None:
            return self.max_compiles if owner == Owner.USER else None
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.functions):
            return self.max_compiles
        return None


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
    max_compiles: int = 1
    globs: dict[str, int] = {}
    warmup = 0
    for item in filter(None, (part.strip() for part in items.split(","))):
        match = _ITEM.match(item)
        if match is None:
            raise ValueError(_spec_error(text, f"cannot read {item!r}"))
        if match["n"] is not None:
            max_compiles = int(match["n"])
        elif match["glob"].strip() == "warmup_calls":
            warmup = int(match["limit"])
        else:
            globs[match["glob"].strip()] = int(match["limit"])
    return GuardConfig(max_compiles=globs or max_compiles, warmup_calls=warmup,
                       on=mode)  # type: ignore[arg-type]


def _spec_error(text: str, problem: str) -> str:
    return (f"{ENV_VAR}={text!r}: {problem}. Use MODE[:ITEM,...] with MODE warn, raise, log "
            "or off and ITEMs N (every function: at most N compiles), GLOB=N (functions "
            "matching GLOB) or warmup_calls=N, e.g. raise:train_*=1,warmup_calls=2")
