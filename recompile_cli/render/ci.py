"""Gate results for people and CI systems: a budget table (terminal or Markdown), JUnit XML
with one test case per budgeted function, and GitHub Actions ``::error`` annotations.

A target that raised is an error in each of them: its functions' rows show ``ERROR`` and their
test cases carry an ``error`` element (a target with no row gets a row and a test case of its
own), and it gets an annotation. Paths are shown relative to the working folder.

Names and messages carry the user's function names, values and paths: each output makes them
inert (``escape``): one line per annotation, well-formed XML, Markdown that adds no rows or
HTML, terminal text without control characters."""

from __future__ import annotations

import contextlib
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from tabulate import tabulate

from recompile_cli.gate.evaluate import GateResult, TargetFailure, Violation
from recompile_cli.render import escape
from recompile_cli.session import locations


def gate_summary(result: GateResult, markdown: bool = False) -> str:
    """The gate's verdict, a budget-against-actual table, then violations, targets that
    raised, improvements and warnings."""
    heading = "### {}" if markdown else "{}"
    show = escape.markdown if markdown else escape.terminal
    rows, held = result.rows, result.held
    lines = [("**" if markdown else "") + f"recompile-cli gate: {'passed' if held else 'FAILED'}"
             + ("**" if markdown else ""), ""]
    table = [[show(_shown(row.target)), show(row.function),
              show(_limit(row.compiles, row.max_compiles)),
              show(_limit(row.traces, row.max_traces)),
              show(_limit(f"{row.compile_seconds:.3f}", row.max_compile_seconds)),
              row.status] for row in rows]
    table += [[show(_shown(e.target)), _RAN, "", "", "", "ERROR"] for e in _rowless(result)]
    headers = ["target", "function", "compiles", "traces", "compile s", "status"]
    if any(row.max_equations is not None for row in rows):  # max_equations budgets
        headers.insert(5, "equations")
        for i, line in enumerate(table):  # the rows of targets that raised come last, empty
            row = rows[i] if i < len(rows) else None
            line.insert(5, "" if row is None else show(_limit(
                "not recorded" if row.equations is None else f"{row.equations:,}",
                row.max_equations)))
    if any(row.max_slow_calls is not None for row in rows):  # max_slow_calls budgets
        headers.insert(len(headers) - 1, "slow calls")
        for i, line in enumerate(table):
            row = rows[i] if i < len(rows) else None
            line.insert(len(line) - 1, "" if row is None else show(_limit(
                "not observable" if row.slow_calls is None else f"{row.slow_calls:,}",
                row.max_slow_calls)))
    if table:
        lines.append(tabulate(table, headers=headers,
                              tablefmt="github" if markdown else "simple",
                              disable_numparse=True))
    every = result.every_violation
    if every:
        lines += ["", heading.format("Violations")]
        lines += [f"- {show(v.message)}" for v in every]
    if result.errors:
        lines += ["", heading.format("Targets that raised (the gate cannot pass)")]
        lines += [f"- {show(_shown(e.target))}: {show(e.message)}" for e in result.errors]
    if result.improvements:
        lines += ["", heading.format("Improvements")] + [f"- {show(text)}"
                                                         for text in result.improvements]
    if result.warnings:
        lines += ["", heading.format("Warnings")] + [f"- {show(text)}"
                                                     for text in result.warnings]
    return "\n".join(lines) + "\n"


_RAN = "(target raised)"  # the function column of a target that raised before any row


def _limit(actual: object, limit: object) -> str:
    return f"{actual}" if limit is None else f"{actual} / {limit}"


def _shown(label: str) -> str:
    """A target label or suite name with paths relative to the working folder."""
    return locations.relative(label) or label


def _suite_name(suite: str) -> str:
    """The suite name: the budget file or target, its path relative to the working folder
    even when outside it (``../ci/recompile-budget.yaml``), never absolute."""
    program, space, rest = _shown(suite).partition(" ")
    if os.path.isabs(program):
        with contextlib.suppress(ValueError):  # another drive (Windows)
            program = os.path.relpath(program)
    return program + space + rest


def _rowless(result: GateResult) -> list[TargetFailure]:
    """Targets that raised and have no budget row to carry the error."""
    with_rows = {row.target for row in result.rows}
    return [e for e in result.errors if e.target not in with_rows]


def junit_xml(result: GateResult, suite: str) -> str:
    """One ``testcase`` per budgeted function (with an ``error`` element when its target
    raised), one per gate violation outside a budget, and one with an ``error`` element per
    target that raised and has no budgeted function."""
    cases: list[tuple[str, str, list[Violation], str | None]] = [
        (row.target, row.function, list(row.violations), row.target_error)
        for row in result.rows]
    cases += [(suite, f"{v.function} ({v.rule})", [v], None) for v in result.violations]
    cases += [(e.target, f"{e.target} {_RAN}", [], e.message) for e in _rowless(result)]
    root = ET.Element("testsuite", name=escape.xml(_suite_name(suite)), tests=str(len(cases)),
                      failures=str(sum(1 for _, _, found, _ in cases if found)),
                      errors=str(sum(1 for *_, error in cases if error is not None)))
    for classname, name, found, error in cases:
        case = ET.SubElement(root, "testcase", classname=escape.xml(_shown(classname)),
                             name=escape.xml(_shown(name)))
        for v in found:
            failure = ET.SubElement(case, "failure", type=escape.xml(v.rule),
                                    message=escape.xml(v.message))
            failure.text = escape.xml(v.message)
        if error is not None:
            element = ET.SubElement(case, "error", type="target_raised",
                                    message=escape.xml(error))
            element.text = escape.xml(error)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def github_annotations(violations: Iterable[Violation],
                       errors: Iterable[TargetFailure] = ()) -> list[str]:
    """GitHub Actions workflow commands placing each violation at the user's call site, and
    one per target that raised, one line each: property values and the message are escaped as
    GitHub unescapes them."""
    out = []
    for v in violations:
        where = locations.parse(escape.text(v.call_site))
        props = ([("file", locations.display(where.path)), ("line", str(where.line))]
                 if where else []) + [("title", f"recompile-cli {v.rule}")]
        out.append(_annotation(props, v.message))
    for e in errors:
        out.append(_annotation([("title", "recompile-cli target_raised")],
                               f"{_shown(e.target)}: {e.message}"))
    return out


def _annotation(props: list[tuple[str, str]], message: str) -> str:
    fields = ",".join(f"{key}={escape.github_property(value)}" for key, value in props)
    return f"::error {fields}::{escape.github_data(message)}"
