"""Merging the per-process reports of a multi-process JAX job into one.

Each process of a ``jax.distributed`` job records its own session, tagged with its
``process_index``, ``process_count`` and host (``recompile-cli run --save run-{process}.json``).
``merge_reports`` takes them as loaded (``session.files.load_session``), checks that they belong
together, and returns a ``Merged``: the merged ``Session`` (every event carries its
``process``; ``processes`` lists where each came from) and the per-process sessions that the
divergence analysis (``analysis.hosts.divergence``) compares. A merged session can itself be merged
again: it is split back into its processes.

Files that cannot belong to one job (another script, another ``process_count``, two files of
the same process) raise ``MergeError``; differences that are legal but worth knowing (JAX
versions, script arguments, missing processes) become the ``notes`` of the result and the
warnings of the merged session. Pure: no I/O, no printing, no JAX.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from recompile_cli.analysis.causes.cause import Cause
from recompile_cli.analysis.causes.explain import explain_events
from recompile_cli.errors import MergeError
from recompile_cli.session.model import (
    Event,
    ProcessRecord,
    Session,
    SlowCallWatch,
    StaleCapture,
    StaleStatic,
)


@dataclass(frozen=True, slots=True)
class Part:
    """One process: its index in the job, the file it came from, and its own session."""

    index: int
    source: str
    session: Session

    @property
    def host(self) -> str | None:
        return self.session.environment.host


@dataclass(frozen=True)
class Merged:
    """The merged session, its processes (by index) and what the merge noticed."""

    session: Session
    parts: tuple[Part, ...]
    process_count: int | None  # the job's size, as its processes recorded it
    notes: tuple[str, ...]


def merge_reports(reports: Sequence[tuple[str, Session]]) -> Merged:
    """Merge the sessions of loaded reports, ``(file, session)`` pairs: each the session of one
    process, or a merged session, which is split back into its processes. Raises
    ``MergeError`` for reports that are not the processes of one job."""
    if not reports:
        raise MergeError("merge needs at least one report: pass the files each process saved, "
                         "e.g. recompile-cli merge reports/run-*.json.")
    _check_distinct(reports)
    loaded: list[tuple[str, Session]] = []
    for source, session in reports:
        _check_sizes(source, session.environment.process_index,
                     session.environment.process_count)
        for record in session.processes:
            _check_sizes(source, record.index, None)
        loaded += split(session, source) if session.processes else [(source, session)]
    return merge(loaded)


def merge(loaded: Sequence[tuple[str, Session]]) -> Merged:
    """Merge ``(source, session)`` pairs, one per process."""
    notes: list[str] = []
    _check_same_program(loaded, notes)
    count = _process_count(loaded)
    parts = _number(loaded, count, notes)
    if count is not None and len(parts) < count:
        present = {p.index for p in parts}
        notes.append(f"the reports of process(es) {_ranges(present, count)} of the {count} in "
                     "the job are missing: they are not compared")
    notes += _version_notes(parts)
    return Merged(_merged_session(parts, count, notes), tuple(parts), count, tuple(notes))


def split(session: Session, source: str) -> list[tuple[str, Session]]:
    """A merged session's processes as ``(source, session)`` pairs, as they were merged."""
    out = []
    for record in session.processes:
        prefix = f"process {record.index}: "
        environment = msgspec.structs.replace(
            session.environment, process_index=record.index, host=record.host,
            jax_version=record.jax_version or session.environment.jax_version)
        out.append((f"{source} (process {record.index}, from {record.source})", Session(
            environment=environment, target=record.target,
            events=tuple(msgspec.structs.replace(e, process=None) for e in session.events
                         if e.process == record.index),
            wall_seconds=record.wall_seconds,
            base_context=dict(record.base_context or session.base_context),
            calls=dict(record.calls), target_exception=record.target_exception,
            warnings=tuple(w.removeprefix(prefix) for w in session.warnings
                           if w.startswith(prefix)),
            stale_captures=session.stale_captures, stale_statics=session.stale_statics,
            slow_calls=tuple(msgspec.structs.replace(g, process=None) for g in session.slow_calls
                             if g.process == record.index),
            slow_call_watch=session.slow_call_watch)))
    return out


# -- checks ----------------------------------------------------------------------------------------
MAX_PROCESSES = 1_000_000  # far above any real job; a larger count or index is a damaged file


def _check_distinct(reports: Sequence[tuple[str, Session]]) -> None:
    """The same report passed twice (one file by two paths, or a copy) is refused: merged, it
    would look like two processes that compiled the same. (Reports with a process index are
    caught by ``_number``: two files of one process.)"""
    seen: dict[tuple[object, ...], list[tuple[str, Session]]] = {}
    for source, session in reports:
        if session.environment.process_index is not None:
            continue
        key = (session.target, session.wall_seconds, len(session.events))
        for earlier, other in seen.setdefault(key, []):
            if other == session:
                raise MergeError(f"{earlier} and {source} hold the same report (the same file "
                                 "twice, or a copy of it). Pass each process's report once.")
        seen[key].append((source, session))


def _check_sizes(source: str, index: int | None, count: int | None) -> None:
    """A process index or count outside what a job can have is refused before any work."""
    if count is not None and not 1 <= count <= MAX_PROCESSES:
        raise MergeError(f"{source} says its job had {count:,} processes (process_count), "
                         f"outside 1 to {MAX_PROCESSES:,}: the report is damaged. Record the "
                         "run again.")
    if index is not None and not 0 <= index < (count or MAX_PROCESSES):
        raise MergeError(f"{source} says it is process {index:,} (process_index), outside 0 to "
                         f"{(count or MAX_PROCESSES) - 1:,}: the report is damaged. Record the "
                         "run again.")


def _program(target: str) -> tuple[str, str]:
    """``(script or target, its arguments)`` of a session's target label."""
    program, _, arguments = target.partition(" ")
    return program, arguments


def _index_masked(target: str, index: int | None) -> str:
    """The target label with the process's own ``index``, as a whole argument or an
    ``--option=value``, written ``{process}``: ``run.py --process-id 0`` and ``run.py
    --process-id 1`` of two processes are the same program and arguments."""
    program, arguments = _program(target)
    if index is None or not arguments:
        return target
    return program + " " + " ".join(re.sub(rf"^((?:[^=]*=)?){index}$", r"\1{process}", word)
                                    for word in arguments.split(" "))


def _check_same_program(loaded: Sequence[tuple[str, Session]], notes: list[str]) -> None:
    first_source, first = loaded[0]
    program, arguments = _program(_index_masked(first.target, first.environment.process_index))
    for source, session in loaded[1:]:
        other, other_arguments = _program(_index_masked(session.target,
                                                        session.environment.process_index))
        if other != program:
            raise MergeError(f"{source} records {other!r} but {first_source} records "
                             f"{program!r}: these are not processes of one run. Merge the "
                             "reports that the processes of one job saved (e.g. "
                             "reports/run-*.json of one run).")
        if other_arguments != arguments:
            notes.append(f"the script arguments differ between processes ({first_source}: "
                         f"{arguments!r}, {source}: {other_arguments!r}); expected when they "
                         "carry the process index, else the reports come from different runs")
            arguments = other_arguments  # one note per change, not per file


def _process_count(loaded: Sequence[tuple[str, Session]]) -> int | None:
    sizes: dict[int, str] = {}  # process_count -> the first file that says so
    for source, session in loaded:
        if session.environment.process_count is not None:
            sizes.setdefault(session.environment.process_count, source)
    if len(sizes) > 1:
        where = "; ".join(f"{size} in {source}" for size, source in sizes.items())
        raise MergeError(f"the reports come from jobs of different sizes (process_count "
                         f"{where}): they are not processes of one run. Merge the reports of "
                         "one run only.")
    return next(iter(sizes), None)


def _number(loaded: Sequence[tuple[str, Session]], count: int | None,
            notes: list[str]) -> list[Part]:
    """A ``Part`` per report, at its process index; reports without one (not recorded in a
    ``jax.distributed`` job) take the free indices in the order given."""
    taken: dict[int, str] = {}
    parts: list[Part] = []
    unnumbered: list[tuple[str, Session]] = []
    for source, session in loaded:
        index = session.environment.process_index
        if index is None:
            unnumbered.append((source, session))
            continue
        if count is not None and not 0 <= index < count:
            raise MergeError(f"{source} is process {index} of a job of {count}: the report is "
                             "damaged. Record the run again.")
        if index in taken:
            raise MergeError(f"{taken[index]} and {source} are both process {index}: they come "
                             "from different runs (or one file was passed twice). Merge the "
                             "reports of one run only, one file per process.")
        taken[index] = source
        parts.append(Part(index, source, session))
    free = (i for i in range(len(loaded) + len(taken)) if i not in taken)
    for source, session in unnumbered:
        part = Part(next(free), source, session)
        parts.append(part)
        if count is not None or len(loaded) > 1:
            notes.append(f"{source} has no process index (it was not recorded in a "
                         f"jax.distributed job, or stopped before jax.distributed.initialize): "
                         f"merged as process {part.index}")
    return sorted(parts, key=lambda p: p.index)


def _version_notes(parts: Sequence[Part]) -> list[str]:
    notes = []
    for name in ("jax_version", "python_version", "backend", "hook_mode"):
        values: dict[str, list[int]] = {}
        for part in parts:
            values.setdefault(str(getattr(part.session.environment, name)), []).append(part.index)
        if len(values) > 1:
            notes.append(f"the processes ran with different {name.replace('_', ' ')}s "
                         f"({grouped(values)}): a different program per process may follow "
                         "from that alone")
    return notes


# -- the merged session ----------------------------------------------------------------------------
def _merged_session(parts: Sequence[Part], count: int | None, notes: list[str]) -> Session:
    first = parts[0].session
    events: list[Event] = []
    for part in parts:
        for event in part.session.events:
            events.append(msgspec.structs.replace(event, seq=len(events), process=part.index))
    calls: dict[str, int] = {}
    for part in parts:
        for key, n in part.session.calls.items():
            calls[key] = calls.get(key, 0) + n
    targets = list(dict.fromkeys(_index_masked(p.session.target, p.index) for p in parts))
    failures = [f"process {p.index}: {p.session.target_exception}" for p in parts
                if p.session.target_exception]
    stale: dict[tuple[str, str | None, str], StaleCapture] = {}
    for part in parts:
        for capture in part.session.stale_captures:
            stale.setdefault((capture.function, capture.defined_at, capture.variable), capture)
    statics: dict[tuple[str, str | None, str], StaleStatic] = {}
    for part in parts:
        for found in part.session.stale_statics:
            statics.setdefault((found.function, found.defined_at, found.argument), found)
    return Session(
        environment=msgspec.structs.replace(first.environment, process_index=None, host=None,
                                        process_count=count or len(parts)),
        target=targets[0] if len(targets) == 1 else (
            f"{_program(targets[0])[0]} (arguments differ per process)"),
        events=tuple(events), wall_seconds=max(p.session.wall_seconds for p in parts),
        base_context=dict(first.base_context), calls=calls,
        warnings=tuple([*notes, *(f"process {p.index}: {w}" for p in parts
                                  for w in p.session.warnings)]),
        stale_captures=tuple(stale.values()), stale_statics=tuple(statics.values()),
        target_exception="; ".join(failures) or None,
        slow_calls=tuple(msgspec.structs.replace(g, process=p.index) for p in parts
                         for g in p.session.slow_calls),
        slow_call_watch=_merged_watch([p.session.slow_call_watch for p in parts]),
        processes=tuple(ProcessRecord(
            index=p.index, source=p.source, target=p.session.target,
            wall_seconds=p.session.wall_seconds, host=p.host,
            jax_version=p.session.environment.jax_version, calls=dict(p.session.calls),
            target_exception=p.session.target_exception,
            base_context=dict(p.session.base_context)) for p in parts))


def _merged_watch(watches: Sequence[SlowCallWatch | None]) -> SlowCallWatch | None:
    """The processes' slow-call watches as one: observable only where every process saw
    them; the largest baseline (the smallest avoidable seconds), unknown if any is."""
    if not watches or any(w is None for w in watches):
        return None
    known = [w for w in watches if w is not None]
    blind = next((w for w in known if not w.observable), None)
    if blind is not None:
        return blind
    baselines = [w.fast_call_seconds for w in known]
    return SlowCallWatch(True, fast_call_seconds=None if None in baselines
                         else max(b for b in baselines if b is not None))


def explain_by_process(events: Sequence[Event], base_context: dict[str, str]
                       ) -> dict[int, tuple[Cause, ...]]:
    """``causes.explain_events`` for a session whose events may come from several processes
    (a merged session): each event is explained against the earlier events of its own process
    only, so each process's first compile is a ``first_compile``. The same as
    ``explain_events`` for a single-process session."""
    if len({event.process for event in events}) <= 1:  # one process: no grouping to do
        return explain_events(events, base_context)
    by_process: dict[int | None, list[Event]] = {}
    for event in events:
        by_process.setdefault(event.process, []).append(event)
    out: dict[int, tuple[Cause, ...]] = {}
    for group in by_process.values():
        out.update(explain_events(group, base_context))
    return out


# -- wording ---------------------------------------------------------------------------------------
def processes(indices: Iterable[int]) -> str:
    """``process 2`` or ``processes 0, 1``."""
    items = sorted(indices)
    return f"process{'es' if len(items) > 1 else ''} {_list(items)}"


def grouped(values: dict[str, list[int]]) -> str:
    """``f32[32,8] on processes 0, 1; f32[16,8] on process 2``."""
    return "; ".join(f"{value} on {processes(where)}" for value, where in values.items())


def _ranges(present: set[int], count: int) -> str:
    """The indices below ``count`` not in ``present`` as ``1, 3-7``: short, whatever the count."""
    spans: list[str] = []
    start = None
    for i in [*sorted(i for i in present if 0 <= i < count), count]:
        first = 0 if start is None else start
        if i > first:
            spans.append(str(first) if i - 1 == first else f"{first}-{i - 1}")
        start = i + 1
    return ", ".join(spans)


def _list(items: Iterable[int]) -> str:
    return ", ".join(map(str, items))
