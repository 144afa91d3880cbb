"""Gate results for people and CI systems: a budget table (terminal or Markdown), JUnit XML
with one test case per budgeted function, and GitHub Actions ``::error`` annotations."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Iterable

from tabulate import tabulate

from recompile_cli.capture.frames import relative
from recompile_cli.gate.evaluate import BudgetRow, Violation


def gate_summary(rows: list[BudgetRow], violations: list[Violation], improvements: list[str],
                 warnings: list[str], markdown: bool = False) -> str:
    heading = "### {}" if markdown else "{}"
    held = not violations and all(row.ok for row in rows)
    lines = [("**" if markdown else "") + f"recompile-cli gate: {'passed' if held else 'FAILED'}"
             + ("**" if markdown else ""), ""]
    if rows:
        table = [[row.target, row.function, _limit(row.compiles, row.max_compiles),
                  _limit(row.traces, row.max_traces),
                  _limit(f"{row.compile_seconds:.3f}", row.max_compile_seconds),
                  "ok" if row.ok else "FAIL"] for row in rows]
        lines.append(tabulate(table, headers=["target", "function", "compiles", "traces",
                                              "compile s", "status"],
                              tablefmt="github" if markdown else "simple",
                              disable_numparse=True))
    every = [v for row in rows for v in row.violations] + list(violations)
    if every:
        lines += ["", heading.format("Violations")]
        lines += [f"- {v.message}" for v in every]
    if improvements:
        lines += ["", heading.format("Improvements")] + [f"- {text}" for text in improvements]
    if warnings:
        lines += ["", heading.format("Warnings")] + [f"- {text}" for text in warnings]
    return "\n".join(lines) + "\n"


def _limit(actual: object, limit: object) -> str:
    return f"{actual}" if limit is None else f"{actual} / {limit}"


def junit_xml(rows: list[BudgetRow], violations: list[Violation], suite: str) -> str:
    """One ``testcase`` per budgeted function, plus one per gate violation outside a budget."""
    cases: list[tuple[str, str, list[Violation]]] = [
        (row.target, row.function, list(row.violations)) for row in rows]
    cases += [(suite, f"{v.function} ({v.rule})", [v]) for v in violations]
    root = ET.Element("testsuite", name=suite, tests=str(len(cases)),
                      failures=str(sum(1 for *_, found in cases if found)))
    for classname, name, found in cases:
        case = ET.SubElement(root, "testcase", classname=classname, name=name)
        for v in found:
            failure = ET.SubElement(case, "failure", type=v.rule, message=v.message)
            failure.text = v.message
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def annotations(violations: Iterable[Violation]) -> list[str]:
    """GitHub Actions workflow commands placing each violation at the user's call site."""
    out = []
    for v in violations:
        match = re.match(r"(.+?):(\d+)(?: \(.*\))?$", v.call_site or "")
        props = ([f"file={relative(match.group(1))}", f"line={match.group(2)}"] if match
                 else []) + [f"title=recompile-cli {v.rule}"]
        message = v.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        out.append(f"::error {','.join(props)}::{message}")
    return out
