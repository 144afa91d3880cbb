"""The persistent-cache sections: why keys changed (``diff``, ``merge``) and a run's hits and
misses with their reasons (``report``), as terminal text, Markdown or JSON data.

Function names, flags, constants' values and file names come from saved sessions: they are
escaped for the format (``escape.terminal`` / ``escape.markdown``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from recompile_cli.analysis.cache.keys import (
    KeyChange,
    KeyComparison,
    KeyDiff,
    diff_processes,
)
from recompile_cli.analysis.cache.outcomes import CacheOutcomes
from recompile_cli.analysis.shorten import counted
from recompile_cli.render import escape
from recompile_cli.session import codec
from recompile_cli.session.locations import relative
from recompile_cli.session.model import Session

HEADING = "Persistent compilation cache"
NOT_RECORDED = ("no cache keys were recorded in both runs: explaining why keys changed needs "
                "JAX >= 0.9, hook mode private and a persistent cache in both")


def comparison_lines(comparison: KeyComparison, markdown: bool = False,
                     between: str = "") -> list[str]:
    """The section for ``diff`` (``between``: e.g. "process 0 -> process 1" for ``merge``);
    empty when neither session recorded keys."""
    show = escape.markdown if markdown else escape.terminal
    head = f"### {HEADING}" if markdown else HEADING
    if between:
        head += f" ({show(between)})"
    if not comparison.recorded:
        if not comparison.configured:
            return []
        if not comparison.missing:
            return [head, NOT_RECORDED]
        reasons = {f"the {which} run has no": why for which, why in comparison.missing}
        if len(reasons) == 2 and len(set(reasons.values())) == 1:
            reasons = {"neither run has": comparison.missing[0][1]}
        return [head] + [f"{who} cache keys, so key changes cannot be explained: {why}"
                         for who, why in reasons.items()]
    changed = len(comparison.changed)
    lines = [head]
    if not changed and not comparison.jax_changed:
        lines.append("every compile used a key that the other run had "
                     f"({counted(comparison.same, 'compile')}): nothing to explain")
        return lines
    lines.append(f"{counted(changed, 'compile')} of your functions got a new "
                 f"key ({counted(comparison.same, 'compile')} kept theirs"
                 + (f"; {comparison.jax_changed} of JAX's own functions changed too"
                    if comparison.jax_changed else "") + ")")
    for item in comparison.changed:
        lines += _diff_lines(item, show, markdown)
    return lines


def _diff_lines(item: KeyDiff, show: Callable[[Any], str], markdown: bool) -> list[str]:
    outcome = f" ({show(item.new_outcome).replace('_', ' ')})" if item.new_outcome else ""
    # The keys themselves (machine-specific digests) are in the JSON; the text says what changed.
    lines = [f"- {show(item.function)}: a new key{outcome}"]
    indent = "  " if markdown else "    "
    for change in item.changes:
        lines.append(f"{indent}- {show(change.part)}: {show(change.summary)}" if markdown
                     else f"{indent}{show(change.part)}: {show(change.summary)}")
        lines += [f"{indent}  - {line}" if markdown else f"{indent}  {line}"
                  for line in _details(change, show)]
        if change.fix:
            lines.append(f"{indent}  - fix: {show(change.fix)}" if markdown
                         else f"{indent}  fix: {show(change.fix)}")
    return lines


def _details(change: KeyChange, show: Callable[[Any], str]) -> list[str]:
    out = []
    for detail in change.details:
        if change.part in ("xla_flags", "jax_config", "compile_options") and (
                detail.before is None or detail.after is None):
            continue  # the summary names flags added or removed
        site = f" at {show(relative(detail.site))}" if detail.site else ""
        before = show(detail.before) if detail.before is not None else "(none)"
        after = show(detail.after) if detail.after is not None else "(none)"
        out.append(f"{show(detail.what)}: {before} -> {after}{site}")
    return out


def comparison_data(comparison: KeyComparison) -> Any:
    """The section as JSON data: ``{"changed": [...], "same": N, "jax_changed": N}``."""
    return codec.plain(comparison)


def outcome_line(found: CacheOutcomes) -> str:
    """``report``'s line: ``2 hits (0.312 s saved), 1 miss written, 3 misses not written
    (under_min_compile_time 3)``."""
    saved = f"{found.saved_seconds:.3f} s saved" + ("" if found.exact or not found.hits
                                                    else ", from JAX's whole seconds")
    parts = [f"{counted(found.hits, 'hit')} ({saved})",
             f"{found.written} miss{'es' if found.written != 1 else ''} written"]
    not_written = sum(found.not_written.values())
    if not_written:
        reasons = ", ".join(f"{reason} {count}" for reason, count in
                            sorted(found.not_written.items()))
        parts.append(f"{not_written} miss{'es' if not_written != 1 else ''} not written "
                     f"({reasons})")
    return ", ".join(parts)


def missed_line(found: CacheOutcomes, limit: int = 5) -> str | None:
    """``report``'s line under the outcomes, when functions of the user's missed: which, and
    the command that explains why against an earlier run."""
    if not found.missed:
        return None
    names = ", ".join(found.missed[:limit]) + (
        f" and {len(found.missed) - limit} more" if len(found.missed) > limit else "")
    return (f"missed: {names}; to see why, save this run and an earlier one (--save) and "
            "compare them: recompile-cli diff EARLIER.json THIS.json")


def diff_text(base: str, comparison: KeyComparison, markdown: bool = False) -> str:
    """``diff``'s output: ``base`` (the function table, as ``render.diff`` writes it, in
    Markdown for ``markdown``) and this section."""
    section = comparison_lines(comparison, markdown=markdown)
    return base + ("\n" + "\n".join(section) + "\n" if section else "")


def diff_json(changes: Any, new_causes: Any, comparison: KeyComparison, old: str,
              new: str) -> str:
    """``diff -f json``: both files, the per-function changes, the causes new in NEW and the
    persistent-cache section."""
    return codec.indented({"old": old, "new": new, "functions": codec.plain(changes),
                           "new_causes": codec.plain(new_causes),
                           "persistent_cache": comparison_data(comparison)})


def merged_text(text: str, session: Session, fmt: str) -> str:
    """``merge``'s report (``text``, in ``fmt``) with each process's keys explained against the
    first process's: a section per process in table and Markdown, ``persistent_cache`` (process
    -> section) in JSON. ``text`` is returned as it is when no process recorded keys."""
    by_process = diff_processes(session)
    if not any(c.recorded for c in by_process.values()):
        return text
    if fmt == "json":
        data = msgspec.json.decode(text)
        data["persistent_cache"] = {str(p): comparison_data(c) for p, c in by_process.items()}
        return codec.indented(data)
    first = min(e.process for e in session.events if e.process is not None)
    lines: list[str] = []
    for process, comparison in by_process.items():
        lines += ["", *comparison_lines(comparison, markdown=fmt == "markdown",
                                        between=f"process {first} -> process {process}")]
    return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
