"""The ``merge`` command's report: the processes, per-process function counts, per-process slow
calls, and where the processes compile differently, as terminal text, GitHub-flavoured Markdown
or JSON; and the same two sections for the HTML page of a merged session (``html_sections``).

Names, paths, values, hosts and messages come from the merged reports; each is made inert for
its format where it is written (``escape.terminal``, ``escape.markdown``; JSON is data)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from recompile_cli.analysis.hosts.divergence import (
    Comparison,
    Divergence,
    FunctionByProcess,
    compare,
)
from recompile_cli.analysis.hosts.merge import Merged, merge, processes, split
from recompile_cli.render import escape, fit
from recompile_cli.session import codec
from recompile_cli.session.locations import display as location
from recompile_cli.session.model import Owner, Session

FORMATS = ("table", "markdown", "json")
MERGE_KIND = "recompile-cli-merge"


def render(merged: Merged, comparison: Comparison, fmt: str = "table",
           width: int | None = None) -> str:
    """The merge report in ``fmt`` (one of ``FORMATS``); its tables fit ``width`` columns on
    the terminal (default: ``fit.terminal_width``)."""
    if fmt == "json":
        return codec.indented(to_dict(merged, comparison))
    markdown = fmt == "markdown"
    show: Callable[[Any], str] = escape.markdown if markdown else escape.terminal
    heading = "### {}" if markdown else "{}"
    width = None if markdown else width or fit.terminal_width()

    def table(headers: list[str], rows: list[list[Any]]) -> str:
        return fit.table((headers, rows), width, show, markdown)
    session, env = merged.session, merged.session.environment
    count = merged.process_count
    size = f" of {count}" if count is not None and count != len(merged.parts) else ""
    title = (f"recompile-cli merge: {show(session.target)} ({len(merged.parts)} "
             f"process{'es' if len(merged.parts) > 1 else ''}{size}; jax "
             f"{show(env.jax_version)}, {show(env.backend)})")
    lines = [f"**{title}**" if markdown else title, ""]
    rows: list[list[Any]] = [[p.index, p.host or "", location(p.source) or p.source,
                              f"{p.session.wall_seconds:.3f}",
                              p.session.target_exception or "finished"] for p in merged.parts]
    lines.append(table(["process", "host", "report", "wall s", "outcome"], rows))
    lines += ["", heading.format("Functions (each process: traces / compiles / compile s)")]
    lines += _functions(comparison, table, markdown)
    slow = _slow_calls(merged)
    if slow:
        lines += ["", heading.format("Slow calls (each process: calls run through JAX's Python "
                                     "dispatch without compiling)")]
        lines.append(table(
            ["function", "defined at", *(f"process {p.index}" for p in merged.parts), "reasons"],
            [[row["function"], location(row["defined_at"]),
              *(row["per_process"].get(str(p.index), 0) for p in merged.parts),
              ", ".join(row["reasons"])] for row in slow]))
    lines += ["", heading.format(_divergence_title(comparison))]
    lines += [line for d in comparison.divergences for line in _divergence(d, show, markdown)]
    if not comparison.divergences:
        compared = sum(f.owner != Owner.JAX for f in comparison.functions)
        lines.append(f"Every process traced and compiled the same programs ({compared} "
                     f"function{'s' if compared != 1 else ''} compared).")
    if merged.notes:
        lines += ["", heading.format("Notes")]
        lines += [f"- {show(note)}" for note in merged.notes]
    return "\n".join(lines) + "\n"


def html_sections(session: Session, show: Callable[[Any], str]) -> list[str]:
    """For the HTML page of a merged session (``merge --save``): each function's traces /
    compiles / compile seconds per process, and the divergence; nothing for one process.
    ``show`` escapes a text from the session for HTML."""
    if len(session.processes) < 2:
        return []
    comparison = compare(merge(split(session, "merged")).parts)
    shown = [f for f in comparison.functions if f.owner != Owner.JAX]
    head = "".join(f'<th scope="col">{show(h)}</th>' for h in [
        "function", "defined at", *(f"process {i}" for i in comparison.processes), "same"])
    body = "".join(
        "<tr>" + "".join(f"<td>{show(cell)}</td>" for cell in [
            f.name, location(f.defined_at) or "", *(_cell(f, i) for i in comparison.processes)])
        + ("<td>yes</td>" if f.same else '<td class="cause">NO</td>') + "</tr>"
        for f in shown)
    out = ["<h2>Processes (each: traces / compiles / compile s)</h2>",
           f'<table class="sortable" id="processes"><thead><tr>{head}</tr></thead>'
           f"<tbody>{body}</tbody></table>",
           f"<h2>{show(_divergence_title(comparison))}</h2>"]
    if comparison.divergences:
        items = []
        for d in comparison.divergences:
            first, *rest = _divergence(d, show, markdown=False)
            items.append(f"<li>{first.removeprefix('- ')}<ul>"
                         + "".join(f"<li>{line.strip()}</li>" for line in rest) + "</ul></li>")
        out.append('<ul class="divergence">' + "".join(items) + "</ul>")
    else:
        out.append('<p class="ok">Every process traced and compiled the same programs.</p>')
    return out


def _divergence_title(comparison: Comparison) -> str:
    n = len(comparison.divergences)
    if not n:
        return "Divergence: none"
    return (f"Divergence: {n} function{'s' if n > 1 else ''} compile{'' if n > 1 else 's'} "
            "differently across processes")


def _functions(comparison: Comparison, table: Callable[[list[str], list[list[Any]]], str],
               markdown: bool) -> list[str]:
    shown = [f for f in comparison.functions if f.owner != Owner.JAX]
    headers = ["function", "defined at", *(f"process {i}" for i in comparison.processes),
               "same"]
    rows: list[list[Any]] = [[f.name, location(f.defined_at),
                              *(_cell(f, i) for i in comparison.processes),
                              "yes" if f.same else "NO"] for f in shown]
    lines = [table(headers, rows) if rows else "(no user function was traced or compiled)"]
    internal = [f for f in comparison.functions if f.owner == Owner.JAX]
    if internal and markdown:
        lines.append("")  # a line of its own, not a row of the table
    if internal:
        per_process = ", ".join(str(sum(f.counts[i].compiles for f in internal))
                                for i in comparison.processes)
        lines.append(f"+ jax: {len(internal)} internal functions, compiles per process: "
                     f"{per_process}")
    return lines


def _cell(f: FunctionByProcess, index: int) -> str:
    c = f.counts[index]
    return f"{c.traces} / {c.compiles} / {c.compile_seconds:.3f}"


def _divergence(d: Divergence, show: Callable[[Any], str], markdown: bool) -> list[str]:
    where = location(d.defined_at)
    name = f"{show(d.name)} ({show(where)})" if where else show(d.name)
    compiles: dict[str, list[int]] = {}
    for index, n in d.compiles.items():
        compiles.setdefault(str(n), []).append(index)
    lines = [f"- {'**' + name + '**' if markdown else name}: {', '.join(d.aspects)} differ; "
             f"compiles: {_grouped(compiles, show)}"]
    calls = "; ".join(f"call {n} on {processes([i])}" for i, n in sorted(d.calls.items()))
    stages = _grouped({k: list(v) for k, v in d.stages.items()}, show)
    indent = "  - " if markdown else "    "
    lines.append(f"{indent}first differs at its {_ordinal(d.at)} trace or compile"
                 f"{f' ({calls})' if calls else ''}: {stages}")
    lines += [f"{indent}{show(diff.argument)}: "
              f"{_grouped({k: list(v) for k, v in diff.values.items()}, show)}"
              for diff in d.differences]
    deeper = "    - " if markdown else "      "
    for program in d.programs:
        lines.append(f"{indent}the same signature ({show(program.signature)}) lowered to "
                     "different programs: "
                     f"{_grouped({k: list(v) for k, v in program.programs.items()}, show)}")
        lines += [f"{deeper}{show(why)}" for why in program.differs]
    return lines


def _grouped(values: dict[str, list[int]], show: Callable[[Any], str]) -> str:
    return "; ".join(f"{show(value)} on {processes(where)}" for value, where in values.items())


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def to_dict(merged: Merged, comparison: Comparison) -> dict[str, Any]:
    """The merge report as JSON-ready data."""
    env = merged.session.environment
    data: dict[str, Any] = codec.plain({
        "kind": MERGE_KIND,
        "schema_version": merged.session.schema_version,
        "target": merged.session.target,
        "jax_version": env.jax_version,
        "backend": env.backend,
        "process_count": merged.process_count,
        "processes": [{"index": p.index, "host": p.host, "source": p.source,
                       "target": p.session.target, "wall_seconds": p.session.wall_seconds,
                       "target_exception": p.session.target_exception} for p in merged.parts],
        "functions": [{"key": f.key, "name": f.name, "defined_at": f.defined_at,
                       "owner": f.owner, "same": f.same,
                       "per_process": {str(i): asdict(c) for i, c in f.counts.items()}}
                      for f in comparison.functions],
        "divergences": [{"key": d.key, "name": d.name, "defined_at": d.defined_at,
                         "aspects": list(d.aspects),
                         "compiles": {str(i): n for i, n in d.compiles.items()},
                         "at": d.at, "stages": {k: list(v) for k, v in d.stages.items()},
                         "calls": {str(i): n for i, n in d.calls.items()},
                         "differences": [{"argument": x.argument,
                                          "values": {k: list(v) for k, v in x.values.items()}}
                                         for x in d.differences],
                         "programs": [{"signature": x.signature,
                                       "programs": {k: list(v) for k, v in x.programs.items()},
                                       "differs": list(x.differs)} for x in d.programs]}
                        for d in comparison.divergences],
        "slow_calls": _slow_calls(merged),
        "notes": list(merged.notes),
    })
    return data


def _slow_calls(merged: Merged) -> list[dict[str, Any]]:
    """Per function not JAX's: its slow calls on each process and their reasons."""
    found: dict[tuple[str, str | None], dict[str, Any]] = {}
    for group in merged.session.slow_calls:
        if group.owner == Owner.JAX:
            continue
        row = found.setdefault((group.function, group.defined_at), {
            "function": group.function, "defined_at": group.defined_at, "owner": group.owner,
            "per_process": {}, "reasons": []})
        index = str(group.process)
        row["per_process"][index] = row["per_process"].get(index, 0) + group.calls
        if group.reason not in row["reasons"]:
            row["reasons"].append(group.reason)
    return list(found.values())
