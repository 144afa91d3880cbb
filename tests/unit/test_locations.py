"""``file:line`` locations and stored pytree structures: the session's own texts, read back."""

from __future__ import annotations

import os

import pytest

from recompile_cli.session import locations
from recompile_cli.session.locations import Location
from recompile_cli.session.model import FunctionKey
from recompile_cli.session.structures import node_map, node_map_text, treedef_text


@pytest.mark.parametrize(("text", "parsed"), [
    ("prog.py:7", Location("prog.py", 7)),
    ("/a/b/prog.py:12 (step)", Location("/a/b/prog.py", 12, "step")),
    ("C:\\work\\prog.py:3", Location("C:\\work\\prog.py", 3)),  # a drive letter's colon
    ("a:1:2", Location("a:1", 2)),
    ("a.py:2 (g:3 (h))", Location("a.py", 2, "g:3 (h)")),  # the function may hold anything
    ("prog.py", None), ("prog.py:", None), (":7", None), ("prog.py:x7", None), ("", None),
    (None, None), ("prog.py:²", None),  # a digit that int() does not read
])
def test_locations_and_call_sites_parse(text, parsed):
    assert locations.parse(text) == parsed


def test_path_of_and_is_location_take_plain_locations_only():
    assert locations.path_of("/a/prog.py:7") == "/a/prog.py"
    assert locations.path_of("prog.py") == "prog.py"
    assert locations.path_of(None) is None
    assert locations.path_of("prog.py:7 (f)") == "prog.py:7 (f)"  # a call site is not a location
    assert locations.is_location("prog.py:7")
    assert not locations.is_location("prog.py:7 (f)")
    assert not locations.is_location("prog.py")


def test_function_keys_read_back_only_with_a_location():
    assert FunctionKey.parse("step@/a/prog.py:7") == FunctionKey("step", "/a/prog.py:7")
    assert FunctionKey.parse("a@b") == FunctionKey("a@b")
    assert FunctionKey.parse("@prog.py:7") == FunctionKey("@prog.py:7")
    key = FunctionKey("f@weird", "x.py:1")
    assert FunctionKey.parse(str(key)) == key


def test_locations_show_relative_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = os.getcwd()
    assert locations.relative(f"{here}{os.sep}prog.py:7") == "prog.py:7"
    assert locations.relative("/elsewhere/prog.py:7") == "/elsewhere/prog.py:7"
    assert locations.display(f"{here}{os.sep}prog.py:7 (f)") == "prog.py:7 (f)"
    assert locations.display(None) == ""
    assert locations.display(float("nan")) == ""


def test_node_maps_read_back():
    text = node_map_text([("x", "dict(a, b)"), ("x['a']", "list(2)")], "{'x': {...}}")
    assert node_map(text) == {"x": "dict(a, b)", "x['a']": "list(2)"}
    assert treedef_text(text) == "{'x': {...}}"
    assert node_map(node_map_text([], "T")) is None  # no nodes: the treedef text tells apart
    assert node_map("{'x': *}") is None
    assert treedef_text("{'x': *}") == "{'x': *}"


@pytest.fixture
def ipython_shell():
    """A real IPython shell (a terminal's, no kernel), removed afterwards."""
    shell_module = pytest.importorskip("IPython.core.interactiveshell")
    shell = shell_module.InteractiveShell.instance()
    yield shell
    shell_module.InteractiveShell.clear_instance()


def test_cells_of_an_ipython_shell_are_named_as_its_tracebacks_name_them(ipython_shell,
                                                                        tmp_path, monkeypatch):
    """In IPython a cell's code has a file name of IPython's own (a terminal's
    ``<ipython-input-N-...>``, a kernel's temporary file): reports, messages and the API show
    ``In[N], line L`` wherever they show a location (issue 33)."""
    ipython_shell.run_cell("x = 1", store_history=True)
    ipython_shell.run_cell("def step():\n    return 2\n", store_history=True)
    filename = ipython_shell.user_ns["step"].__code__.co_filename
    assert filename.startswith("<ipython-input-2-")
    assert locations.relative(f"{filename}:2 (<module>)") == "In[2], line 2 (<module>)"
    assert locations.display(f"{filename}:1") == "In[2], line 1"
    assert locations.relative_in(f"step ({filename}:2) compiled") == "step (In[2], line 2) compiled"
    monkeypatch.chdir(tmp_path)
    assert locations.relative(f"{tmp_path}/prog.py:3") == "prog.py:3"  # files stay files


def test_outside_ipython_a_cell_like_name_is_left_as_it_is():
    name = "<ipython-input-2-0123456789ab>:3"
    assert locations.relative(name) == name
    assert locations.cells("/tmp/ipykernel_12/345.py:3") == "/tmp/ipykernel_12/345.py:3"
