"""The core of the JAX-internals layer: the hooks on jit's cache-miss path.

The layer is the folder ``capture/jax/`` (see its ``__init__``); this module is its entry.

This module patches two functions on JAX's cache-miss path, both checked on JAX 0.10.2 and 0.12.0:

* ``jax._src.pjit._trace_for_jit(fun, ji, ctx_mesh, dbg, avals, args, kwargs)`` runs on every miss
  of jit's parameter cache, nested jits included (JAX >= 0.9; older versions used
  ``_create_pjit_jaxpr`` and are not hooked: ``probe()`` says so and the recorder runs in
  public-only mode there). Whether Python really re-traced is read from the miss counter of
  ``partial_eval.trace_to_jaxpr``'s cache.
* ``jax._src.pjit._pjit_lower`` (a weakref LRU cache) runs before every lowering; its cache keys
  tell what changed when a function is compiled again without a re-trace (sharding, donation).

Cache hits never reach either function, so nothing here runs on the hot path. Everything is
feature-detected: ``probe()`` says why the hooks cannot be used, and the recorder then falls back
to the public ``jax.monitoring`` events. Observers are called inside ``try``: a hook never raises
into user code.

The ``jax.monitoring`` listeners are registered and unregistered by its sibling
``listeners`` (the listener API differs across the supported versions).
"""

from __future__ import annotations

import enum
import inspect
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax import distributed
from recompile_cli.capture.jax.arguments import signatures
from recompile_cli.capture.jax.arguments.signatures import LowerInfo, TraceInfo
from recompile_cli.capture.jax.flatten_cost import flatten_cost

_PACKAGE_DIR = stack.OWN_DIR  # recompile_cli/: its frames are never the user's lines
_EXCLUDED = False


def jax_version() -> tuple[int, ...]:
    """The installed JAX version as a tuple of ints, e.g. ``(0, 10, 2)`` (``()`` if unknown)."""
    try:
        import jax  # lazy: capture loads before the job's environment is set

        text = jax.__version__
    except Exception:  # pragma: no cover - depends on the installed JAX
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def probe() -> str | None:
    """None when the private hooks can be installed, else the reason they cannot.

    Never raises: an unexpected JAX is a reason, not a crash.
    """
    try:
        return _probe()
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot inspect JAX internals ({type(exc).__name__}: {exc})"


def _probe() -> str | None:
    try:
        # lazy: capture loads before the job's environment is set
        from jax._src import config, pjit
        from jax._src.interpreters import partial_eval as pe
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot import JAX internals ({exc})"
    trace_cache = getattr(pe, "trace_to_jaxpr", None)
    needed = {
        "jax._src.pjit._trace_for_jit": getattr(pjit, "_trace_for_jit", None),
        "jax._src.pjit._pjit_lower.cache_keys": getattr(getattr(pjit, "_pjit_lower", None),
                                                        "cache_keys", None),
        "partial_eval.trace_to_jaxpr.cache_info": getattr(trace_cache, "cache_info", None),
        "config.trace_context_names": getattr(config, "trace_context_names", None),
    }
    missing = [name for name, obj in needed.items() if obj is None]
    if missing:
        version = ".".join(map(str, jax_version())) or "?"
        return (f"JAX {version} lacks " + ", ".join(missing)
                + "; the private hooks need JAX >= 0.9")
    params = list(inspect.signature(pjit._trace_for_jit).parameters)
    if params[:7] != ["fun", "ji", "ctx_mesh", "dbg", "avals", "args", "kwargs"]:
        return f"jax._src.pjit._trace_for_jit has an unknown signature {params}"
    return None


# JAX's files between a jitted function's caller and its trace: the jit call path (C++
# dispatch -> pjit.cache_miss -> _infer_params), AOT .lower()/.trace(), and the function
# transformations (vmap, grad, eval_shape) that call a jitted function for the user (read on
# JAX 0.10.2; a file missing from the list only makes such a caller not the user's).
JIT_CALL_PATH_FILES = frozenset({"pjit.py", "traceback_util.py", "stages.py", "api.py",
                                 "api_util.py", "linear_util.py", "batching.py", "ad.py"})


def trace_context() -> dict[str, str]:
    """The current tracing context (config values and context managers) as name -> text,
    values in full (``signatures.full_repr``).

    The context rarely changes between traces: when the values equal the last call's (the
    comparison JAX's own cache keys make; the same objects, almost always), the last answer is
    returned (the same dictionary: callers must not change it), so a trace pays one tuple
    comparison instead of ~50 ``repr`` calls."""
    from jax._src import config  # lazy: capture loads before the job's environment is set

    names, values = config.trace_context_names(), config.trace_context()
    last = _LAST_CONTEXT
    try:
        if last is not None and last[1] == values and last[0] == names:
            return last[2]
    except Exception:  # a value whose == raises: describe it afresh
        pass
    text = {name: _context_text(value) for name, value in zip(names, values, strict=False)}
    _remember_context(names, tuple(values), text)
    return text


def _context_text(value: Any) -> str:
    """A context value as the user sets it: an enum by its value (``'strict'``, what
    ``jax.numpy_dtype_promotion("strict")`` took), anything else in full."""
    if isinstance(value, enum.Enum):
        return signatures.full_repr(value.value)
    return signatures.full_repr(value)


_LAST_CONTEXT: tuple[Any, tuple[Any, ...], dict[str, str]] | None = None


def _remember_context(names: Any, values: tuple[Any, ...], text: dict[str, str]) -> None:
    global _LAST_CONTEXT
    _LAST_CONTEXT = (names, values, text)


class Hooks:
    """Patches the two private functions; ``uninstall`` puts the originals back."""

    def __init__(self, on_trace: Callable[[TraceInfo], None],
                 on_lower: Callable[[LowerInfo], None],
                 on_internal_error: Callable[[BaseException], None],
                 on_cost: Callable[[Any, Any], None] | None = None) -> None:
        self._on_trace = on_trace
        self._on_cost = on_cost  # (jaxpr, lowering) after each missed lowering (``cost``)
        self._on_lower = on_lower
        self._on_internal_error = on_internal_error
        self._local = threading.local()
        self._originals: dict[str, Any] = {}
        # False once uninstalled: a wrapper of ours that someone else still calls (they patched
        # over it and kept it) then only delegates to JAX's function and records nothing.
        self._active = False
        self._classes = signatures.EqualityClasses()  # static values, compared as JAX does
        # called after each top-level trace of a miss with its ``TraceInfo`` and ``JitInfo``
        # (``capture.running.first_call``: a plan's signatures warmed at a first call)
        self.after_trace: Callable[[TraceInfo, Any], None] | None = None

    def install(self) -> None:
        # lazy: capture loads before the job's environment is set
        from jax._src import pjit, source_info_util

        self._originals = {"_trace_for_jit": pjit._trace_for_jit, "_pjit_lower": pjit._pjit_lower}
        self._active = True
        pjit._trace_for_jit = self._trace_for_jit
        pjit._pjit_lower = _LowerWrapper(pjit._pjit_lower, self)
        # So that JAX's own source info and explain messages never blame our frames. This one
        # stays registered after the run (there is no public way to unregister); it only ever
        # concerns frames inside recompile_cli, so registering it once is enough.
        global _EXCLUDED
        if not _EXCLUDED and hasattr(source_info_util, "register_exclusion"):
            source_info_util.register_exclusion(_PACKAGE_DIR)
            _EXCLUDED = True

    def uninstall(self) -> list[str]:
        """Restore JAX; returns warnings when someone patched over us in the meantime.

        Never raises. A function that someone else put in place of ours is left as it is (and
        if it still calls our wrapper, the wrapper just calls JAX's original from now on).
        """
        problems: list[str] = []
        if not self._active:
            return problems
        self._active = False
        try:
            from jax._src import pjit  # lazy: capture loads before the job's environment is set
        except Exception as exc:  # pragma: no cover - JAX was there at install time
            return [f"could not restore JAX's internals ({exc})"]
        for name, original in self._originals.items():
            problem = restore(pjit, name, original, self._is_ours)
            if problem:
                problems.append(problem)
        return problems

    def _is_ours(self, current: Any) -> bool:
        return getattr(current, "__self__", None) is self or (
            isinstance(current, _LowerWrapper) and current._hooks is self)

    # -- the wrapped functions (miss path only) --------------------------------------------------
    def _trace_for_jit(self, fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Sequence[Any],
                       args: tuple[Any, ...], kwargs: dict[str, Any], *rest: Any) -> Any:
        # lazy: capture loads before the job's environment is set
        from jax._src.interpreters import partial_eval as pe

        original = self._originals["_trace_for_jit"]
        if not self._active:
            return original(fun, ji, ctx_mesh, dbg, avals, args, kwargs, *rest)
        try:
            misses_before = _misses(pe.trace_to_jaxpr)
        except Exception as exc:  # never raise into user code: run JAX's own function
            self._report(exc)
            return original(fun, ji, ctx_mesh, dbg, avals, args, kwargs, *rest)
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        error: BaseException | None = None
        result = None
        start = time.perf_counter()
        try:
            result = original(fun, ji, ctx_mesh, dbg, avals, args, kwargs, *rest)
            return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            seconds = time.perf_counter() - start
            self._local.depth = depth
            try:
                retraced = error is not None or _misses(pe.trace_to_jaxpr) > misses_before
                if retraced:
                    jaxpr = getattr(result, "params", {}).get("jaxpr") if result else None
                    flatten = (flatten_cost(args, kwargs, signatures.param_names(ji, len(args)),
                                            ji.static_argnums, ji.static_argnames)
                               if depth == 0 and error is None
                               and not signatures.is_eager_primitive(fun) else None)
                    info = signatures.trace_info(
                        fun, ji, dbg, avals, args, kwargs, depth, seconds, error, jaxpr,
                        trace_context(), self._classes, started=start, flatten=flatten)
                    self._on_trace(info)
                    if depth == 0 and error is None and self.after_trace is not None:
                        self.after_trace(info, ji)  # a first call's warm-up (never raises)
            except Exception as exc:  # never raise into user code
                self._report(exc)

    def _report(self, exc: BaseException) -> None:
        try:
            self._on_internal_error(exc)
        except Exception:
            pass


class _LowerWrapper:
    """Stands in for the ``_pjit_lower`` cache object; delegates everything else to it."""

    def __init__(self, cache: Any, hooks: Hooks) -> None:
        self._cache = cache
        self._hooks = hooks
        self._keys = signatures.LoweringKeys()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)

    def __call__(self, jaxpr: Any, *args: Any, **kwargs: Any) -> Any:
        cache = self._cache
        if not self._hooks._active:
            return cache(jaxpr, *args, **kwargs)
        try:
            misses_before = _misses(cache)
        except Exception as exc:  # never raise into user code: run JAX's own function
            self._hooks._report(exc)
            return cache(jaxpr, *args, **kwargs)
        # Lowering rules may trace helper jits at top level; count them as nested in this call.
        local = self._hooks._local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            result = cache(jaxpr, *args, **kwargs)
        finally:
            local.depth = depth
        try:
            if _misses(cache) > misses_before:
                info = _lower_info(self._keys, jaxpr, args)
                distributed.note(info.name, result)  # for --check-hosts
                self._hooks._on_lower(info)
                if self._hooks._on_cost is not None:
                    self._hooks._on_cost(jaxpr, result)
        except Exception as exc:  # never raise into user code
            self._hooks._report(exc)
        return result


def _lower_info(keys: signatures.LoweringKeys, jaxpr: Any, args: tuple[Any, ...]) -> LowerInfo:
    return signatures.lower_info(keys.add(jaxpr, tuple(args)), jaxpr, args)


def _misses(cache: Any) -> int:
    return int(cache.cache_info().misses)


# -- restoring what a hook patched -------------------------------------------------------------
# ``Hooks`` and ``cache_key.KeyHooks`` replace functions of JAX's private modules for the
# length of a recording; ``restore`` is how each puts one back.
def restore(module: Any, name: str, original: Any, ours: Callable[[Any], bool]) -> str | None:
    """Set ``module.name`` back to ``original`` when what is there now is ``ours``; else leave
    it (someone patched over us) and say so. Returns that warning, or None; never raises."""
    where = f"{getattr(module, '__name__', '?')}.{name}"
    try:
        if ours(getattr(module, name, None)):
            setattr(module, name, original)
            return None
        return f"{where} was replaced by someone else during the run; left as it is"
    except Exception as exc:
        return f"could not restore {where} ({exc})"
