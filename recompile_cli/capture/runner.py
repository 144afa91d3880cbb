"""Running a target under the recorder: the calls of a spec, or a whole script as ``__main__``.

Both start from empty in-memory JAX caches (``jax.clear_caches()``), so counts are those of a
cold process even when the tool runs in-process more than once (tests, notebooks). Both return
the frozen ``Session`` and, when the program raised or was interrupted (Ctrl-C, SIGTERM), a
one-line summary: whatever was recorded before is kept, and streamed to ``events_log`` as it
happens when one is given.
"""

from __future__ import annotations

import contextlib
import runpy
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from recompile_cli.capture import frames
from recompile_cli.target import loader
from recompile_cli.capture.counting import CallCounter
from recompile_cli.session.model import Session
from recompile_cli.capture.recorder import Recorder
from recompile_cli.session.files import EventLog
from recompile_cli.target.spec import Spec, materialize

EXIT_SIGINT = 130
EXIT_SIGTERM = 143

# progress(calls done, calls in all, compiles so far, seconds elapsed)
Progress = Callable[[int, int, int, float], None]


@dataclass(frozen=True, slots=True)
class Outcome:
    session: Session
    failure: str | None  # one paragraph when the target raised or was interrupted, else None
    interrupted: int | None = None  # the exit code for an interruption (130, 143)


@dataclass(frozen=True, slots=True)
class RunOptions:
    hook_mode: str = "private"
    events_log: Path | None = None
    progress: Progress | None = None
    count_calls: bool = False  # scripts only: count calls of the functions the script jits


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM while a target runs, to stop it and report."""


@dataclass
class _Run:
    recorder: Recorder
    failures: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    interrupted: int | None = None
    total: int | None = None  # calls planned, for "(3 of 40 calls raised)"
    session: Session | None = None


def is_jitted(fn: Any) -> bool:
    """True for the result of ``jax.jit`` (any form); those are called as they are."""
    return callable(fn) and hasattr(fn, "lower") and hasattr(fn, "trace") and hasattr(
        fn, "eval_shape")


def prepare(fn: Callable[..., Any], jit_options: dict[str, Any], no_jit: bool,
            recorder: Recorder) -> Callable[..., Any]:
    """The callable to profile: the target, jitted with the spec's options if it is plain."""
    import jax

    if no_jit:
        return fn
    if is_jitted(fn):
        if jit_options:
            recorder.warn("the target is already jitted; its own jit options are used and "
                          f"{', '.join(jit_options)} from the spec/flags are ignored")
        return fn
    return jax.jit(fn, **jit_options)


def profile(target: loader.Target, spec: Spec, jit_options: dict[str, Any], no_jit: bool,
            keep_going: bool = False, options: RunOptions = RunOptions()) -> Outcome:
    """Make every call of the spec under the recorder, blocking on each call's outputs."""
    import jax

    resolve = loader.resolver()
    key = frames.function_key_of(target.function)
    total = len(spec.cases)
    with _recording(target.ref, options) as run:
        recorder, started = run.recorder, time.perf_counter()
        run.calls[key], run.total = 0, total
        call = prepare(target.function, jit_options, no_jit, recorder)
        for case in spec.cases:
            recorder.set_call(None, None)
            with recorder.paused():  # building arguments is not part of the profile
                try:
                    args = [materialize(v, resolve) for v in case.args]
                    kwargs = {k: materialize(v, resolve) for k, v in case.kwargs.items()}
                except Exception as exc:
                    run.failures.append(_summary(f"building the arguments of {case.label}", exc))
                    break
            recorder.set_call(case.index, case.site or case.label, of=key)
            run.calls[key] += 1
            try:
                jax.block_until_ready(call(*args, **kwargs))
            except Exception as exc:
                run.failures.append(_summary(case.label, exc))
                if not keep_going:
                    break
            finally:
                if options.progress is not None:
                    options.progress(run.calls[key], total, recorder.compiles,
                                     time.perf_counter() - started)
    return _outcome(run)


def run_script(path: str, script_args: list[str], options: RunOptions = RunOptions()
               ) -> Outcome:
    """Run a script as ``__main__`` with ``sys.argv`` set and its folder on ``sys.path``.

    With ``options.count_calls``, functions the script jits are wrapped to count their calls
    (this puts a Python wrapper on their cached-call path) and events know during which call
    they happened.
    """
    script = loader.check_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent))
    try:
        with _recording(f"{path} {' '.join(script_args)}".strip(), options) as run:
            counter = CallCounter(lambda key, index: run.recorder.set_call(index, None, key))
            run.calls = counter.counts
            try:
                with counter if options.count_calls else contextlib.nullcontext():
                    runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    run.failures.append(f"{path} exited with status {exc.code}")
            except Exception as exc:
                run.failures.append(_summary(path, exc))
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
    return _outcome(run)


@contextlib.contextmanager
def _recording(label: str, options: RunOptions) -> Iterator[_Run]:
    import jax

    log = EventLog(options.events_log) if options.events_log else None
    recorder = Recorder(label, hook_mode=options.hook_mode,
                        sink=log.event if log is not None else None)
    run = _Run(recorder)
    jax.clear_caches()
    recorder.start()
    if log is not None:
        log.header(recorder.environment(), label, recorder.base_context)
    previous = _on_sigterm()
    try:
        yield run
    except KeyboardInterrupt:
        run.interrupted = EXIT_SIGINT
        run.failures.append("interrupted by Ctrl-C (SIGINT)")
    except Terminated:
        run.interrupted = EXIT_SIGTERM
        run.failures.append("terminated by SIGTERM")
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        recorder.set_call(None, None)
        run.session = recorder.stop(target_exception=_join(run.failures, run.total),
                                    calls=dict(run.calls))
        if log is not None:
            log.end(run.session)


def _on_sigterm() -> Any:
    """Make SIGTERM stop the target like Ctrl-C does (main thread only); the old handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    return signal.signal(signal.SIGTERM, terminate)


def _outcome(run: _Run) -> Outcome:
    assert run.session is not None
    return Outcome(run.session, run.session.target_exception, run.interrupted)


def use_compilation_cache(path: str) -> None:
    """Point JAX's persistent compilation cache at ``path`` (before anything compiles)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", str(path))


def _summary(what: str, exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    where = loader.user_frame_of(exc)
    at = f" at {frames.relative(where)}" if where else ""
    return f"{what} raised {type(exc).__name__}{at}: {first}"


def _join(failures: list[str], total: int | None) -> str | None:
    """The first failure, and how many calls failed when there were several."""
    if not failures:
        return None
    text = failures[0]
    if len(failures) > 1 and total:
        text += f" ({len(failures)} of {total} calls raised)"
    return text
