"""Issue 19 (part G) in a real Jupyter kernel: the magics answer bad options with a usage line
(no traceback), and the report of what was recorded is ALWAYS shown, whatever the cell did:
``sys.exit``, ``KeyboardInterrupt``, an interrupt of the kernel (SIGINT, as Jupyter sends it),
an unwritable ``--save`` (its error shown after the report)."""

from __future__ import annotations

from pathlib import Path

import pytest
from notebook_kernel import execute, setup

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")

SETUP = setup("import os, signal, sys, time")

CELLS = {
    "no_statement": "%recompiles",
    "negative_limit": "%%recompiles --max-compiles -1\ntrain_step(jnp.ones(2))",
    "line_negative_limit": "%recompiles --max-compiles -1 train_step(jnp.ones(2))",
    "unknown_cell_option": "%%recompiles --bogus\ntrain_step(jnp.ones(2))",
    "unknown_line_option": "%recompiles --bogus train_step(jnp.ones(2))",
    "sys_exit": "%%recompiles\ntrain_step(jnp.ones(3))\nsys.exit(3)",
    "keyboard_interrupt": "%%recompiles\ntrain_step(jnp.ones(4))\nraise KeyboardInterrupt",
    "kernel_interrupt": ("%%recompiles\ntrain_step(jnp.ones(5))\n"
                         "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)"),
    "unwritable_save": "%%recompiles --save {folder}/file.txt/run.json\ntrain_step(jnp.ones(6))",
    "after": "print('kernel alive', _recompiles.compiles('train_step'))",
}


def outputs(cell: object, *types: str) -> list[dict]:
    return [o for o in cell["outputs"] if o["output_type"] in types]  # type: ignore[index]


def text_of(cell: object) -> str:
    found = []
    for output in cell["outputs"]:  # type: ignore[index]
        if output["output_type"] == "stream":
            found.append(output["text"])
        elif output["output_type"] == "error":
            found.append(f"{output['ename']}: {output['evalue']}\n" + "\n".join(
                output["traceback"]))
        else:
            found.extend(str(v) for v in output.get("data", {}).values())
    return "\n".join(found)


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    folder: Path = tmp_path_factory.mktemp("notebook_front_doors")
    (folder / "file.txt").write_text("a file, not a folder")
    v4 = nbformat.v4
    notebook = v4.new_notebook(cells=[v4.new_code_cell(SETUP)] + [
        v4.new_code_cell(source.format(folder=folder)) for source in CELLS.values()],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})
    execute(notebook, folder, allow_errors=True)
    return dict(zip(CELLS, notebook.cells[1:], strict=True))


@pytest.mark.parametrize(("name", "expected"), [
    ("no_statement", "nothing to record"),
    ("negative_limit", "--max-compiles=-1 is not a limit"),
    ("line_negative_limit", "--max-compiles=-1 is not a limit"),
    ("unknown_cell_option", "unrecognized arguments: --bogus"),
    ("unknown_line_option", "unknown option '--bogus'"),
])
def test_bad_magic_options_are_a_usage_line_not_a_traceback(cells, name, expected):
    text = text_of(cells[name])
    assert "UsageError" in text and expected in text, text
    assert "Traceback" not in text and "recompile_cli/" not in text
    assert "<div" not in text  # nothing ran, no report


@pytest.mark.parametrize(("name", "ename"), [("sys_exit", "SystemExit"),
                                             ("keyboard_interrupt", "KeyboardInterrupt"),
                                             ("kernel_interrupt", "KeyboardInterrupt")])
def test_the_report_is_shown_whatever_the_cell_did(cells, name, ename):
    cell = cells[name]
    shown = outputs(cell, "display_data")
    assert shown and "train_step" in shown[0]["data"]["text/html"], text_of(cell)
    assert ename in text_of(cell)
    # the report comes first, then what the cell raised
    kinds = [o["output_type"] for o in cell["outputs"]]
    assert kinds.index("display_data") < len(kinds) - 1


def test_an_unwritable_save_shows_the_report_then_the_error(cells):
    cell = cells["unwritable_save"]
    kinds = [o["output_type"] for o in cell["outputs"]]
    assert kinds[0] == "display_data", kinds
    assert "train_step" in cell["outputs"][0]["data"]["text/html"]
    text = text_of(cell)
    assert "UsageError" in text and "--save" in text and "was not saved" in text
    assert "Traceback" not in text


def test_the_kernel_goes_on_after_all_that(cells):
    assert "kernel alive 1" in text_of(cells["after"])
