"""Running a target under the recorder: the calls of a spec, or a whole script as ``__main__``.

Both start from empty in-memory JAX caches (``jax.clear_caches()``), so counts are those of a
cold process even when the tool runs in-process more than once (tests, notebooks). Both return the frozen ``Session`` and, when the program raised, a one-line summary of the exception:
whatever was recorded before the failure is kept.
"""

from __future__ import annotations

import functools
import inspect
import os
import runpy
import sys
from dataclasses import dataclass
from typing import Any, Callable

from . import loader
from .model import Session, function_key
from .recorder import Recorder
from .spec import Spec, materialize


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
            recorder.set_call(case.index, case.site or case.label)
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
        session = recorder.stop(target_exception=failure,
                                calls={_key_of(target.function): done})
    return Outcome(session, failure)


def run_script(path: str, script_args: list[str], hook_mode: str = "private") -> Outcome:
    """Run a script as ``__main__`` with ``sys.argv`` set and its folder on ``sys.path``."""
    script = loader.check_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent))
    recorder = Recorder(f"{path} {' '.join(script_args)}".strip(), hook_mode=hook_mode)
    failure = None
    import jax

    jax.clear_caches()
    recorder.start()
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            failure = f"{path} exited with status {exc.code}"
    except Exception as exc:
        failure = _summary(path, exc)
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        session = recorder.stop(target_exception=failure)
    return Outcome(session, failure)


def use_compilation_cache(path: str) -> None:
    """Point JAX's persistent compilation cache at ``path`` (before anything compiles)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", str(path))


def _key_of(fn: Any) -> str:
    """The ``name@file:line`` key JAX's debug info gives the target's Python function."""
    inner = fn
    while True:
        if isinstance(inner, functools.partial):
            inner = inner.func
        elif inspect.ismethod(inner):
            inner = inner.__func__
        elif hasattr(inner, "__wrapped__"):
            inner = inner.__wrapped__
        else:
            break
    code = getattr(inner, "__code__", None)
    name = getattr(inner, "__name__", type(inner).__name__)
    where = f"{code.co_filename}:{code.co_firstlineno}" if code else None
    return function_key(name, where)


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
