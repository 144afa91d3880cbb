"""``record()``: record a block, a function, a generator or a coroutine with the CLI's
``Recorder``, and ``analyse`` a session into a ``RecompileReport``; wiring only, no analysis.

JAX loads when a recording starts (which clears JAX's caches unless ``keep_caches``; or, with
``keep_jax_caches``, forgets only what they hold for functions outside JAX), never on import; the
pytest plugin imports this module, so analysis and capture are imported locally.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from msgspec.structs import replace

from recompile_cli import options
from recompile_cli.api.report import RecompileReport
from recompile_cli.session.locations import relative
from recompile_cli.session.model import HookMode, Session

if TYPE_CHECKING:
    from recompile_cli.capture.recorder import Recorder

__all__ = ["Recording", "analyse", "record"]

F = TypeVar("F", bound=Callable[..., Any])


def analyse(session: Session) -> RecompileReport:
    """Analyse a session (recorded, or loaded with ``load_session``): causes, per-function
    totals, the cost-ranked cause table and suggestions, as the command line reports them."""
    from recompile_cli.analysis.report import build_report  # pytest plugin: light

    if not isinstance(session, Session):
        hint = (f" (a path? load it first: recompile_cli.load_session({session!r}))"
                if isinstance(session, (str, os.PathLike)) else "")
        raise TypeError("analyse(session) takes a Session, from record() or "
                        f"load_session(path); got {type(session).__name__}{hint}")
    return RecompileReport(build_report(session))


class Recording:
    """Records everything JAX traces and compiles inside a ``with`` block or a decorated
    function; made by ``record()``.

    Each use starts a new recording: after the block (or call), ``.session`` is the frozen
    ``Session`` and ``.report`` its analysis. While the block runs, both give what was recorded
    so far. An exception raised inside the block is recorded as the session's
    ``target_exception`` and propagates unchanged.
    """

    def __init__(self, target: str = "", *, keep_caches: bool = False,
                 hook_mode: HookMode = HookMode.PRIVATE,
                 events_log: str | Path | None = None, keep_jax_caches: bool = False) -> None:
        if not isinstance(target, str):
            raise TypeError(f"target={target!r}: use a label (a text) or decorate a function")
        if events_log is not None and not isinstance(events_log, (str, os.PathLike)):
            raise TypeError(f"events_log={events_log!r}: use a file path or None")
        if events_log is not None and not os.fspath(events_log):
            raise ValueError("events_log='': use a file path or None")
        self.target = target
        self.keep_caches = options.flag(keep_caches, "keep_caches")
        # JAX's own programs (op-by-op, jnp) stay compiled; those of functions outside JAX are
        # forgotten (``capture.jax.forget``): the pytest plugin's start of every test
        self.keep_jax_caches = options.flag(keep_jax_caches, "keep_jax_caches")
        self.hook_mode = options.hook_mode(hook_mode, "hook_mode")
        self.events_log = events_log
        self._recorder: Recorder | None = None
        self._session: Session | None = None
        self._report: RecompileReport | None = None

    def __enter__(self) -> Recording:
        import jax  # JAX: when a recording starts, never on import

        from recompile_cli.capture.recorder import Recorder  # pytest plugin: light

        if self._recorder is not None:
            raise RuntimeError("this recording is already running; use a new "
                               "recompile_cli.record() for a nested block")
        if not self.keep_caches:
            self._forget(jax)
        self._session, self._report = None, None
        self._recorder = Recorder(self.target or _caller_label(), hook_mode=self.hook_mode,
                                  events_log=self.events_log).start()
        return self

    def _forget(self, jax: Any) -> None:
        """Clear JAX's in-memory caches; with ``keep_jax_caches``, only what they hold for
        functions outside JAX, where the private hooks may be used (else all of them)."""
        if self.keep_jax_caches and self.hook_mode == HookMode.PRIVATE:
            from recompile_cli.capture.jax.forget import forget_yours  # pytest plugin: light

            if forget_yours() is None:
                return
        jax.clear_caches()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        recorder, self._recorder = self._recorder, None
        if isinstance(exc, GeneratorExit):  # a recorded generator closed early: no failure
            exc_type, exc, tb = None, None, None
        if recorder is not None:
            recorder.__exit__(exc_type, exc, tb)
            self._session = recorder.session
            if self.keep_caches and self._session is not None and any(
                    e.compiled for e in self._session.events):
                from recompile_cli.analysis.report import KEPT_CACHES  # pytest plugin: light

                self._session = replace(self._session,
                                        warnings=(*self._session.warnings, KEPT_CACHES))

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` is recorded (``.session`` is the last's).

        A generator function is recorded while its generator runs (from the first ``next``
        until it is exhausted or closed), an ``async`` function while it is awaited, an async
        generator while it is iterated."""
        if not self.target:
            self.target = getattr(fn, "__qualname__", repr(fn))
        recorded = _recorded(self, fn)
        recorded.recording = self
        return cast(F, recorded)

    @property
    def running(self) -> bool:
        return self._recorder is not None

    def listening(self) -> bool:
        """False when the recorded program removed the recorder's ``jax.monitoring``
        listeners (``jax.monitoring.clear_event_listeners()``), so that compiles after that
        were not seen; True otherwise (also when unknown, or not running)."""
        from recompile_cli.capture.jax.listeners import is_registered  # pytest plugin: light

        recorder = self._recorder
        return recorder is None or is_registered("event_duration",
                                                 recorder._on_duration) is not False

    @property
    def session(self) -> Session:
        """The frozen session: final after the block, a snapshot while it runs."""
        if self._recorder is not None:
            return self._recorder.snapshot()
        if self._session is None:
            raise RuntimeError("nothing recorded yet: use `with recompile_cli.record() as rec:` "
                               "(or decorate a function) before reading .session")
        return self._session

    @property
    def report(self) -> RecompileReport:
        """The analysed session (cached once the recording has ended)."""
        if self._recorder is not None:
            return analyse(self.session)
        if self._report is None:
            self._report = analyse(self.session)
        return self._report


@overload
def record(target: F, /) -> F: ...


@overload
def record(target: str = "", /, *, keep_caches: bool = False, hook_mode: HookMode = ...,
           events_log: str | Path | None = None) -> Recording: ...


def record(target: Any = "", /, *, keep_caches: bool = False,
           hook_mode: HookMode = HookMode.PRIVATE, events_log: str | Path | None = None) -> Any:
    """Record what JAX traces and compiles in a block, or in each call of a function.

    ``with record() as rec: ...`` then ``rec.session`` / ``rec.report``; as a decorator,
    ``@record`` or ``@record("label")`` records each call and the wrapper's ``.recording``
    holds the last one.

    Args:
        target: a label kept in the session (default: the file and line of the block);
            or the function to decorate.
        keep_caches: keep JAX's in-memory caches. By default they are cleared
            (``jax.clear_caches()``) so that counts are those of a cold process, like the CLI's.
        hook_mode: ``HookMode.PRIVATE`` (default; signatures and causes) or
            ``HookMode.PUBLIC_ONLY``; their values ``"private"``, ``"public-only"`` work too.
        events_log: also stream every event to this JSON-lines file as it happens.

    Returns:
        A ``Recording`` (context manager and decorator), or the decorated function.
    """
    if callable(target):
        return Recording(keep_caches=keep_caches, hook_mode=hook_mode,
                         events_log=events_log)(target)
    return Recording(target, keep_caches=keep_caches, hook_mode=hook_mode,
                     events_log=events_log)


def _recorded(recording: Recording, fn: Any) -> Any:
    """``fn`` wrapped so that each call (or each run of its generator / coroutine) is
    recorded."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Any:
            with recording:
                return (yield from fn(*args, **kwargs))
        return generator
    if inspect.isasyncgenfunction(fn):
        @functools.wraps(fn)
        async def async_generator(*args: Any, **kwargs: Any) -> Any:
            with recording:
                async for item in fn(*args, **kwargs):
                    yield item
        return async_generator
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def coroutine(*args: Any, **kwargs: Any) -> Any:
            with recording:
                return await fn(*args, **kwargs)
        return coroutine

    @functools.wraps(fn)
    def function(*args: Any, **kwargs: Any) -> Any:
        with recording:
            return fn(*args, **kwargs)
    return function


def _caller_label() -> str:
    """``file:line`` of the first frame outside recompile_cli and contextlib (the ``with``)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_PACKAGE_DIR) and not name.endswith("contextlib.py"):
            return f"{relative(name)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "recorded block"


_PACKAGE_DIR = str(Path(__file__).resolve().parent)
