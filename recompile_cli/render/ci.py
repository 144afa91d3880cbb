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
from typing import Any

from recompile_cli.analysis.shorten import distinct
from recompile_cli.gate.evaluate import BudgetRow, GateResult, TargetFailure, Violation, verdicts
from recompile_cli.render import escape, fit
from recompile_cli.session import locations


def gate_summary(result: GateResult, markdown: bool = False, width: int | None = None) -> str:
    """The gate's verdict, a budget-against-actual table (a row per function of each target:
    ``ok`` only when every rule on it held, else what failed, each budget's verdict where
    several matched it), then violations, targets that raised, improvements and warnings. On
    the terminal, in ``width`` columns (default: ``fit.terminal_width``)."""
    heading = "### {}" if markdown else "{}"
    show = escape.markdown if markdown else escape.terminal
    width = None if markdown else width or fit.terminal_width()
    held = result.held
    lines = [("**" if markdown else "") + f"recompile-cli gate: {'passed' if held else 'FAILED'}"
             + ("**" if markdown else "")]
    found = verdicts(result)
    table: list[list[Any]] = [
        [_shown(v.rows[0].target), v.rows[0].function,
         _limit(v.rows[0].compiles, [row.max_compiles for row in v.rows]),
         _limit(v.rows[0].traces, [row.max_traces for row in v.rows]),
         _limit(f"{v.rows[0].compile_seconds:.3f}", [row.max_compile_seconds for row in v.rows]),
         _measured(v.rows, "equations", "max_equations", "not recorded"),
         _measured(v.rows, "slow_calls", "max_slow_calls", "not observable"),
         v.status] for v in found]
    table += [[_shown(e.target), _RAN, "", "", "", "", "", "ERROR"] for e in _rowless(result)]
    headers = ["target", "function", "compiles", "traces", "compile s", "equations",
               "slow calls", "status"]
    if table:  # equations and slow calls only where a budget limits them (fit.drop_empty)
        lines += ["", fit.table((headers, table), width, show, markdown)]
    every = result.every_violation
    if every:
        lines += ["", heading.format("Violations")]
        lines += _listed([show(v.message) for v in every], width)
    if result.errors:
        lines += ["", heading.format("Targets that raised (the gate cannot pass)")]
        lines += _listed([f"{show(_shown(e.target))}: {show(e.message)}" for e in result.errors],
                         width)
    if result.improvements:
        lines += ["", heading.format("Improvements"),
                  *_listed([show(text) for text in result.improvements], width)]
    if result.warnings:
        lines += ["", heading.format("Warnings"),
                  *_listed([show(text) for text in result.warnings], width)]
    return "\n".join(lines) + "\n"


def _listed(items: list[str], width: int | None) -> list[str]:
    """Bullets, wrapped to ``width`` on the terminal."""
    bullets = [f"- {item}" for item in items]
    return bullets if width is None else [part for b in bullets for part in fit.wrap(b, width)]


def _measured(rows: tuple[BudgetRow, ...], actual: str, limit: str, missing: str) -> str:
    """``1,530 / 500`` for a measure a budget limits (``equations``, ``slow_calls``), ``missing``
    where the run could not measure it; ``""`` where no budget limits it."""
    limits = [getattr(row, limit) for row in rows]
    if all(value is None for value in limits):
        return ""
    value = getattr(rows[0], actual)
    return _limit(missing if value is None else f"{value:,}", limits)


_RAN = "(target raised)"  # the function column of a target that raised before any row


def _limit(actual: object, limits: list[Any]) -> str:
    """``3 / 1``: the actual against the tightest of the budgets' limits."""
    given = [limit for limit in limits if limit is not None]
    return f"{actual} / {min(given)}" if given else f"{actual}"


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
    """One ``testcase`` per (target, function, budget) (with an ``error`` element when its
    target raised), one per gate violation outside a budget, and one with an ``error`` element
    per target that raised and has no budgeted function. Names are distinct within a target:
    a function's name, with the budget where several budgets matched it, and where it is
    defined where two functions share a name."""
    cases: list[tuple[str, str, list[Violation], str | None]] = [
        (row.target, name, list(row.violations), row.target_error)
        for row, name in zip(result.rows, _case_names(result.rows), strict=True)]
    cases += [(v.target or suite, f"{v.function} ({v.rule})", [v], None)
              for v in result.violations]
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


def _case_names(rows: tuple[BudgetRow, ...]) -> list[str]:
    """A test case name per row, distinct within its target (``_told_apart``)."""
    names = [row.function for row in rows]
    for target in dict.fromkeys(row.target for row in rows):
        mine = [i for i, row in enumerate(rows) if row.target == target]
        for i, name in zip(mine, _told_apart([rows[i] for i in mine]), strict=True):
            names[i] = name
    return names


def _told_apart(rows: list[BudgetRow]) -> list[str]:
    """The functions' names, then the budget where several budgets matched one, then where it
    is defined where two functions of one name remain."""
    return distinct([row.function for row in rows], [
        lambda k: f" (budget {rows[k].pattern})",
        lambda k: f" ({_shown(rows[k].defined_at or '')})"])


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
