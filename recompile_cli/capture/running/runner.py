"""Running a target under the recorder: the calls of a spec (``profile``), or a whole script
as ``__main__`` (``run_script``). It only runs; the recorder keeps what happened. Both start
from empty in-memory JAX caches and restore ``sys.argv``, ``sys.path`` and the working
directory; whatever the target does ends in a frozen ``Session``, and only a bad target
(``TargetError``) propagates. Never imports JAX at its top: the measured process imports this
module before its job's environment is set.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import runpy
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recompile_cli import exits
from recompile_cli.capture.code import stack
from recompile_cli.capture.code.stack import exception_summary
from recompile_cli.capture.counting import CallCounter
from recompile_cli.capture.recorder import Recorder
from recompile_cli.capture.running import exit_handlers, loader, modules, warmup
from recompile_cli.errors import TargetError
from recompile_cli.inputs.jit_options import check_static_args
from recompile_cli.session.model import HookMode, Outcome

if TYPE_CHECKING:  # the spec (and PyYAML) are imported by `profile` only, not by `run`
    from recompile_cli.capture.hosts.host_check import HostCheck
    from recompile_cli.inputs.spec import Spec
    from recompile_cli.session.events_log import EventLog

# progress(calls done, calls in all, compiles so far, seconds elapsed)
Progress = Callable[[int, int, int, float], None]
# invoke(callable, args, kwargs): what one call of a spec does (default: run it and block on its
# outputs; ``forecast`` traces it on abstract arguments instead)
Invoke = Callable[[Callable[..., Any], list[Any], dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class RunOptions:
    hook_mode: HookMode = HookMode.PRIVATE
    events_log: Path | EventLog | None = None  # a file, or a supervised run's pipe
    progress: Progress | None = None
    count_calls: bool = False  # scripts only: count calls of the functions the script jits
    host_check: HostCheck | None = None  # --check-hosts: called at each compile
    # specs only: replaces running each call (capture.running.forecast)
    invoke: Invoke | None = None
    spec_array: Callable[[Any], Any] | None = None  # specs only: builds the spec's arrays
    # a warm-up plan run before the workload (capture.running.warmup)
    after_warmup: Path | None = None
    warmup_parallel: int | None = None  # its warm_up(parallel=N)
    module: bool = False  # scripts only: the path is a module's name, run as python -m runs it


def is_jitted(fn: Any) -> bool:
    """True for the result of ``jax.jit`` (any form); those are called as they are."""
    return callable(fn) and hasattr(fn, "lower") and hasattr(fn, "trace") and hasattr(
        fn, "eval_shape")


def prepare(fn: Callable[..., Any], jit_options: dict[str, Any], no_jit: bool,
            recorder: Recorder) -> Callable[..., Any]:
    """The callable to profile: the target, jitted with the spec's options if it is plain."""
    import jax  # lazy: capture loads before the job's environment is set

    if no_jit:
        return fn
    if is_jitted(fn):
        if jit_options:
            recorder.warn("the target is already jitted; its own jit options are used and "
                          f"{', '.join(jit_options)} from the spec/flags are ignored")
        return fn
    return jax.jit(fn, **jit_options)


def profile(target: str, spec: Spec, jit_options: dict[str, Any], no_jit: bool,
            keep_going: bool = False, options: RunOptions = RunOptions()) -> Outcome:
    """Import ``target`` and make every call of the spec under the recorder, blocking on each
    call's outputs. What the module compiles at import is recorded too.

    Raises:
        TargetError: the target's module, file or function does not exist or cannot be imported.
    """
    with _recording(target, options) as recorder:
        _make_calls(recorder, target, spec, jit_options, no_jit, keep_going, options)
    return _outcome(recorder)


def profile_function(function: Callable[..., Any], label: str, spec: Spec,
                     jit_options: dict[str, Any], keep_going: bool = False,
                     options: RunOptions = RunOptions()) -> Outcome:
    """``profile`` for a function object given to the Python API (``forecast``): every call of
    the spec to ``function`` (jitted unless it already is) under the recorder."""
    with _recording(label, options) as recorder:
        call_spec(recorder, function, spec, jit_options, False, keep_going, options,
                  loader.resolver())
    return _outcome(recorder)


def _make_calls(recorder: Recorder, target: str, spec: Spec, jit_options: dict[str, Any],
                no_jit: bool, keep_going: bool, options: RunOptions) -> None:
    """The body of ``profile``: every outcome of the target is recorded, none escapes but a
    bad target and the interruptions that ``_recording`` turns into failures."""
    resolve = loader.resolver()
    try:
        found = loader.load_target(target)
    except SystemExit as exc:
        recorder.fail(f"importing {target} called sys.exit({exc.code!r})")
        return
    _check_callable(found, spec, jit_options, no_jit)
    if options.after_warmup is not None:
        try:
            warmup.warm_up_first(recorder, options.after_warmup, options.warmup_parallel)
        except warmup.WarmupFailed:
            return
    call_spec(recorder, found.function, spec, jit_options, no_jit, keep_going, options, resolve)


def call_spec(recorder: Recorder, function: Callable[..., Any], spec: Spec,
              jit_options: dict[str, Any], no_jit: bool, keep_going: bool, options: RunOptions,
              resolve: Callable[[str], Callable[..., Any]]) -> None:
    """Make every call of ``spec`` to ``function`` (jitted unless ``no_jit``) under the
    recorder; a call's failure is recorded, and stops the calls unless ``keep_going``."""
    from recompile_cli.inputs.materialize import Made, materialize  # imports JAX and numpy

    invoke = options.invoke or _run_call
    made = Made()  # what the spec's factories (``call:``) made, one per spec entry
    key = stack.function_key_of(function)
    total = recorder.calls_planned = len(spec.cases)
    recorder.calls[key] = 0
    call = prepare(function, jit_options, no_jit, recorder)
    started = time.perf_counter()
    for case in spec.cases:
        recorder.set_call(None, None)
        with recorder.paused():  # building arguments is not part of the profile
            try:
                args = [materialize(v, resolve, options.spec_array, made, (case.site, i))
                        for i, v in enumerate(case.args)]
                kwargs = {k: materialize(v, resolve, options.spec_array, made, (case.site, k))
                          for k, v in case.kwargs.items()}
            except exits.INTERRUPTIONS:
                raise
            except BaseException as exc:
                recorder.fail(exception_summary(f"building the arguments of {case.label}",
                                                exc), exc)
                break
        recorder.set_call(case.index, case.site or case.label, of=key)
        recorder.count_call(key)
        try:
            invoke(call, args, kwargs)
        except exits.INTERRUPTIONS:
            raise
        except SystemExit as exc:
            recorder.fail(f"{case.label} called sys.exit({exc.code!r})")
            if not keep_going:
                break
        except BaseException as exc:
            recorder.refused_call(exc, call, args, kwargs)
            recorder.fail(exception_summary(case.label, exc), exc)
            if not keep_going:
                break
        finally:
            if options.progress is not None:
                options.progress(recorder.calls[key], total, recorder.compiles,
                                 time.perf_counter() - started)


def _run_call(call: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> None:
    import jax  # lazy: capture loads before the job's environment is set

    jax.block_until_ready(call(*args, **kwargs))


def _check_callable(found: loader.Target, spec: Spec, jit_options: dict[str, Any],
                    no_jit: bool) -> None:
    """Before any call: static arguments name real parameters, and a target profiled without a
    spec takes no required argument."""
    if not no_jit and not is_jitted(found.function):
        check_static_args(found.function, jit_options, spec.path or "--static-argnames/nums")
    if spec.path:
        return
    try:
        parameters = inspect.signature(found.function).parameters.values()
    except (TypeError, ValueError):
        return
    required = [p.name for p in parameters if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        raise TargetError(f"{found.ref} takes {', '.join(required)}, and no --args spec says "
                          "what to pass. Write a spec (e.g. calls: [{args: [{array: [8, 8]}]}]) "
                          "and pass it with --args; docs/spec.md shows every form.")


def run_script(path: str, script_args: list[str], options: RunOptions = RunOptions()
               ) -> Outcome:
    """Run a script as ``__main__`` with ``sys.argv`` set and its folder on ``sys.path``.

    ``sys.exit(0)`` (or ``None``) is a normal end. The exit handlers the script registers run
    at its end, while the recorder still records (``exit_handlers``). With
    ``options.count_calls``, functions the script jits are wrapped to count their calls (a
    Python wrapper on their cached-call path) and events know during which call they happened.
    With ``options.after_warmup``, the plan runs after the script's definitions, before its
    ``if __name__ == "__main__":`` block (``capture.running.warmup.run_main``).

    With ``options.module``, ``path`` is a module's name, run as ``python -m`` runs it (the
    working folder first on ``sys.path``; ``capture.running.modules``).

    Raises:
        TargetError: the script does not exist or has a syntax error (no such module).
    """
    if options.module:
        modules.check_module(path)
        script, label = Path(path), f"-m {path} {' '.join(script_args)}".strip()
    else:
        script, label = loader.check_script(path), f"{path} {' '.join(script_args)}".strip()
    first = Path(os.getcwd()) if options.module else script.parent
    with _script_globals(script, script_args, first), _recording(label, options) as recorder:
        counter = CallCounter(lambda key, index: recorder.set_call(index, None, key),
                              recorder.calls, recorder.refused_call,
                              (recorder.static_call, recorder.statics.traces))
        recorder.statics.counting = options.count_calls
        try:
            with exit_handlers.captured() as handlers, (
                    counter if options.count_calls else contextlib.nullcontext()):
                if options.module:  # the CLI refuses --after-warmup with -m
                    modules.run_module(path)
                elif options.after_warmup is None:
                    runpy.run_path(str(script), run_name="__main__")
                else:
                    plan, parallel = options.after_warmup, options.warmup_parallel
                    warmup.run_main(script, lambda block: warmup.warm_up_first(
                        recorder, plan, parallel, up_front=block))
        except exits.INTERRUPTIONS:
            raise
        except warmup.WarmupFailed:
            pass  # recorded as the run's failure; the workload did not run
        except SystemExit as exc:
            if exc.code not in (None, 0):
                status = (f"status {exc.code}" if isinstance(exc.code, int)
                          else f"status 1 and the message {str(exc.code)[:200]!r}")
                recorder.fail(f"{path} exited with {status}")
        except BaseException as exc:
            recorder.fail(exception_summary(path, exc), exc)
        handlers.run()  # its exit handlers, recorded too (an interruption skips them)
    return _outcome(recorder)


@contextlib.contextmanager
def _script_globals(script: Path, script_args: list[str], first: Path) -> Iterator[None]:
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(first))
    try:
        yield
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path


@contextlib.contextmanager
def _recording(label: str, options: RunOptions) -> Iterator[Recorder]:
    """Record the block from clean JAX caches; it always ends with ``recorder.stop()``.

    Ctrl-C and SIGTERM stop the block and are recorded as its failure; the working directory
    is restored afterwards.
    """
    import jax  # lazy: capture loads before the job's environment is set

    exits.raise_pending()  # a signal that came while the tool started: the target never starts
    recorder = Recorder(label, hook_mode=options.hook_mode, events_log=options.events_log,
                        on_compile=options.host_check)
    if options.host_check is not None:
        options.host_check.bind(recorder)
    cwd = os.getcwd()
    jax.clear_caches()
    recorder.start()
    try:
        with exits.sigterm_raises():
            yield recorder
    except exits.INTERRUPTIONS as exc:
        recorder.interrupted = exits.interruption_code(exc)
        recorder.fail(exits.interruption_text(recorder.interrupted))
    finally:
        with contextlib.suppress(OSError):
            os.chdir(cwd)
        recorder.stop()


def _outcome(recorder: Recorder) -> Outcome:
    assert recorder.session is not None
    return Outcome(recorder.session, recorder.failure, recorder.interrupted,
                   recorder.failure_traceback)


def use_compilation_cache(path: str | Path) -> None:
    """Point JAX's persistent compilation cache at ``path`` (before anything compiles)."""
    import jax  # lazy: capture loads before the job's environment is set

    jax.config.update("jax_compilation_cache_dir", str(path))
