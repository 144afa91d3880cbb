"""A runtime guard for long jobs: fail fast, at the call that recompiled, with the cause.

Owns ``Guard``, ``guard()`` and ``install_guard()``: a ``Recorder`` whose ``on_compile``, beyond a
function's limit, explains the compile with the CLI's analysis and warns, logs or raises in the
user's call. It raises from JAX's compile-duration ``jax.monitoring`` listener (which JAX lets
through, caching nothing), never from the private trace hooks (which swallow it). It must cost
nothing on a cache hit, and never act unless asked: importing it reads no ``RECOMPILE_CLI_GUARD``.

Map: ``watch.py`` (the miss path: counting, explaining, watching its own listeners),
``config.py`` (``GuardConfig`` and ``RECOMPILE_CLI_GUARD``'s syntax), ``errors.py`` (violations,
warnings, exceptions, inert messages), ``script.py`` and ``__main__.py`` (``python -m
recompile_cli.guards SCRIPT``).
"""

from __future__ import annotations

import linecache
import logging
import os
import sys
import types
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from recompile_cli import options
from recompile_cli.capture.code import stack
from recompile_cli.capture.counting import CallCounter
from recompile_cli.capture.hosts.host_check import HostsDiverged
from recompile_cli.capture.running.warmup import check_plan, run_plan
from recompile_cli.errors import TargetError
from recompile_cli.exits import ExitCode
from recompile_cli.guards import config as guard_config
from recompile_cli.guards.config import ENV_VAR, GuardConfig, Mode, parse_guard_spec
from recompile_cli.guards.errors import (
    GuardBlinded,
    GuardBlindWarning,
    GuardViolation,
    RecompileLimitExceeded,
    RecompileWarning,
    SlowCallLimitExceeded,
    SlowCallWarning,
    UnmatchedBudgetWarning,
    inert,
)
from recompile_cli.guards.script import run_script
from recompile_cli.guards.watch import Watch, arm, disarm
from recompile_cli.session.locations import cells
from recompile_cli.session.model import Session

__all__ = ["ENV_VAR", "Guard", "GuardBlindWarning", "GuardBlinded", "GuardConfig",
           "GuardViolation", "HostsDiverged", "RecompileLimitExceeded", "RecompileWarning",
           "SlowCallLimitExceeded", "SlowCallWarning", "UnmatchedBudgetWarning", "guard",
           "install_guard", "main", "parse_guard_spec"]

LOGGER_NAME = "recompile_cli.guard"
logger = logging.getLogger(LOGGER_NAME)


class Guard:
    """An installed (or installable) guard; ``guard()`` and ``install_guard()`` make one.

    Use it as a context manager (nesting the same guard is counted: it stays installed until
    the outermost ``with`` ends), or call ``install()`` / ``uninstall()``. ``violations`` lists
    what it found, ``blind`` when it could not see compiles, ``unmatched`` the globs that
    matched no function; ``session()`` is everything its recorder saw.
    """

    def __init__(self, config: GuardConfig) -> None:
        self.config = config
        self.violations: list[GuardViolation] = []
        self.blind: list[str] = []
        self.unmatched: list[str] = []
        self._watch: Watch | None = None
        self._stopped: Watch | None = None  # the watch of the last installation
        self._counter: Any = None
        self._depth = 0  # nested ``with`` blocks of this guard

    @property
    def installed(self) -> bool:
        return self._watch is not None

    def install(self) -> Guard:
        """Start guarding (does nothing when the config is disabled or already installed).
        With ``after_warmup``, the plan runs first; what it raises is a ``RuntimeError`` (the
        guard is removed again)."""
        if self._watch is not None or not self.config.enabled:
            return self
        watch = Watch(self.config, act=self._act, blind=self._blind)
        recorder = watch.recorder
        recorder.start()
        self._watch = watch
        arm(watch)
        if self.config.after_warmup is not None:
            self._warm_up(watch)
        if self.config.warmup_calls:
            self._counter = CallCounter(lambda key, index: recorder.set_call(index, None, key),
                                        recorder.calls, recorder.refused_call)
            self._counter.__enter__()
        return self

    def _warm_up(self, watch: Watch) -> None:
        assert self.config.after_warmup is not None
        done = run_plan(watch.recorder, Path(self.config.after_warmup),
                        self.config.warmup_parallel)
        if done.error is not None:
            self.uninstall(raising=False)
            raise RuntimeError(inert(f"recompile-cli guard: {done.error}"))

    def uninstall(self, *, raising: bool = True) -> None:
        """Stop guarding and restore JAX (and ``jax.jit`` when ``warmup_calls`` wrapped it).

        Reports what it notices only now: listeners the program removed (``GuardBlinded``
        under ``on="raise"`` unless ``raising`` is False) and globs that matched nothing
        (``UnmatchedBudgetWarning``)."""
        watch, self._watch = self._watch, None
        self._depth = 0
        if self._counter is not None:
            self._counter.__exit__(None, None, None)
            self._counter = None
        if watch is None:
            return
        disarm(watch)
        if watch.hosts is not None:
            watch.hosts.close()
        blind = watch.pending_blind
        if blind is None and not watch.listening():
            blind = ("recompile-cli guard: the guard's jax.monitoring listeners were removed by "
                     "the program while it was installed (noticed when the guard was removed); "
                     "compiles after their removal were not counted")
        watch.pending_blind = None
        session = watch.recorder.stop()
        self._stopped = watch
        for pattern in watch.unmatched(session):
            self._warn_unmatched(pattern)
        if blind is not None:
            self._blind(blind, None, raising=raising)

    def session(self) -> Session:
        """A frozen ``Session`` of what the guard recorded (so far, or until uninstalled)."""
        watch = self._watch or self._stopped
        if watch is None:
            raise RuntimeError("the guard was never installed")
        recorder = watch.recorder
        return recorder.session if recorder.session is not None else recorder.snapshot()

    def __enter__(self) -> Guard:
        if self._depth == 0 or not self.installed:
            self.install()
        self._depth += 1
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._depth -= 1
        if self._depth <= 0:
            self.uninstall(raising=exc is None)

    def __repr__(self) -> str:
        state = "installed" if self.installed else "not installed"
        return f"<recompile_cli.Guard {state} {self.config!r}, {len(self.violations)} violations>"

    # -- called by the watch on the compiling thread ---------------------------------------------
    def _act(self, violation: GuardViolation, user_frame: types.FrameType | None) -> None:
        self.violations.append(violation)
        mode = self.config.on
        slow = violation.slow_calls > 0
        if mode == "raise":
            raise (SlowCallLimitExceeded if slow else RecompileLimitExceeded)(violation)
        if mode == "log":
            logger.warning("%s", violation.message, extra={"recompile": violation},
                           stacklevel=_stacklevel(user_frame))
            return
        _warn((SlowCallWarning if slow else RecompileWarning)(violation), user_frame)

    def _blind(self, message: str, user_frame: types.FrameType | None, *,
               raising: bool = True) -> None:
        """The guard could not see compiles for a while: say so (raise under ``on="raise"``)."""
        message = inert(message)
        self.blind.append(message)
        mode = self.config.on
        if mode == "raise" and raising:
            raise GuardBlinded(message)
        if mode == "log":
            logger.warning("%s", message, stacklevel=_stacklevel(user_frame))
            return
        _warn(GuardBlindWarning(message), user_frame)

    def _warn_unmatched(self, pattern: str) -> None:
        message = inert(f"recompile-cli guard: the budget {pattern!r} matched no function that "
                        "was traced or compiled while the guard was installed: it guarded "
                        "nothing. Check the name (globs allowed, e.g. 'train_*').")
        self.unmatched.append(message)
        if self.config.on == "log":
            logger.warning("%s", message)
        else:
            _warn(UnmatchedBudgetWarning(message), _outer_user_frame())


def _warn(warning: RecompileWarning, user_frame: types.FrameType | None) -> None:
    """Warn attributed to the user's file and line (``warnings`` filters apply); a notebook
    cell's named as IPython names it (``In[2]:3``), with its line of code."""
    if user_frame is None:
        warnings.warn(warning, stacklevel=3)
        return
    filename = _shown_file(user_frame.f_code.co_filename)
    module_globals = user_frame.f_globals
    registry = module_globals.setdefault("__warningregistry__", {})
    # A script run by runpy (python -m recompile_cli.guards) has no __spec__.loader, which
    # Python 3.13's warn_explicit refuses with a ValueError: its source is read by name.
    spec = module_globals.get("__spec__")
    source = module_globals if getattr(spec, "loader", None) is not None else None
    warnings.warn_explicit(warning, type(warning), filename, user_frame.f_lineno,
                           module=module_globals.get("__name__", "__main__"),
                           registry=registry, module_globals=source)


def _shown_file(filename: str) -> str:
    """The file a warning names: a notebook cell's as IPython names it (``In[2]``), its lines
    cached under that name as IPython caches them under the cell's file, so that the warning
    shows the line; any other file as it is."""
    shown = cells(filename)
    if shown == filename or not shown:
        return filename
    lines = linecache.getlines(filename)
    if not lines:
        return filename
    linecache.cache[shown] = (sum(map(len, lines)), None, lines, shown)  # None: never stale
    return shown


def _outer_user_frame() -> types.FrameType | None:
    return stack.user_frame(sys._getframe(1))


def _stacklevel(user_frame: types.FrameType | None) -> int:
    """The ``stacklevel`` that makes ``logging`` attribute a record to ``user_frame``."""
    if user_frame is None:
        return 1
    level = 1
    frame: types.FrameType | None = sys._getframe(1)  # our caller calls logger.warning
    while frame is not None and frame is not user_frame:
        level += 1
        frame = frame.f_back
    return level if frame is not None else 1


# -- making guards ---------------------------------------------------------------------------------
def guard(max_compiles: int | Mapping[str, int] | None = None, *, warmup_calls: int = 0,
          on: Mode = "warn", functions: Iterable[str] | None = None,
          check_hosts: bool = False, host_timeout: float = 60.0,
          after_warmup: str | os.PathLike[str] | None = None,
          warmup_parallel: int | None = None, max_slow_calls: int | None = None) -> Guard:
    """A guard to use as a context manager: ``with recompile_cli.guard(...): train()``.

    It does not clear JAX's caches: functions already compiled before it count from their
    next compile.

    Args:
        max_compiles: the most compiles allowed per function; or a mapping from function-name
            globs to limits (only matching functions are guarded; first match wins). Default
            1, and 0 with ``after_warmup``.
        warmup_calls: compiles during a function's first N calls are not counted (needs the
            function to be jitted while the guard is installed; see the module docstring).
        on: ``"warn"`` (``RecompileWarning``), ``"raise"`` (``RecompileLimitExceeded``) or
            ``"log"`` (logger ``recompile_cli.guard``).
        functions: guard only functions whose name matches one of these globs (default: all
            of your functions).
        check_hosts: in a multi-process job, check at each compile that every process
            compiles the same program, waiting ``host_timeout`` seconds for them; the compiling
            call raises ``HostsDiverged`` when they do not, and a process stopped by a peer
            while it waits in a collective exits 3 (``capture.hosts.host_check``). A bool.
        host_timeout: seconds, a number above 0 and at most 86400 (checked even when
            ``check_hosts`` is False).
        after_warmup: a warm-up plan (``recompile-cli warmup SESSION -o PLAN.py``) run when
            the guard is installed; its compiles do not count, and every compile of a guarded
            function after it is one more than ``max_compiles`` (0 by default) allows: the
            violation names the signature the plan lacks and its cause against the closest
            planned one. Checked here (``ValueError``); what the plan raises is a
            ``RuntimeError`` when the ``with`` block starts.
        warmup_parallel: the plan's ``warm_up(parallel=N)``: N threads.
        max_slow_calls: the most slow calls (calls JAX runs through its Python dispatch
            without compiling: ``docs/slow-calls.md``) allowed per guarded function; beyond
            it, ``on`` acts as for compiles (``SlowCallLimitExceeded``/``SlowCallWarning``;
            ``warn`` and ``log`` once per function). None (default): not limited.

    Returns:
        A ``Guard``, installed when the ``with`` block starts.
    """
    hosts = options.host_timeout(host_timeout)
    plan = _plan(after_warmup)
    limit = max_compiles if max_compiles is not None else 0 if plan is not None else 1
    return Guard(GuardConfig(max_compiles=options.limits(limit, "max_compiles"),
                             after_warmup=plan,
                             warmup_parallel=options.threads(warmup_parallel,
                                                             "warmup_parallel"),
                             warmup_calls=warmup_calls, on=on,
                             functions=options.names(functions, "functions"),
                             host_timeout=hosts if options.flag(check_hosts, "check_hosts")
                             else None,
                             max_slow_calls=None if max_slow_calls is None
                             else options.limit(max_slow_calls, "max_slow_calls")))


def _plan(path: str | os.PathLike[str] | None) -> str | None:
    """``after_warmup``'s plan as an absolute path, checked now (``ValueError`` naming it)."""
    if path is None:
        return None
    try:
        return str(check_plan(os.fspath(path), "after_warmup"))
    except TypeError:
        raise TypeError(f"after_warmup must be a path, got {type(path).__name__}") from None
    except TargetError as exc:
        raise ValueError(str(exc)) from None


def install_guard(max_compiles: int | Mapping[str, int] | None = None, *,
                  warmup_calls: int | None = None, on: Mode | None = None,
                  functions: Iterable[str] | None = None, check_hosts: bool | None = None,
                  host_timeout: float = 60.0, max_slow_calls: int | None = None) -> Guard:
    """Install a guard now and return its handle (``.uninstall()`` removes it).

    Without arguments the configuration comes from the environment variable
    ``RECOMPILE_CLI_GUARD`` (``off`` installs nothing; unset means ``warn``, at most one
    compile per function); arguments given override it.
    """
    config = parse_guard_spec(os.environ.get(ENV_VAR, ""))
    changes: dict[str, Any] = {}
    if max_compiles is not None:
        changes["max_compiles"] = options.limits(max_compiles, "max_compiles")
        changes["other_limit"] = None
    if warmup_calls is not None:
        changes["warmup_calls"] = warmup_calls
    if on is not None:
        changes["on"] = on
    if functions is not None:
        changes["functions"] = options.names(functions, "functions")
    if check_hosts is not None:
        hosts = options.host_timeout(host_timeout)
        changes["host_timeout"] = hosts if options.flag(check_hosts, "check_hosts") else None
    if max_slow_calls is not None:
        changes["max_slow_calls"] = options.limit(max_slow_calls, "max_slow_calls")
    if changes:
        changes["enabled"] = True
    return Guard(replace(config, **changes)).install()


# -- python -m recompile_cli.guards SCRIPT [ARGS] ------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run a script as ``__main__`` with the guard of ``RECOMPILE_CLI_GUARD`` installed."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: [RECOMPILE_CLI_GUARD=MODE[:ITEM,...]] python -m recompile_cli.guards "
              "SCRIPT [ARGS...]\n\n" + (guard_config.__doc__ or "").strip())
        return ExitCode.OK if args else ExitCode.BAD_INPUT
    return run_script(args, install_guard)

