"""Gate results for people and CI systems: a budget table (terminal or Markdown), JUnit XML
with one test case per budgeted function, and GitHub Actions ``::error`` annotations.

Names and messages carry the user's function names, values and paths: each output makes them
inert (``escape``): one line per annotation, well-formed XML, Markdown that adds no rows or
HTML, terminal text without control characters."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

from tabulate import tabulate

from recompile_cli.gate.evaluate import GateResult, Violation
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
    if rows:
        table = [[show(row.target), show(row.function),
                  show(_limit(row.compiles, row.max_compiles)),
                  show(_limit(row.traces, row.max_traces)),
                  show(_limit(f"{row.compile_seconds:.3f}", row.max_compile_seconds)),
                  "ok" if row.ok else "FAIL"] for row in rows]
        lines.append(tabulate(table, headers=["target", "function", "compiles", "traces",
                                              "compile s", "status"],
                              tablefmt="github" if markdown else "simple",
                              disable_numparse=True))
    every = result.every_violation
    if every:
        lines += ["", heading.format("Violations")]
        lines += [f"- {show(v.message)}" for v in every]
    if result.errors:
        lines += ["", heading.format("Targets that raised (the gate cannot pass)")]
        lines += [f"- {show(e.target)}: {show(e.message)}" for e in result.errors]
    if result.improvements:
        lines += ["", heading.format("Improvements")] + [f"- {show(text)}"
                                                         for text in result.improvements]
    if result.warnings:
        lines += ["", heading.format("Warnings")] + [f"- {show(text)}"
                                                     for text in result.warnings]
    return "\n".join(lines) + "\n"


def _limit(actual: object, limit: object) -> str:
    return f"{actual}" if limit is None else f"{actual} / {limit}"


def junit_xml(result: GateResult, suite: str) -> str:
    """One ``testcase`` per budgeted function, one per gate violation outside a budget, and one
    with an ``error`` element per target that raised."""
    cases: list[tuple[str, str, list[Violation]]] = [
        (row.target, row.function, list(row.violations)) for row in result.rows]
    cases += [(suite, f"{v.function} ({v.rule})", [v]) for v in result.violations]
    root = ET.Element("testsuite", name=escape.xml(suite),
                      tests=str(len(cases) + len(result.errors)),
                      failures=str(sum(1 for *_, found in cases if found)),
                      errors=str(len(result.errors)))
    for classname, name, found in cases:
        case = ET.SubElement(root, "testcase", classname=escape.xml(classname),
                             name=escape.xml(name))
        for v in found:
            failure = ET.SubElement(case, "failure", type=escape.xml(v.rule),
                                    message=escape.xml(v.message))
            failure.text = escape.xml(v.message)
    for error in result.errors:
        case = ET.SubElement(root, "testcase", classname=escape.xml(error.target),
                             name=escape.xml(f"{error.target} (ran)"))
        element = ET.SubElement(case, "error", type="target_raised",
                                message=escape.xml(error.message))
        element.text = escape.xml(error.message)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def github_annotations(violations: Iterable[Violation]) -> list[str]:
    """GitHub Actions workflow commands placing each violation at the user's call site, one
    line each: property values and the message are escaped as GitHub unescapes them."""
    out = []
    for v in violations:
        where = locations.parse(escape.text(v.call_site))
        props = ([("file", locations.display(where.path)), ("line", str(where.line))]
                 if where else []) + [("title", f"recompile-cli {v.rule}")]
        fields = ",".join(f"{key}={escape.github_property(value)}" for key, value in props)
        out.append(f"::error {fields}::{escape.github_data(v.message)}")
    return out
