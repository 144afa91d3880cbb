"""Why the processes of a job stopped under ``--check-hosts``: one paragraph from their entries.

``capture.hosts.host_check`` exchanges one ``Entry`` per compile and process; this module turns the
entries of one compile into the message every process stops with. ``mismatch`` compares the
entries of processes that all compiled (None when they agree); ``missing`` explains processes
that sent nothing within the timeout, with what each of them compiled last of the same
function (the program it still runs). The first differing argument comes from the cause
analysis (``causes.diff_signatures``), its value on every process from the signatures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recompile_cli.analysis.causes.explain import diff_signatures
from recompile_cli.session.host_entries import Entry
from recompile_cli.session.locations import relative

PREFIX = "recompile-cli --check-hosts"


def processes(indexes: Sequence[int]) -> str:
    """``process 1``, ``processes 0, 2``."""
    ordered = sorted(indexes)
    word = "process" if len(ordered) == 1 else "processes"
    return f"{word} {', '.join(map(str, ordered))}"


def _function(entry: Entry) -> str:
    where = relative(entry.defined_at)
    return f"{entry.function} ({where})" if where else entry.function


def _ordinal(seq: int) -> str:
    n = seq + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def first_difference(entries: Mapping[int, Entry]) -> str:
    """``step: batch['x'] is f32[64,8] on process 0 and f32[32,8] on process 1`` for entries of
    one function; what differs otherwise (the lowering, or nothing known)."""
    ordered = sorted(entries.items())
    name = ordered[0][1].function
    signed = [(i, e.signature) for i, e in ordered if e.signature is not None]
    if len(signed) < len(ordered):
        return (f"{name}: its arguments are not recorded in hook mode public-only (JAX's "
                "tracing hooks are unavailable), so the first difference is not known")
    path = None
    if signed:
        base = signed[0][1]
        for _, signature in signed[1:]:
            cause = next(iter(diff_signatures(signature, base, {})), None)
            if cause is not None and cause.argument:
                path = cause.argument.split(", ")[0]
                break
    if path is not None:
        values: dict[str, list[int]] = {}
        for i, signature in signed:
            described = signature.describe() if signature is not None else {}
            values.setdefault(described.get(path, "not passed"), []).append(i)
        shown = " and ".join(f"{value} on {processes(where)}" for value, where in values.items())
        return f"{name}: {path} is {shown}"
    lowerings = {str(e.lowering) for _, e in ordered}
    programs = {e.program for _, e in ordered if e.program}
    if len(lowerings) == 1 and len(programs) > 1:
        return _programs_differ(name, ordered)
    if len(lowerings) > 1:
        return (f"{name}: the same arguments, lowered differently (lowering-key changes: "
                + "; ".join(f"{e.lowering or 'none'} on process {i}" for i, e in ordered) + ")")
    return f"{name}: the programs differ (signature digests " + ", ".join(
        f"{e.digest} on process {i}" for i, e in ordered) + ")"


def _programs_differ(name: str, ordered: Sequence[tuple[int, Entry]]) -> str:
    """The same arguments and lowering, different programs: each process's program and the
    configuration entries that differ, else that nothing exchanged explains it."""
    shown = "; ".join(f"{e.program[:8] or 'unknown'} on process {i}" for i, e in ordered)
    names = sorted({key for _, e in ordered for key in e.context})
    differs = []
    for key in names:
        values: dict[str, list[int]] = {}
        for i, e in ordered:
            values.setdefault(e.context.get(key, "(not set)"), []).append(i)
        if len(values) > 1:
            differs.append(f"{key} is " + " and ".join(
                f"{value} on {processes(where)}" for value, where in values.items()))
    why = ("; JAX's configuration differs: " + "; ".join(differs) if differs else
           ": nothing the check exchanges differs (a value read at trace time, such as a "
           "global, an environment variable or a file, differs between the processes)")
    return f"{name}: the same arguments lowered to different programs ({shown}){why}"


def mismatch(entries: Mapping[int, Entry]) -> str | None:
    """The message when the entries of one compile (every process's) differ, else None."""
    ordered = sorted(entries.items())
    first = ordered[0][1]
    if all(e.same_program(first) for _, e in ordered[1:]):
        return None
    seq = _ordinal(first.seq)
    functions: dict[str, list[int]] = {}
    for i, e in ordered:
        functions.setdefault(_function(e), []).append(i)
    if len(functions) > 1:
        what = " and ".join(f"{processes(where)} compiled {name}"
                            for name, where in functions.items())
        detail = f"at their {seq} checked compile, {what}."
    else:
        detail = (f"the processes compiled different programs of {_function(first)} at their "
                  f"{seq} checked compile. {first_difference(entries)}.")
    return (f"{PREFIX}: {detail} Every process stopped before running it, so that no "
            "collective runs with different programs.")


def missing(mine: Entry, absent: Sequence[int], last: Mapping[int, Entry | None],
            seconds: float) -> str:
    """The message when ``absent`` processes sent no entry for ``mine.seq`` within ``seconds``;
    ``last`` holds, per absent process, its last entry of the same function (if any)."""
    running = {i: e for i, e in last.items() if e is not None}
    idle = [i for i in absent if i not in running]
    text = f"{PREFIX}: process {mine.process} compiled "
    if running:
        text += f"a new program of {_function(mine)}"
    else:
        described = mine.signature.describe() if mine.signature is not None else {}
        args = ", ".join(f"{path} {value}" for path, value in described.items())
        text += f"{_function(mine)}" + (f" with {args}" if args else "")
    text += (f" at its {_ordinal(mine.seq)} checked compile of {mine.function}, and "
             f"{processes(absent)} compiled "
             f"nothing within {seconds:g} s (--host-timeout)")
    if running:
        one = len(running) == 1
        text += (f": {processes(list(running))} still {'runs' if one else 'run'} the program "
                 f"of {mine.function} compiled before. "
                 f"{first_difference({**running, mine.process: mine})}.")
    if idle:
        one = len(idle) == 1
        who = (processes(idle) if running else "it" if one else "they")
        text += (f"{'' if running else ':'} {who} {'runs' if one else 'run'} another program, "
                 f"or {'is' if one else 'are'} slow, stuck or gone (raise --host-timeout if "
                 "compiles take longer).")
    return text + " Every process stopped, so that no collective runs with different programs."
