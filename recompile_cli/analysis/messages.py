"""The one place a message about some compiles is put into words: the gate's violations (and so
``check``, JUnit, GitHub annotations and the pytest plugin) and the runtime guard's.

``describe`` names each cause once (its code and argument, then each change it went through and
where), with sibling leaves that changed alike collapsed into one (``shape at batch: 3 leaves,
dim 0 16 -> 8``); ``advice`` is the suggestion for those causes, the report's own. Pure text
from a ``Report``; paths relative to the working folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from recompile_cli.analysis.causes.nearest import top_name
from recompile_cli.analysis.report import Report
from recompile_cli.session.locations import relative
from recompile_cli.session.model import CauseCode, Event

if TYPE_CHECKING:
    from recompile_cli.analysis.causes.cause import Cause

SIBLINGS = 3  # leaves of one argument that changed alike, named as one from this many on
_CAUSES = 4  # causes named in one message
_CHANGES = 3  # changes named per cause
_SUGGESTIONS = 2
# An array's text: ``f32[32,8]``, ``~f32[]`` (weakly typed), with what follows (a sharding).
# an array's text; its dims are sizes or a symbolic dimension's expression (jax.export: b, 2*b)
_ARRAY = re.compile(r"(?P<dtype>~?\w+)\[(?P<dims>[\w*+\-/ ,()]*)\](?P<rest>.*)", re.DOTALL)


def describe(report: Report, events: Sequence[Event], codes: Iterable[CauseCode] | None = None
             ) -> str:
    """``shape at x: f32[3] -> f32[4], then f32[4] -> f32[5] (prog.py:7 (main)); dtype at y:
    ...``: the causes of ``events`` (only those of ``codes`` when given, else every cause of
    each event), each named once with its changes in order and where they happened (once at
    the end when every change happened at the same place)."""
    wanted = None if codes is None else set(codes)
    found: _Found = {}
    for event in events:
        causes = [c for c in report.causes[event.seq] if wanted is None or c.code in wanted]
        site = relative(event.call_site) or ""
        for code, subject, change in collapsed(causes or [report.primary(event)]):
            sites = found.setdefault((code, subject), {}).setdefault(change, [])
            if site and site not in sites:
                sites.append(site)
    every_site = {site for changes in found.values() for sites in changes.values()
                  for site in sites}
    if len(every_site) != 1:
        return _worded(found, sites=True)
    return f"{_worded(found, sites=False)} ({next(iter(every_site))})"


def causes_text(causes: Sequence[Cause]) -> str:
    """``shape at x: f32[3] -> f32[4], y: ...; dtype at z: ...``: the causes of one compile,
    worded as ``describe`` words them, without a place."""
    found: _Found = {}
    for code, subject, change in collapsed(causes):
        found.setdefault((code, subject), {}).setdefault(change, [])
    return _worded(found, sites=False)


_Found = dict[tuple[str, str], dict[str, list[str]]]  # (code, argument) -> change -> places


def _worded(found: _Found, sites: bool) -> str:
    """Each code once, its arguments after it (``shape at x: ..., y: ...; dtype at z: ...``),
    each argument's changes in order (with their places when ``sites``)."""
    by_code: dict[str, list[tuple[str, str]]] = {}  # code -> (argument, changes), in order
    for (code, subject), changes in list(found.items())[:_CAUSES]:
        shown = ", then ".join(
            change + (f" ({', '.join(places)})" if sites and places else "")
            for change, places in list(changes.items())[:_CHANGES] if change)
        if len(changes) > _CHANGES:
            shown += f", ... {len(changes) - _CHANGES} more"
        by_code.setdefault(code, []).append((subject, shown))
    parts = []
    for code, entries in by_code.items():
        label = "first compile" if code == CauseCode.FIRST_COMPILE else code
        named = [" at ".join(filter(None, [label if k == 0 else "", subject]))
                 + (f": {text}" if text else "") for k, (subject, text) in enumerate(entries)]
        parts.append(", ".join(named))
    text = "; ".join(parts)
    if len(found) > _CAUSES:
        text += f"; ... {len(found) - _CAUSES} more"
    return text


def collapsed(causes: Sequence[Cause]) -> list[tuple[str, str, str]]:
    """Each cause as (code, argument, change), in order; ``SIBLINGS`` or more leaves of one
    argument with the same code and the same change as one: (``shape``, ``batch``, ``3 leaves,
    dim 0 16 -> 8``)."""
    groups: dict[tuple[str, str, str], list[Cause]] = {}
    for cause in causes:
        argument = cause.argument or ""
        groups.setdefault((cause.code, top_name(argument) if argument else "", _change(cause)),
                          []).append(cause)
    out = []
    for (code, _, change), alike in groups.items():
        if len(alike) >= SIBLINGS:
            out.append((code, _common_path([c.argument or "" for c in alike]),
                        f"{len(alike)} leaves, {change}"))
        else:
            out += [(code, c.argument or "", _values(c)) for c in alike]
    return out


def suggestions(report: Report, function: str, events: Sequence[Event],
                codes: Iterable[CauseCode] | None = None) -> list[str]:
    """The report's suggestions for ``function`` on the primary causes of ``events`` (on
    ``codes`` when given), each once, at most ``_SUGGESTIONS``."""
    wanted = set(codes) if codes is not None else {report.primary(e).code for e in events}
    found = dict.fromkeys(s.message for s in report.suggestions
                          if s.function == function and s.code in wanted)
    return list(found)[:_SUGGESTIONS]


def advice(report: Report, function: str, events: Sequence[Event],
           codes: Iterable[CauseCode] | None = None) -> str:
    """`` Suggestion: ...`` (``suggestions``), the end of a message; ``""`` when there is
    none."""
    found = suggestions(report, function, events, codes)
    return (" Suggestion: " + " ".join(found)) if found else ""


def _values(cause: Cause) -> str:
    if cause.before or cause.after:
        return f"{cause.before} -> {cause.after}"
    return ""


def _change(cause: Cause) -> str:
    """What changed, alike for leaves of different shapes: ``dim 0 32 -> 4`` when only dims
    changed, else ``before -> after``."""
    before, after = _ARRAY.fullmatch(cause.before or ""), _ARRAY.fullmatch(cause.after or "")
    if before is not None and after is not None and (
            before["dtype"], before["rest"]) == (after["dtype"], after["rest"]):
        old, new = before["dims"].split(","), after["dims"].split(",")
        if len(old) == len(new):
            dims = [f"dim {i} {a.strip()} -> {b.strip()}"
                    for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            if dims:
                return ", ".join(dims)
    return _values(cause)


def _common_path(paths: list[str]) -> str:
    """The longest path that every one of ``paths`` starts with, ending at a joint
    (``batch`` for ``batch['x']``, ``batch['y']``)."""
    shortest = min(paths, key=len)
    for end in range(len(shortest), 0, -1):
        head = shortest[:end]
        if all(path.startswith(head) and (len(path) == end or path[end] in "[.")
               for path in paths):
            return head
    return ""
