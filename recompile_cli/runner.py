"""Running a target under the recorder: the calls of a spec, or a whole script as ``__main__``.

Both start from empty in-memory JAX caches (``jax.clear_caches()``), so counts are those of a
cold process even when the tool runs in-process more than once (tests, notebooks). Both return the frozen ``Session`` and, when the program raised, a one-line summary of the exception:
whatever was recorded before the failure is kept.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
from dataclasses import dataclass
from typing import Any, Callable

from . import frames, loader
from .counting import CallCounter
from .model import Session
from .recorder import Recorder
from .spec import Case, Spec, materialize


@dataclass(frozen=True, slots=True)
class Outcome:
    session: Session
    failure: str | None  # one paragraph when the target raised, else None


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
            keep_going: bool = False, hook_mode: str = "private") -> Outcome:
    """Make every call of the spec under the recorder, blocking on each call's outputs."""
    import jax

    recorder = Recorder(target.ref, hook_mode=hook_mode)
    resolve = loader.resolver()
    failures: list[str] = []
    done = 0
    key = frames.function_key_of(target.function)
    jax.clear_caches()
    recorder.start()
    try:
        call = prepare(target.function, jit_options, no_jit, recorder)
        for case in spec.cases:
            recorder.set_call(None, None)
            with recorder.paused():  # building arguments is not part of the profile
                try:
                    args = [materialize(v, resolve) for v in case.args]
                    kwargs = {k: materialize(v, resolve) for k, v in case.kwargs.items()}
                except Exception as exc:
                    failures.append(_summary(f"building the arguments of {case.label}", exc))
                    break
            recorder.set_call(case.index, case.site or case.label, of=key)
            done += 1
            try:
                jax.block_until_ready(call(*args, **kwargs))
            except Exception as exc:
                failures.append(_summary(case.label, exc))
                if not keep_going:
                    break
    finally:
        recorder.set_call(None, None)
        failure = _join(failures, len(spec.cases))
        session = recorder.stop(target_exception=failure, calls={key: done})
    return Outcome(session, failure)


def run_script(path: str, script_args: list[str], hook_mode: str = "private",
               count_calls: bool = False) -> Outcome:
    """Run a script as ``__main__`` with ``sys.argv`` set and its folder on ``sys.path``.

    With ``count_calls``, functions the script jits are wrapped to count their calls (this puts
    a Python wrapper on their cached-call path) and events know which call they happened in.
    """
    script = loader.check_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent))
    recorder = Recorder(f"{path} {' '.join(script_args)}".strip(), hook_mode=hook_mode)
    failure = None
    import jax

    jax.clear_caches()
    counter = CallCounter(lambda key, index: recorder.set_call(index, None, key))
    recorder.start()
    try:
        with counter if count_calls else contextlib.nullcontext():
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            failure = f"{path} exited with status {exc.code}"
    except Exception as exc:
        failure = _summary(path, exc)
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        session = recorder.stop(target_exception=failure, calls=counter.counts)
    return Outcome(session, failure)


def single_call() -> Case:
    """The call made when no spec is given: one call without arguments."""
    return Case(0, "call 1", (), {}, "call 1")


def use_compilation_cache(path: str) -> None:
    """Point JAX's persistent compilation cache at ``path`` (before anything compiles)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", str(path))


def _summary(what: str, exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    where = loader.user_frame_of(exc)
    at = f" at {_relative(where)}" if where else ""
    return f"{what} raised {type(exc).__name__}{at}: {first}"


def _join(failures: list[str], total: int) -> str | None:
    if not failures:
        return None
    text = failures[0]
    if len(failures) > 1:
        text += f" ({len(failures)} of {total} calls raised)"
    return text


def _relative(location: str) -> str:
    try:
        return os.path.relpath(location) if not location.startswith("..") else location
    except ValueError:
        return location
