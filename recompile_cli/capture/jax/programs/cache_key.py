"""Part of the JAX-internals layer: JAX's persistent-cache key of each compile, taken apart.

JAX builds the key in ``jax._src.cache_key.get`` from eight named parts (``computation``,
``jax_lib version``, ``backend version``, ``XLA flags``, ``compile_options``,
``accelerator_config``, ``compression``, ``custom_hook``) and only logs each part's hash at
DEBUG. ``KeyHooks`` patches, for the length of a recording (read on JAX 0.10.2 and 0.12.0.1,
where the names below are the same; JAX < 0.9 is not hooked: the recorder runs public-only
there and says that the explanation needs JAX >= 0.9):

* ``compilation_cache.get_cache_key(module, devices, compile_options, backend, ...)``, which
  ``compiler._get_cache_key`` calls once per compile with the cache in use: the key, and from
  the module the normalised fingerprint, constants and operations (``cache_key_text``);
* ``cache_key._log_cache_key_hash(hash_obj, name, hashfn)``, which ``get`` calls after each
  part: each part's own digest, computed as JAX's DEBUG log does (``hashfn`` on a fresh hash);
* ``compiler._cache_write`` and ``compilation_cache.put_executable_and_time`` /
  ``get_executable_and_time``: why a miss was not written, the exact compile time, read and
  write errors, and the time a hit took.

Everything runs on the miss path only (a cached call never reaches JAX's compiler) and only
while a persistent cache directory is configured. Every wrapper calls JAX's own function and
catches its own errors: a hook never raises into user code. On a write, the exact compile time
is kept beside the entry (``DIR/recompile-cli/KEY``), so that a later hit can say exactly what it
saved (JAX stores whole seconds, which is 0 for most compiles).

The cache folder is not ours alone, so what it holds is untrusted input: the exact time is
written and read only inside the folder (``fileio``'s ``within``: a planted link
``DIR/recompile-cli -> /elsewhere`` is refused, a FIFO is not waited on), and a stored time is
used only when it is a number of seconds in range (``ranges``) that agrees with JAX's own whole
seconds for the entry; anything else is skipped with a warning naming the file (``warn``), never
shown as a figure (a hit that "saved 7.0e64 s").
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from msgspec.structs import replace

from recompile_cli import fileio, ranges
from recompile_cli.capture.code import stack
from recompile_cli.capture.hosts.process import configured_cache_dir
from recompile_cli.capture.jax import hooks
from recompile_cli.capture.jax.programs import cache_key_text, module_constants
from recompile_cli.session.cache_key import CacheKeyInfo, CacheMissReason, pairs
from recompile_cli.session.model import CacheOutcome, Owner

TIMES_FOLDER = "recompile-cli"  # beside JAX's "KEY-cache" files; JAX's LRU cache ignores it
# JAX configuration values that enter the key through the compile options or the hashing itself.
_CONFIG_NAMES = ("jax_use_shardy_partitioner", "jax_exec_time_optimization_effort",
                 "jax_memory_fitting_effort", "jax_optimization_level",
                 "jax_memory_fitting_level", "jax_enable_remat_opt_pass",
                 "jax_xla_profile_version", "jax_compilation_cache_include_metadata_in_key",
                 "jax_remove_custom_partitioning_ptr_from_cache_key",
                 "jax_persistent_cache_enable_xla_caches", "jax_enable_x64")
_EXCLUDED_FLAGS = ("--xla_dump", "--xla_force_host_platform_device_count")


def probe() -> str | None:
    """None when the hooks can be installed, else why not (never raises)."""
    try:
        # lazy: capture loads before the job's environment is set
        from jax._src import cache_key, compilation_cache, compiler
    except Exception as exc:  # pragma: no cover - depends on the installed JAX
        return f"cannot import JAX's compilation cache ({exc})"
    needed = {"cache_key._log_cache_key_hash": getattr(cache_key, "_log_cache_key_hash", None),
              "compilation_cache.get_cache_key": getattr(compilation_cache, "get_cache_key", None),
              "compilation_cache.put_executable_and_time":
                  getattr(compilation_cache, "put_executable_and_time", None),
              "compilation_cache.get_executable_and_time":
                  getattr(compilation_cache, "get_executable_and_time", None),
              "compiler._cache_write": getattr(compiler, "_cache_write", None)}
    missing = [name for name, obj in needed.items() if obj is None]
    return f"JAX lacks {', '.join(missing)}" if missing else None


@dataclass
class _Probe:
    """What the hooks saw of the compile in progress on this thread."""

    info: CacheKeyInfo
    reason: CacheMissReason | None = None
    compile_seconds: float | None = None
    retrieval_seconds: float | None = None
    stored_seconds: float | None = None
    parts: dict[str, str] = field(default_factory=dict)


class KeyHooks:
    """Patches JAX's cache-key and cache read/write functions; ``take`` hands over the
    current thread's ``CacheKeyInfo`` once its compile ended."""

    def __init__(self, on_internal_error: Callable[[BaseException], None],
                 warn: Callable[[str], None] = lambda text: None) -> None:
        self._on_internal_error = on_internal_error
        self._warn = warn  # a stored value skipped or a cache file refused, naming the file
        self._local = threading.local()
        self._originals: dict[str, tuple[Any, Any]] = {}  # name -> (module, JAX's function)
        self._active = False

    # -- lifecycle -------------------------------------------------------------------------------
    def install(self) -> None:
        # lazy: capture loads before the job's environment is set
        from jax._src import cache_key, compilation_cache, compiler

        for module, name, wrapper in (
                (compilation_cache, "get_cache_key", self._get_cache_key),
                (cache_key, "_log_cache_key_hash", self._log_part),
                (compiler, "_cache_write", self._cache_write),
                (compilation_cache, "put_executable_and_time", self._put),
                (compilation_cache, "get_executable_and_time", self._get)):
            self._originals[name] = (module, getattr(module, name))
            setattr(module, name, wrapper)
        self._active = True

    def uninstall(self) -> list[str]:
        """Put JAX's functions back (those still ours); never raises."""
        problems = []
        self._active = False
        for name, (module, original) in self._originals.items():
            problem = hooks.restore(
                module, name, original, lambda now: getattr(now, "__self__", None) is self)
            if problem:
                problems.append(problem)
        return problems

    def take(self, outcome: CacheOutcome | None) -> CacheKeyInfo | None:
        """The key of the compile that just ended on this thread, completed with its outcome;
        None when no key was computed. Never raises."""
        probe: _Probe | None = getattr(self._local, "probe", None)
        self._local.probe = None
        if probe is None:
            return None
        try:
            return _finish(probe, outcome, self._warn)
        except Exception as exc:
            self._report(exc)
            return probe.info

    # -- the wrapped functions (miss path only) --------------------------------------------------
    def _original(self, name: str) -> Any:
        return self._originals[name][1]

    def _get_cache_key(self, module: Any, devices: Any, compile_options: Any, backend: Any,
                       *args: Any, **kwargs: Any) -> Any:
        original = self._original("get_cache_key")
        self._local.probe = None  # a compile that failed before it ended left its probe here
        if not self._active or not configured_cache_dir():
            return original(module, devices, compile_options, backend, *args, **kwargs)
        self._local.parts = {}
        try:
            key = original(module, devices, compile_options, backend, *args, **kwargs)
        finally:
            parts, self._local.parts = self._local.parts, None
        try:
            self._local.probe = _Probe(info=_describe(key, parts, module, devices,
                                                      compile_options, backend))
        except Exception as exc:  # never raise into user code
            self._local.probe = None
            self._report(exc)
        return key

    def _log_part(self, hash_obj: Any, name: str, hashfn: Any) -> Any:
        parts = getattr(self._local, "parts", None)
        if parts is not None:
            try:
                fresh = hashlib.sha256()
                hashfn(fresh)
                parts[name] = fresh.hexdigest()[:cache_key_text.DIGEST]
            except Exception as exc:
                self._report(exc)
        return self._original("_log_cache_key_hash")(hash_obj, name, hashfn)

    def _cache_write(self, *args: Any, **kwargs: Any) -> Any:
        original = self._original("_cache_write")
        probe: _Probe | None = getattr(self._local, "probe", None)
        if probe is not None:
            try:
                probe.compile_seconds = float(args[1] if len(args) > 1
                                              else kwargs["compile_time_secs"])
                probe.reason = _write_refusal(probe.compile_seconds, args, kwargs)
            except Exception as exc:
                self._report(exc)
        return original(*args, **kwargs)

    def _put(self, *args: Any, **kwargs: Any) -> Any:
        original = self._original("put_executable_and_time")
        probe: _Probe | None = getattr(self._local, "probe", None)
        try:
            result = original(*args, **kwargs)
        except BaseException:
            if probe is not None:
                probe.reason = CacheMissReason.WRITE_ERROR
            raise
        if probe is not None:  # returned: written, or refused for its size or a missing cache
            try:
                # lazy: capture loads before the job's environment is set
                from jax._src import compilation_cache

                probe.reason = (CacheMissReason.CACHE_DISABLED
                                if getattr(compilation_cache, "_cache", None) is None
                                else CacheMissReason.UNDER_MIN_ENTRY_SIZE)
            except Exception as exc:
                self._report(exc)
        return result

    def _get(self, *args: Any, **kwargs: Any) -> Any:
        original = self._original("get_executable_and_time")
        probe: _Probe | None = getattr(self._local, "probe", None)
        start = time.perf_counter()
        try:
            result = original(*args, **kwargs)
        except BaseException:
            if probe is not None:
                probe.reason = CacheMissReason.READ_ERROR
            raise
        if probe is not None:
            try:
                probe.retrieval_seconds = time.perf_counter() - start
                if result[0] is not None:
                    probe.stored_seconds = _jax_stored(probe.info.key, result[1], self._warn)
            except Exception as exc:
                self._report(exc)
        return result

    def _report(self, exc: BaseException) -> None:
        try:
            self._on_internal_error(exc)
        except Exception:
            pass


def _finish(probe: _Probe, outcome: CacheOutcome | None,
            warn: Callable[[str], None]) -> CacheKeyInfo:
    info = replace(probe.info, compile_seconds=probe.compile_seconds,
                   retrieval_seconds=probe.retrieval_seconds)
    if outcome == CacheOutcome.HIT:
        exact = read_compile_time(info.key, probe.stored_seconds, warn)
        stored = exact if exact is not None else probe.stored_seconds
        saved = None
        if stored is not None and probe.retrieval_seconds is not None and (
                exact is not None or stored > 0):
            saved = max(stored - probe.retrieval_seconds, 0.0)  # as JAX's figure: never < 0
        return replace(info, stored_seconds=stored, stored_exact=exact is not None,
                       saved_seconds=saved)
    if outcome == CacheOutcome.MISS_WRITTEN:
        if probe.compile_seconds is not None:
            remember_compile_time(info.key, probe.compile_seconds, warn)
        return info
    reason = probe.reason
    if reason is None and probe.compile_seconds is None:
        reason = CacheMissReason.CACHE_DISABLED  # JAX wrote nothing and did not try
    return replace(info, reason=reason)


def _jax_stored(key: str, value: Any, warn: Callable[[str], None]) -> float | None:
    """JAX's whole seconds stored with the entry ``key``, when they are a number of seconds in
    range; else None, with a warning naming the entry (a damaged or planted one)."""
    seconds = ranges.as_float(value)
    if seconds is not None and not ranges.number_problem(seconds, ranges.MAX_SECONDS):
        return seconds
    folder = configured_cache_dir() or "?"
    warn(f"{os.path.join(folder, key)}-cache: the compile time stored in this persistent-cache "
         f"entry, {ranges.shown(value)} s, is not a number of seconds from 0 to "
         f"{ranges.MAX_SECONDS:,.0f}; it was skipped (the entry may be damaged)")
    return None


def _write_refusal(seconds: float, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> CacheMissReason | None:
    """Why ``compiler._cache_write`` will not write, checked in its own order."""
    # lazy: capture loads before the job's environment is set
    from jax._src import config, distributed

    if getattr(distributed.global_state, "process_id", 0) != 0:
        return CacheMissReason.NOT_PROCESS_0
    callbacks = args[5] if len(args) > 5 else kwargs.get("host_callbacks")  # JAX < 0.11
    if callbacks:
        return CacheMissReason.HOST_CALLBACKS
    if seconds < config.persistent_cache_min_compile_time_secs.value:
        return CacheMissReason.UNDER_MIN_COMPILE_TIME
    return None


def _describe(key: str, parts: dict[str, str], module: Any, devices: Any,
              compile_options: Any, backend: Any) -> CacheKeyInfo:
    asm, elided = _module_text(module)
    normal = cache_key_text.normalise(asm, _is_user_file, elided)
    return CacheKeyInfo(
        key=str(key), parts=pairs(parts), fingerprint=normal.fingerprint,
        constants_digest=normal.constants_digest, symbols_digest=normal.symbols_digest,
        constants=tuple(normal.constants), ops="; ".join(normal.ops), ops_total=normal.ops_total,
        sites=tuple(normal.sites), xla_flags=tuple(xla_flags()),
        jaxlib_version=_jaxlib_version(),
        backend_version=f"{backend.platform} {backend.platform_version}".strip(),
        config=pairs(_config_values()), compile_options=pairs(_options(compile_options, devices)),
        devices=_devices(devices))


def _module_text(module: Any) -> tuple[str, list[str]]:
    """The module's text with its large constants elided, and their digests (in their place);
    printed whole where they cannot all be hashed."""
    digests = module_constants.large_constant_digests(module)
    if digests is not None:
        try:
            return module.operation.get_asm(
                enable_debug_info=True,
                large_elements_limit=module_constants.LARGE_ELEMENTS), digests
        except TypeError:  # MLIR bindings without the option
            pass
    return module.operation.get_asm(enable_debug_info=True), []


def xla_flags() -> list[str]:
    """The flags JAX hashes into the key (``cache_key._hash_xla_flags``): ``XLA_FLAGS``,
    ``LIBTPU_INIT_ARGS`` and ``--xla*`` program arguments (and ``add_flag_prefixes``'s), sorted,
    without those JAX leaves out (its ``xla_flags_to_exclude_from_cache_key``)."""
    from jax._src import cache_key  # lazy: capture loads before the job's environment is set

    excluded = tuple(getattr(cache_key, "xla_flags_to_exclude_from_cache_key", ()))
    prefixes = ("--xla", *getattr(cache_key, "get_flag_prefixes", list)())
    flags = os.environ.get("XLA_FLAGS", "").split() + os.environ.get(
        "LIBTPU_INIT_ARGS", "").split()
    flags += [arg for arg in sys.argv if arg.startswith(prefixes)]
    return sorted(f for f in flags if f.split("=")[0] not in excluded
                  and not (not excluded and f.startswith(_EXCLUDED_FLAGS)))


def _is_user_file(path: str) -> bool:
    return stack.owner_of(path) != Owner.JAX and "site-packages" not in path


def _jaxlib_version() -> str:
    from jax._src import lib  # lazy: capture loads before the job's environment is set

    return str(getattr(lib, "version_str", ""))


def _config_values() -> dict[str, str]:
    import jax  # lazy: capture loads before the job's environment is set

    values = getattr(jax.config, "values", {})
    return {name.removeprefix("jax_"): str(values[name]) for name in _CONFIG_NAMES
            if name in values}


def _options(options: Any, devices: Any) -> dict[str, str]:
    out = {"num_replicas": str(options.num_replicas),
           "num_partitions": str(options.num_partitions),
           "devices": str(getattr(devices, "size", "?"))}
    debug = options.executable_build_options.debug_options
    for name in ("xla_gpu_per_fusion_autotune_cache_dir", "xla_gpu_kernel_cache_file"):
        value = getattr(debug, name, "")  # JAX < 0.12 keys on them: set from the cache folder
        if value:
            out[name] = str(value)
    overrides = getattr(options, "env_option_overrides", None)
    if overrides:
        out["env_option_overrides"] = ", ".join(f"{k}:{v}" for k, v in overrides)
    return out


def _devices(devices: Any) -> str:
    kinds: dict[str, int] = {}
    for device in devices.flat:
        kind = str(getattr(device, "device_kind", "?"))
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{count} x {kind}" for kind, count in kinds.items())


def _times_path(key: str) -> tuple[str, str] | None:
    """``DIR/recompile-cli/KEY`` and ``DIR``, for a key that is one file name."""
    folder = configured_cache_dir()
    if not folder or "://" in folder or os.sep in key or not key or key in (".", ".."):
        return None
    return os.path.join(folder, TIMES_FOLDER, key), folder


def remember_compile_time(key: str, seconds: float,
                          warn: Callable[[str], None] = lambda text: None) -> None:
    """Keep the exact compile time of an entry JAX just wrote (JAX keeps whole seconds), inside
    the cache folder only: a link that leads out of it is refused with a warning."""
    where = _times_path(key)
    if where is None:
        return
    path, folder = where
    try:  # (makes DIR/recompile-cli, inside DIR only)
        fileio.atomic_write_text(path, repr(float(seconds)), within=folder)
    except fileio.OutsideFolder:
        link = os.path.dirname(path) if os.path.islink(os.path.dirname(path)) else path
        warn(f"{link}: a link leads outside the cache folder {folder}; recompile-cli did not "
             "write its exact compile times there (remove the link)")
    except OSError:
        pass


_TIME_BYTES = 64  # repr of a float, with room to spare


def read_compile_time(key: str, jax_seconds: float | None = None,
                      warn: Callable[[str], None] = lambda text: None) -> float | None:
    """The exact compile time kept for ``key``, if recompile-cli saw it written and it is
    believable: a number of seconds in range whose whole seconds are JAX's own for the entry
    (``jax_seconds``, where known). Anything else is skipped with a warning naming the file."""
    where = _times_path(key)
    if where is None:
        return None
    path, folder = where
    try:
        data = fileio.read_within(path, folder, _TIME_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(f"{path}: recompile-cli's exact compile time was not read "
             f"({exc.strerror or exc}); the hit's saved time is JAX's whole seconds")
        return None
    text = data.decode("ascii", "replace").strip()
    try:
        seconds: float | None = float(text) if len(data) <= _TIME_BYTES else None
    except ValueError:
        seconds = None
    if seconds is not None and ranges.number_problem(seconds, ranges.MAX_SECONDS):
        seconds = None
    if seconds is not None and jax_seconds is not None and int(seconds) != int(jax_seconds):
        seconds = None  # not the time of this entry: JAX stored int(compile seconds)
    if seconds is None:
        agrees = f" agreeing with JAX's {jax_seconds:g} s" if jax_seconds is not None else ""
        warn(f"{path}: the exact compile time it holds, {ranges.shown(text[:40])}, is not a "
             f"number of seconds from 0 to {ranges.MAX_SECONDS:,.0f}{agrees}; it was skipped "
             "and the hit's saved time is JAX's whole seconds (delete the file if it is "
             "damaged)")
    return seconds
