"""A runtime guard for long jobs: fail fast, at the call that recompiled, with the cause.

::

    with recompile_cli.guard(max_compiles=1, on="raise"):
        for batch in loader:
            state = train_step(state, batch)      # raises RecompileLimitExceeded on a 2nd compile

    handle = recompile_cli.install_guard(max_compiles={"train_*": 1}, on="warn")
    ...
    handle.uninstall()

The guard is a ``Recorder`` (the same one as the command line's) whose ``on_compile``
callback, each time one of the guarded functions finishes a backend compile, counts it and,
beyond the limit, analyses that function's events with the CLI's analysis: cause, argument,
``before -> after`` and suggestion. It then acts in the user's call, on the thread that compiled:

* ``on="warn"``: a ``RecompileWarning`` (a ``UserWarning``) attributed to the user's file and
  line, so ``warnings.filterwarnings`` / ``-W error::recompile_cli.guards.RecompileWarning`` apply;
* ``on="log"``: a WARNING record on the logger ``recompile_cli.guard`` (with the user's file and
  line, and the ``GuardViolation`` as ``record.recompile``);
* ``on="raise"``: ``RecompileLimitExceeded`` (a ``RuntimeError``) out of the jitted call that
  recompiled.

How the exception reaches the call (checked on JAX 0.10.2 and 0.12): JAX's ``jax.monitoring``
sends the backend-compile duration event from the ``with`` that times the compile, inside the
call's cache-miss path, without catching what a listener raises. The guard raises from that
listener, after the recorder has finished the event. The exception propagates out of JAX's
compile cache (which does not store the executable: nothing is half-cached) and out of the
jitted call; JAX stays usable, and the next call with the same arguments compiles, and raises,
again. The recorder's private tracing hooks catch what their observers raise, so raising there
would be swallowed; the guard never does. Listeners registered after the guard's (another
recorder started inside the guard) miss that one compile event.

Cost: nothing on cached calls (JAX calls none of this on a cache hit). ``warmup_calls`` is the
exception: calls are counted by wrapping the functions that are jitted while the guard is
installed (as ``recompile-cli run --count-calls`` does, ~1-3 us per call); a function jitted
before, e.g. at import, is not counted, and its compiles count from the first.

Without code changes: ``RECOMPILE_CLI_GUARD=raise:train_*=1 python -m recompile_cli.guards
train.py ARGS`` runs a script as ``__main__`` with the guard of the environment variable
installed; ``install_guard()`` without arguments reads the same variable (its syntax is in
``guard_config``), e.g. ``warn``, ``raise:2``, ``log:train_*=1,eval_*=2,warmup_calls=3``.
Importing ``recompile_cli`` never reads it: nothing happens unless the guard is asked for.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import types
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from recompile_cli import guard_config, options
from recompile_cli.capture import frames
from recompile_cli.capture.recorder import Recorder
from recompile_cli.exits import ExitCode
from recompile_cli.guard_config import ENV_VAR, GuardConfig, Mode, parse_guard_spec
from recompile_cli.session.model import Event, Session, function_key

__all__ = ["ENV_VAR", "Guard", "GuardConfig", "GuardViolation", "RecompileLimitExceeded",
           "RecompileWarning", "guard", "install_guard", "main", "parse_guard_spec"]

LOGGER_NAME = "recompile_cli.guard"
logger = logging.getLogger(LOGGER_NAME)

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
        message: all of it in one paragraph, as warned, logged or raised.
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


class RecompileWarning(UserWarning):
    """Warned by ``guard(on="warn")`` when a function compiles beyond its limit.

    ``.violation`` holds the ``GuardViolation``.
    """

    def __init__(self, violation: GuardViolation) -> None:
        super().__init__(violation.message)
        self.violation = violation


class RecompileLimitExceeded(RuntimeError):
    """Raised by ``guard(on="raise")`` from the jitted call that compiled beyond the limit.

    ``.violation`` holds the ``GuardViolation``.
    """

    def __init__(self, violation: GuardViolation) -> None:
        super().__init__(violation.message)
        self.violation = violation

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.violation,))


class Guard:
    """An installed (or installable) guard; ``guard()`` and ``install_guard()`` make one.

    Use it as a context manager, or call ``install()`` / ``uninstall()``. ``violations`` lists
    what it found; ``session()`` is everything its recorder saw, for ``recompile_cli.analyse``.
    """

    def __init__(self, config: GuardConfig) -> None:
        self.config = config
        self.violations: list[GuardViolation] = []
        self._recorder: Recorder | None = None
        self._stopped: Recorder | None = None  # the recorder of the last installation
        self._counter: Any = None

    @property
    def installed(self) -> bool:
        return self._recorder is not None

    def install(self) -> Guard:
        """Start guarding (does nothing when the config is disabled or already installed)."""
        if self._recorder is not None or not self.config.enabled:
            return self
        recorder = _Watch(self).recorder
        recorder.start()
        self._recorder = recorder
        if self.config.warmup_calls:
            from recompile_cli.capture.counting import CallCounter

            self._counter = CallCounter(lambda key, index: recorder.set_call(index, None, key),
                                        recorder.calls)
            self._counter.__enter__()
        return self

    def uninstall(self) -> None:
        """Stop guarding and restore JAX (and ``jax.jit`` when ``warmup_calls`` wrapped it)."""
        recorder, self._recorder = self._recorder, None
        if self._counter is not None:
            self._counter.__exit__(None, None, None)
            self._counter = None
        if recorder is not None:
            recorder.stop()
            self._stopped = recorder

    def session(self) -> Session:
        """A frozen ``Session`` of what the guard recorded (so far, or until uninstalled)."""
        recorder = self._recorder or self._stopped
        if recorder is None:
            raise RuntimeError("the guard was never installed")
        return recorder.session if recorder.session is not None else recorder.snapshot()

    def __enter__(self) -> Guard:
        return self.install()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.uninstall()

    def __repr__(self) -> str:
        state = "installed" if self.installed else "not installed"
        return f"<recompile_cli.Guard {state} {self.config!r}, {len(self.violations)} violations>"

    # -- called by the recorder on the compiling thread --------------------------------------
    def _act(self, violation: GuardViolation, user_frame: types.FrameType | None) -> None:
        self.violations.append(violation)
        mode = self.config.on
        if mode == "raise":
            raise RecompileLimitExceeded(violation)
        if mode == "log":
            stacklevel = _stacklevel(user_frame)
            logger.warning("%s", violation.message, extra={"recompile": violation},
                           stacklevel=stacklevel)
            return
        if user_frame is None:
            warnings.warn(RecompileWarning(violation), stacklevel=2)
            return
        module_globals = user_frame.f_globals
        registry = module_globals.setdefault("__warningregistry__", {})
        # A script run by runpy (python -m recompile_cli.guards) has no __spec__.loader, which
        # Python 3.13's warn_explicit refuses with a ValueError: its source is read by name.
        spec = module_globals.get("__spec__")
        source = module_globals if getattr(spec, "loader", None) is not None else None
        warnings.warn_explicit(RecompileWarning(violation), RecompileWarning,
                               user_frame.f_code.co_filename, user_frame.f_lineno,
                               module=module_globals.get("__name__", "__main__"),
                               registry=registry, module_globals=source)


class _Watch:
    """The guard's ``on_compile`` callback: counts each top-level compile of a guarded function
    and, beyond the limit, explains it with the CLI's analysis and acts, on the compiling
    thread, inside the user's call (the recorder lets what it raises through)."""

    def __init__(self, owner: Guard) -> None:
        self.recorder = Recorder("recompile_cli.guard", on_compile=self)
        self._guard = owner
        self._compiles: dict[str, int] = {}
        self._keys_by_name: dict[str, str | None] = {}  # None: several functions of that name
        self._explained: dict[str, tuple[GuardViolation, str]] = {}  # key -> last violation
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        user_frame = _user_frame(sys._getframe(1))
        try:
            violation = self._check(event, user_frame)
        except Exception:  # never turn a bug of ours into the user's error
            return
        if violation is not None:
            self._guard._act(violation, user_frame)

    def _check(self, event: Event, user_frame: types.FrameType | None
               ) -> GuardViolation | None:
        config = self._guard.config
        limit = config.limit_of(event.function, event.owner)
        if limit is None:
            return None
        key = self._key_of(event)
        if config.warmup_calls:
            calls = self.recorder.calls.get(key)
            if calls is not None and calls <= config.warmup_calls:
                return None  # during the function's first warmup_calls calls
        with self._lock:
            count = self._compiles[key] = self._compiles.get(key, 0) + 1
        if count <= limit:
            return None
        return self._explain(event, key, count, limit, user_frame)

    def _key_of(self, event: Event) -> str:
        """The function key of an event. A compile without a re-trace or lowering of its own
        (the same arguments again after a compile that raised) has no ``defined_at``: it
        belongs to the one function of that name seen before, when there is one."""
        if event.defined_at is not None:
            key = function_key(event.function, event.defined_at)
            known = self._keys_by_name.setdefault(event.function, key)
            if known is not None and known != key:
                self._keys_by_name[event.function] = None
            return key
        return (self._keys_by_name.get(event.function)
                or function_key(event.function, event.defined_at))

    def _explain(self, compiled: Event, key: str, count: int, limit: int,
                 user_frame: types.FrameType | None) -> GuardViolation:
        """Analyse this function's events (the CLI's analysis) to explain the compile."""
        from recompile_cli.analysis.report import analyse
        from recompile_cli.gate.evaluate import describe

        previous = self._explained.get(key)
        if compiled.defined_at is None and not compiled.traced and previous is not None:
            violation, described = previous
            message = (f"recompile-cli guard: {violation.function} compiled {count} times, "
                       f"limit {limit}. This compile repeats one that already exceeded the limit "
                       f"(JAX keeps no executable of a compile whose call raised): {described}.")
            return replace(violation, compiles=count, message=message)
        session = self.recorder.snapshot()
        events = [e for e in session.events if function_key(e.function, e.defined_at) == key]
        report = analyse(replace(session, events=tuple(events)))
        event = _event_of(events, compiled)
        cause = report.primary(event)
        call_site = (f"{user_frame.f_code.co_filename}:{user_frame.f_lineno}"
                     if user_frame is not None else event.call_site)
        suggestion = next((s.message for s in report.suggestions if s.code == cause.code),
                          None)
        described = describe(report, [replace(event, call_site=call_site)])
        warmup = ""
        if self._guard.config.warmup_calls and key not in self.recorder.calls:
            warmup = (f" (warmup_calls does not apply: {event.function} was jitted before the "
                      "guard was installed, so its calls are not counted)")
        message = (f"recompile-cli guard: {event.function} compiled {count} times, limit "
                   f"{limit}{warmup}. This compile: {described}.")
        if suggestion:
            message += f" Suggestion: {suggestion}"
        violation = GuardViolation(
            function=event.function, defined_at=event.defined_at, compiles=count,
            limit=limit, cause=str(cause.code), argument=cause.argument, before=cause.before,
            after=cause.after, detail=cause.detail, call_site=call_site,
            suggestion=suggestion, message=message)
        self._explained[key] = (violation, described)
        return violation


def _event_of(events: Sequence[Event], compiled: Event) -> Event:
    """``compiled`` as numbered in a snapshot (which numbers events by start time): found by
    its function and start."""
    for event in reversed(events):
        if (event.compiled and event.function == compiled.function
                and event.start_seconds == compiled.start_seconds):
            return event
    return [e for e in events if e.compiled][-1]


def _user_frame(frame: types.FrameType | None) -> types.FrameType | None:
    """The innermost frame of the user's code on the stack (the call that compiled)."""
    while frame is not None:
        if frames.is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


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
def guard(max_compiles: int | Mapping[str, int] = 1, *, warmup_calls: int = 0,
          on: Mode = "warn", functions: Iterable[str] | None = None) -> Guard:
    """A guard to use as a context manager: ``with recompile_cli.guard(...): train()``.

    It does not clear JAX's caches: functions already compiled before it count from their
    next compile.

    Args:
        max_compiles: the most compiles allowed per function; or a mapping from function-name
            globs to limits (only matching functions are guarded; first match wins).
        warmup_calls: compiles during a function's first N calls are not counted (needs the
            function to be jitted while the guard is installed; see the module docstring).
        on: ``"warn"`` (``RecompileWarning``), ``"raise"`` (``RecompileLimitExceeded``) or
            ``"log"`` (logger ``recompile_cli.guard``).
        functions: guard only functions whose name matches one of these globs (default: all
            of your functions).

    Returns:
        A ``Guard``, installed when the ``with`` block starts.
    """
    return Guard(GuardConfig(max_compiles=_limits(max_compiles), warmup_calls=warmup_calls,
                             on=on, functions=options.names(functions, "functions")))


def install_guard(max_compiles: int | Mapping[str, int] | None = None, *,
                  warmup_calls: int | None = None, on: Mode | None = None,
                  functions: Iterable[str] | None = None) -> Guard:
    """Install a guard now and return its handle (``.uninstall()`` removes it).

    Without arguments the configuration comes from the environment variable
    ``RECOMPILE_CLI_GUARD`` (``off`` installs nothing; unset means ``warn``, at most one
    compile per function); arguments given override it.
    """
    config = parse_guard_spec(os.environ.get(ENV_VAR, ""))
    changes: dict[str, Any] = {}
    if max_compiles is not None:
        changes["max_compiles"] = _limits(max_compiles)
    if warmup_calls is not None:
        changes["warmup_calls"] = warmup_calls
    if on is not None:
        changes["on"] = on
    if functions is not None:
        changes["functions"] = options.names(functions, "functions")
    if changes:
        changes["enabled"] = True
    return Guard(replace(config, **changes)).install()


def _limits(value: int | Mapping[str, int]) -> int | Mapping[str, int]:
    return dict(value) if isinstance(value, Mapping) else value


# -- python -m recompile_cli.guards SCRIPT [ARGS] ------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run a script as ``__main__`` with the guard of ``RECOMPILE_CLI_GUARD`` installed."""
    import runpy

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: [RECOMPILE_CLI_GUARD=MODE[:ITEM,...]] python -m recompile_cli.guards "
              "SCRIPT [ARGS...]\n\n" + (guard_config.__doc__ or "").strip())
        return ExitCode.OK if args else ExitCode.BAD_INPUT
    try:
        handle = install_guard()
    except ValueError as exc:
        print(f"recompile_cli.guards: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    script = args[0]
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        handle.uninstall()
        sys.argv[:], sys.path[:] = saved_argv, saved_path
    return ExitCode.OK


if __name__ == "__main__":
    # ``-m`` runs a second copy of this file, with classes of its own: run the importable
    # module's, so the script meets the ``RecompileLimitExceeded`` it can catch and filter.
    from recompile_cli.guards import main as _main

    sys.exit(_main())
