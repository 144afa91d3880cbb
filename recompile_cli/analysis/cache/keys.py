"""Why JAX's persistent compilation cache missed: the cache keys of two runs (or two processes
of one job) compared part by part.

``explain(old, new)`` names every part of JAX's key that differs between two compiles
(``CacheKeyInfo``, recorded by ``capture.jax.programs.cache_key``) and how: the constants only (each
value before -> after and the user line that reads it), XLA flags, jaxlib or backend version, JAX
configuration values, compile options, devices, private symbol names only, location metadata
only, or else the first differing operation with its user line. ``diff_sessions`` pairs each
function's compiles across two sessions (``diff``); ``diff_processes`` does it between process 0
and every other process of a merged session (``merge``). A run's hits and misses are
``cache_outcomes``'s. Pure: no I/O, no JAX.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from recompile_cli.analysis.compare import baseline_key
from recompile_cli.session.cache_key import CacheKeyInfo
from recompile_cli.session.locations import relative
from recompile_cli.session.model import CacheOutcome, Event, HookMode, Owner, Session

CONSTANTS_FIX = ("a hyperparameter baked into the program: pass it as an argument and one cache "
                 "entry serves the whole sweep")


class KeyPart(StrEnum):
    """What differs between two cache keys."""

    CONSTANTS = "constants"
    XLA_FLAGS = "xla_flags"
    JAXLIB_VERSION = "jaxlib_version"
    BACKEND_VERSION = "backend_version"
    JAX_CONFIG = "jax_config"
    COMPILE_OPTIONS = "compile_options"
    ACCELERATOR = "accelerator_config"
    COMPRESSION = "compression"
    CUSTOM_HOOK = "custom_hook"
    PRIVATE_SYMBOLS = "private_symbols"
    METADATA = "metadata"
    COMPUTATION = "computation"


@dataclass(frozen=True, slots=True)
class KeyDetail:
    """One value that differs: ``what`` it is, its value in OLD and NEW (None: absent), and the
    user line it comes from, where known."""

    what: str
    before: str | None
    after: str | None
    site: str | None = None


@dataclass(frozen=True, slots=True)
class KeyChange:
    part: KeyPart
    summary: str
    details: tuple[KeyDetail, ...] = ()
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class KeyDiff:
    """A function whose compile in NEW has a key no compile of it in OLD had."""

    function: str  # file.py:name
    owner: Owner
    old_key: str
    new_key: str
    new_outcome: CacheOutcome | None
    changes: tuple[KeyChange, ...]


@dataclass(frozen=True, slots=True)
class KeyComparison:
    """``diff``'s persistent-cache section: the functions whose keys changed (JAX's own
    functions counted apart), and how many compiled with the same key in both."""

    changed: tuple[KeyDiff, ...]
    same: int
    jax_changed: int
    recorded: bool  # both sessions have keys (private hooks, a cache directory)
    configured: bool = False  # either session ran with a persistent cache directory
    # ("OLD" or "NEW", why that run has no keys), for each run without any (``diff_sessions``)
    missing: tuple[tuple[str, str], ...] = ()


def explain(old: CacheKeyInfo, new: CacheKeyInfo) -> list[KeyChange]:
    """Every part of the key that differs from ``old`` to ``new``, and how."""
    old_parts, new_parts = old.part_digests(), new.part_digests()

    def differs(name: str) -> bool:
        return old_parts.get(name) != new_parts.get(name)

    changes: list[KeyChange] = []
    flags = _flag_details(old.xla_flags, new.xla_flags)
    if differs("XLA flags") or flags:
        changes.append(KeyChange(KeyPart.XLA_FLAGS, "XLA flags differ: " + "; ".join(
            _detail_text(d) for d in flags), tuple(flags)))
    if differs("jax_lib version"):
        changes.append(KeyChange(KeyPart.JAXLIB_VERSION, f"jaxlib version {old.jaxlib_version} "
                                 f"-> {new.jaxlib_version}", (KeyDetail(
                                     "jaxlib", old.jaxlib_version, new.jaxlib_version),)))
    if differs("backend version"):
        changes.append(KeyChange(KeyPart.BACKEND_VERSION, f"backend {old.backend_version} -> "
                                 f"{new.backend_version}", (KeyDetail(
                                     "backend", old.backend_version, new.backend_version),)))
    config = _dict_details(old.config_values(), new.config_values(), prefix="jax_")
    if config:
        changes.append(KeyChange(KeyPart.JAX_CONFIG, "JAX configuration values in the key "
                                 "differ: " + "; ".join(map(_detail_text, config)),
                                 tuple(config)))
    if differs("compile_options"):
        changes.append(_options_change(old, new, bool(flags), bool(config)))
    if differs("accelerator_config"):
        changes.append(KeyChange(KeyPart.ACCELERATOR, f"devices {old.devices} -> {new.devices}",
                                 (KeyDetail("devices", old.devices, new.devices),)))
    for part, name in ((KeyPart.COMPRESSION, "compression"),
                       (KeyPart.CUSTOM_HOOK, "custom_hook")):
        if differs(name):
            changes.append(KeyChange(part, f"the {name} part of the key differs"))
    if differs("computation"):
        changes.append(_computation_change(old, new))
    return changes


def _computation_change(old: CacheKeyInfo, new: CacheKeyInfo) -> KeyChange:
    if old.fingerprint == new.fingerprint and old.fingerprint:
        if old.constants_digest != new.constants_digest:
            details = _constant_details(old, new)
            noun = "constant differs" if len(details) == 1 else "constants differ"
            return KeyChange(KeyPart.CONSTANTS, f"only constants differ ({len(details)} "
                             f"{noun}); the programs are otherwise identical", tuple(details),
                             CONSTANTS_FIX)
        if old.symbols_digest != new.symbols_digest:
            return KeyChange(KeyPart.PRIVATE_SYMBOLS, "only private symbol names differ (e.g. "
                             "@clip_0 -> @clip_1): the programs are otherwise identical")
        return KeyChange(KeyPart.METADATA, "only location metadata differs (e.g. another "
                         "checkout folder): the programs are otherwise identical")
    retyped = _retyped_constants(old, new)
    if retyped:
        first = retyped[0]
        at = f" at {relative(first.site)}" if first.site else ""
        more = f" (and {len(retyped) - 1} more)" if len(retyped) > 1 else ""
        return KeyChange(KeyPart.COMPUTATION, f"the program differs: a baked-in {first.what} "
                         f"changed {_type_change(first)} ({first.before} -> {first.after})"
                         f"{at}{more}", tuple(retyped))
    return KeyChange(KeyPart.COMPUTATION, "the program differs: " + _first_op(old, new),
                     tuple(_first_op_details(old, new)))


def _retyped_constants(old: CacheKeyInfo, new: CacheKeyInfo) -> list[KeyDetail]:
    """The constants baked into both programs whose shape or dtype changed (a global table
    that grew), each with the user line that reads it."""
    return [KeyDetail(f"constant {index + 1}", a.type, b.type, b.site or a.site)
            for index, (a, b) in enumerate(zip(old.constants, new.constants, strict=False))
            if a.type != b.type]


def _type_change(detail: KeyDetail) -> str:
    """``shape``, ``dtype`` or ``shape and dtype``: what differs between two abstract types
    (``i32[17,4]`` -> ``i32[17,8]``)."""
    (old_dtype, _, old_shape), (new_dtype, _, new_shape) = (
        (text or "").partition("[") for text in (detail.before, detail.after))
    changed = [name for name, a, b in (("shape", old_shape, new_shape),
                                       ("dtype", old_dtype, new_dtype)) if a != b]
    return " and ".join(changed) or "type"


def _first_op(old: CacheKeyInfo, new: CacheKeyInfo) -> str:
    details = _first_op_details(old, new)
    if details:
        return f"first at {details[0].what}"
    if old.ops_total != new.ops_total:
        return f"{old.ops_total} -> {new.ops_total} operations"
    return "beyond the operations recorded"


def _first_op_details(old: CacheKeyInfo, new: CacheKeyInfo) -> list[KeyDetail]:
    old_ops, new_ops = old.op_list(), new.op_list()
    for index, (a, b) in enumerate(zip(old_ops, new_ops, strict=False)):
        if a.split(" ")[0] != b.split(" ")[0]:
            old_name, old_site = _op_text(old, a)
            new_name, new_site = _op_text(new, b)
            return [KeyDetail(f"operation {index + 1}", old_name, new_name,
                              new_site or old_site)]
    shorter = min(len(old_ops), len(new_ops))
    if len(old_ops) != len(new_ops) and shorter < max(old.ops_total, new.ops_total):
        before: str | None = None
        after: str | None = None
        site: str | None = None
        if len(old_ops) > shorter:
            before, site = _op_text(old, old_ops[shorter])
        if len(new_ops) > shorter:
            after, site = _op_text(new, new_ops[shorter])
        return [KeyDetail(f"operation {shorter + 1}", before, after, site)]
    return []


def _op_text(info: CacheKeyInfo, op: str) -> tuple[str, str | None]:
    parts = op.split(" ")
    name = parts[1] if len(parts) > 1 else "?"
    try:
        index = int(parts[2])
        site = info.sites[index] if 0 <= index < len(info.sites) else None
    except (IndexError, ValueError):
        site = None
    return name, site


def _constant_details(old: CacheKeyInfo, new: CacheKeyInfo) -> list[KeyDetail]:
    out = []
    for index, (a, b) in enumerate(zip(old.constants, new.constants, strict=False)):
        if (a.value, a.type) != (b.value, b.type):
            out.append(KeyDetail(f"constant {index + 1} ({b.type})", a.value, b.value,
                                 b.site or a.site))
    if len(old.constants) != len(new.constants):
        out.append(KeyDetail("constants", str(len(old.constants)), str(len(new.constants))))
    return out


def _options_change(old: CacheKeyInfo, new: CacheKeyInfo, flags: bool, config: bool
                    ) -> KeyChange:
    details = _dict_details(old.options(), new.options())
    if details:
        folder = any(d.what in _CACHE_FOLDER_OPTIONS for d in details)
        return KeyChange(KeyPart.COMPILE_OPTIONS, "compile options differ: "
                         + "; ".join(map(_detail_text, details))
                         + (" (JAX < 0.12 puts the cache folder into the compile options: runs "
                            "with different cache folders never share entries)" if folder
                            else ""), tuple(details))
    by = ("the XLA flags (XLA's debug options)" if flags
          else "the JAX configuration values" if config else None)
    return KeyChange(KeyPart.COMPILE_OPTIONS, f"compile options differ, set by {by}" if by
                     else "the serialized compile options differ (in fields not recorded)")


_CACHE_FOLDER_OPTIONS = ("xla_gpu_per_fusion_autotune_cache_dir", "xla_gpu_kernel_cache_file")


def _flag_details(old: Iterable[str], new: Iterable[str]) -> list[KeyDetail]:
    def by_name(flags: Iterable[str]) -> dict[str, str]:
        return {flag.split("=")[0]: flag for flag in flags}

    before, after = by_name(old), by_name(new)
    return [KeyDetail(name, before.get(name), after.get(name))
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def _dict_details(old: dict[str, str], new: dict[str, str], prefix: str = "") -> list[KeyDetail]:
    return [KeyDetail(prefix + name, old.get(name), new.get(name))
            for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]


def _detail_text(detail: KeyDetail) -> str:
    for value, done in ((detail.before, "removed"), (detail.after, "added")):
        if value is not None and (detail.before is None or detail.after is None):
            named = value if value.startswith(detail.what) else f"{detail.what}={value}"
            return f"{named} {done}"
    return f"{detail.what} {detail.before} -> {detail.after}"


def _keyed(events: Iterable[Event]) -> dict[str, list[Event]]:
    found: dict[str, list[Event]] = {}
    for event in events:
        if event.cache_key is not None and event.compiled:
            found.setdefault(baseline_key(event.function, event.defined_at), []).append(event)
    return found


def compare(old_events: Iterable[Event], new_events: Iterable[Event]) -> KeyComparison:
    """Pair each function's compiles of NEW with OLD's: a key OLD had is the same; any other
    is explained against OLD's compile of that function whose key differs the least."""
    before, after = _keyed(old_events), _keyed(new_events)
    changed: list[KeyDiff] = []
    same = jax_changed = 0
    for function in sorted(set(before) & set(after)):
        keys = {e.cache_key.key for e in before[function] if e.cache_key is not None}
        for event in after[function]:
            info = event.cache_key
            assert info is not None
            if info.key in keys:
                same += 1
                continue
            partner = min((e.cache_key for e in before[function] if e.cache_key is not None),
                          key=lambda o, i=info: _distance(o, i))  # type: ignore[misc]
            if event.owner == Owner.JAX:
                jax_changed += 1
                continue
            changed.append(KeyDiff(function, event.owner, partner.key, info.key,
                                   event.persistent_cache, tuple(explain(partner, info))))
    return KeyComparison(tuple(changed), same, jax_changed,
                         bool(before) and bool(after))


def _distance(old: CacheKeyInfo, new: CacheKeyInfo) -> tuple[int, int]:
    old_parts = old.part_digests()
    parts = sum(old_parts.get(k) != v for k, v in new.part_digests().items())
    ops = sum(a != b for a, b in zip(old.op_list(), new.op_list(), strict=False))
    return parts, ops


def diff_sessions(old: Session, new: Session) -> KeyComparison:
    found = compare(old.events, new.events)
    configured = bool(old.environment.compilation_cache_dir
                      or new.environment.compilation_cache_dir)
    missing = tuple((which, why_no_keys(session)) for which, session in
                    (("OLD", old), ("NEW", new))
                    if not any(e.cache_key is not None for e in session.events))
    return replace(found, configured=configured, missing=missing)


def why_no_keys(session: Session) -> str:
    """Why a session has no cache keys, from what recorded it."""
    environment = session.environment
    if environment.hook_mode == HookMode.PUBLIC_ONLY:
        return ("it was recorded with hook mode public-only (cache keys need the private "
                "hooks, JAX >= 0.9)")
    if not environment.compilation_cache_dir:
        return "it ran without a persistent compilation cache (--compilation-cache DIR)"
    if not any(e.compiled for e in session.events):
        return "nothing compiled in it"
    return ("it was recorded by an earlier recompile-cli, which did not record cache keys, or "
            "without JAX's cache-key internals (see its warnings); record it again")


def diff_processes(session: Session) -> dict[int, KeyComparison]:
    """For a merged session: each process's keys against process 0's (or the lowest)."""
    by_process: dict[int, list[Event]] = {}
    for event in session.events:
        if event.process is not None:
            by_process.setdefault(event.process, []).append(event)
    if len(by_process) < 2:
        return {}
    first = min(by_process)
    return {process: compare(by_process[first], events)
            for process, events in sorted(by_process.items()) if process != first}
