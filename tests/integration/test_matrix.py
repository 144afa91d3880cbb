"""The change x container matrix (issue 18): each cell changes one thing between two calls of a
small jitted function (the cells of ``matrix.py``), runs them under
``recompile_cli.record()`` in this process, and checks what a user reads: the compile count, the
cause code, the argument path down to the leaf or field, ``before -> after``, and the right
advice or none. Every (change, container) pair is a cell or listed as impossible with a reason,
and docs/causes.md's "What it explains" table is the one ``table()`` renders from these cells."""

from __future__ import annotations

import re
from typing import Any

import matrix
import pytest
from helpers import ROOT
from jax_support import requires_private_hooks
from matrix_cells import CELLS, CHANGES, CONTAINERS, Cell, Text

import recompile_cli

ORDER = [(change, container) for change in CHANGES for container in CONTAINERS
         if (change, container) in CELLS]


def matches(expected: Text, said: str | None) -> bool:
    if expected is None:
        return True
    if isinstance(expected, re.Pattern):
        return said is not None and expected.search(said) is not None
    return said == expected


def record(cell: Cell) -> Any:
    """Run the cell under the recorder; the analysed report."""
    for module in cell.needs:
        pytest.importorskip(module)
    recording = recompile_cli.record(f"{cell.change} x {cell.container}")
    if cell.raises:
        with pytest.raises(cell.raises), recording:
            cell.run()
    else:
        with recording:
            cell.run()
    return recording.report


def what_it_said(cell: Cell, report: Any) -> dict[str, Any]:
    analysed = report.report
    events = [e for e in analysed.session.events
              if e.function == cell.function and e.depth == 0]
    said: dict[str, Any] = {"compiles": report.compiles(cell.function)}
    if events:
        cause = analysed.primary(events[-1])
        said.update(code=str(cause.code), argument=cause.argument, before=cause.before,
                    after=cause.after, detail=cause.detail)
        error = events[-1].error
        said["refused"] = error.argument if error is not None and error.refused else False
    said["advice"] = [s.message for s in analysed.suggestions if s.function == cell.function]
    said["raised"] = analysed.session.target_exception
    said["stale"] = tuple(sorted(s.variable for s in analysed.session.stale_captures
                                 if s.function == cell.function))
    return said


def problems_with(cell: Cell, said: dict[str, Any]) -> list[str]:
    wrong = []
    if said["compiles"] != cell.compiles:
        wrong.append(f"compiles {said['compiles']} (want {cell.compiles})")
    advice = said["advice"]
    if cell.code is None:  # JAX refused the call: an event of the function called
        # JAX raises in C++ before any hook runs; the call and its arguments name the static
        # argument (``cell.argument``, None where the call cannot show it: static data)
        if said.get("refused", False) is False:
            wrong.append(f"no refused call of {cell.function} recorded (raised "
                         f"{said['raised']!r})")
        elif not matches(cell.argument, said["refused"]):
            wrong.append(f"refused argument {said['refused']!r} (want {cell.argument!r})")
        refused = [a for a in advice if a.startswith("JAX refused a call")]
        if cell.argument is not None and not any(f"`{cell.argument}`" in a for a in refused):
            wrong.append(f"no advice of {cell.function} naming `{cell.argument}`")
        if cell.advice is not None and not any(cell.advice.search(a) for a in refused):
            wrong.append(f"no refusal advice that matches {cell.advice.pattern!r}")
    else:
        for name in ("code", "argument", "before", "after"):
            expected = getattr(cell, name)
            if not matches(expected, said.get(name)):
                shown = expected.pattern if isinstance(expected, re.Pattern) else expected
                wrong.append(f"{name} {said.get(name)!r} (want {shown!r})")
        if cell.detail is not None:
            text = " ".join(str(said.get(k)) for k in ("detail", "before", "after"))
            if not cell.detail.search(text):
                wrong.append(f"detail {said.get('detail')!r} (want {cell.detail.pattern!r})")
        if cell.advice is None and advice:
            wrong.append("advice given (want none)")
        elif cell.advice is not None and not any(cell.advice.search(a) for a in advice):
            wrong.append(f"advice {'missing' if not advice else 'wrong'} "
                         f"(want {cell.advice.pattern!r})")
    for pattern in cell.forbid:
        if any(pattern.search(a) for a in advice):
            wrong.append(f"advice says {pattern.pattern!r}")
    if cell.stale is not None and said["stale"] != cell.stale:
        wrong.append(f"stale captures {said['stale']} (want {cell.stale})")
    return wrong


@requires_private_hooks
@pytest.mark.parametrize("key", ORDER, ids=[f"{a}-{b}" for a, b in ORDER])
def test_cell(key: tuple[str, str]) -> None:
    cell = CELLS[key]
    said = what_it_said(cell, record(cell))
    wrong = problems_with(cell, said)
    assert not wrong, f"{cell.change} x {cell.container}: " + "; ".join(wrong) + (
        f"\nthe report said: {said}")


def test_every_pair_is_a_cell_or_impossible_with_a_reason() -> None:
    pairs = {(change, container) for change in CHANGES for container in CONTAINERS}
    impossible = matrix.IMPOSSIBLE
    assert set(CELLS) <= pairs and set(impossible) <= pairs
    assert not set(CELLS) & set(impossible), "a pair is both a cell and impossible"
    assert pairs - set(CELLS) - set(impossible) == set(), "pairs neither run nor explained"
    assert all(reason.strip() for reason in impossible.values())


def test_readme_shows_the_matrix_as_generated() -> None:
    readme = (ROOT / "docs" / "causes.md").read_text()
    start, end = "<!-- matrix table: start -->\n", "<!-- matrix table: end -->"
    assert start in readme and end in readme, "docs/causes.md has no generated matrix table"
    shown = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert shown == matrix.table(), (
        "docs/causes.md's table is stale: paste `python tests/integration/matrix.py`")
