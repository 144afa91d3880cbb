"""Warm-up plans from hand-made sessions (no JAX): what is planned, what is not and why, that
no session, however hostile, makes a plan run code it did not name, and that the plan's code
comes from syntax trees, never from formatted text."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import tokenize

import msgspec
import pytest
from builders import event, leaf, session, sig
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from recompile_cli.analysis.warmup import plan as planning
from recompile_cli.analysis.warmup.plan import Unwritable, plan
from recompile_cli.analysis.warmup.project import OutsideRoot
from recompile_cli.render import warmup_plan
from recompile_cli.render.warmup_plan import render_plan, summary_json, summary_text
from recompile_cli.session.warmup import (
    Argument,
    Node,
    NodeKind,
    Placement,
    Replay,
    Value,
    ValueKind,
)

LEAF = Node(NodeKind.LEAF)
DICT_XY = Node(NodeKind.DICT, 2, keys=(Value(ValueKind.LITERAL, "'x'"),
                                       Value(ValueKind.LITERAL, "'y'")))


def step_event(replay: Replay, seq: int = 0, n: int = 8, **changes):
    signature = sig(paths={"batch['x']": leaf("f32", n, 4), "batch['y']": leaf("f32", n, 1),
                           "lr": leaf("f32", weak=True)})
    return replace(event(signature, function="step", seq=seq, start=float(seq)), replay=replay,
                   **changes)


def good_replay(**changes) -> Replay:
    replay = Replay("model:step", (
        Argument("batch", tree=(DICT_XY, LEAF, LEAF)),
        Argument("lr", tree=(LEAF,)),
        Argument("mode", keyword=True, static=Value(ValueKind.LITERAL, "'train'"))))
    return msgspec.structs.replace(replay, **changes)


with_ = msgspec.structs.replace  # the replay's types are msgspec structs


def rendered(*events) -> tuple[planning.Plan, str]:
    found = plan(session(list(events)))
    return found, round_trips(render_plan(found, "run.json", "/work"))


# The plan's fixed parts (helpers, ``warm_up``), as every plan holds them.
FIXED = (warmup_plan._fixed(warmup_plan._HELPERS), warmup_plan._fixed(warmup_plan._WARM_UP))


def round_trips(text: str, whole: bool = True) -> str:
    """``text`` parses, and what ``ast.unparse`` writes of it parses back to the same tree; its
    comments are whole lines (no code shares a line with one). Not ``whole``: the part made
    from the session only (quicker, for many plans)."""
    assert all(part in text for part in FIXED)
    code = text if whole else text.replace(FIXED[0], "").replace(FIXED[1], "")
    tree = ast.parse(code)
    assert ast.dump(ast.parse(ast.unparse(tree))) == ast.dump(tree)
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            assert not token.line[:token.start[1]].strip(), token.line
    return text


def test_a_plan_holds_each_distinct_signature_once():
    found, text = rendered(step_event(good_replay(), 0), step_event(good_replay(), 1),
                           step_event(good_replay(), 2, n=4))
    assert len(found.planned) == 2 and not found.unplayable
    assert text.count("yield 'step'") == 2
    assert ("f.lower(\n        {'x': _array((8, 4), 'float32'), 'y': _array((8, 1), "
            "'float32')},\n        _array((), 'float32', weak_type=True),\n"
            "        mode='train',\n    )") in text
    assert "    f = _jitted('model', 'step')" in text
    compile(text, "plan.py", "exec")


def test_what_cannot_be_replayed_is_listed_with_why():
    lam = good_replay(function=None, problem="a lambda jitted where no module-level name "
                      "holds the jitted object")
    static = good_replay(arguments=(Argument("cfg", problem="Cfg() has no literal form"),))
    jax_own = replace(step_event(good_replay(), 3), function="_normal", owner="jax")
    derived = replace(step_event(None, 4), function="derived", traced=False, replay=None)
    found, text = rendered(step_event(lam, 0), step_event(lam, 1), step_event(static, 2),
                           jax_own, derived)
    reasons = {(u.function, u.compiles): u.reason for u in found.unplayable}
    assert "a lambda jitted" in reasons[("step", 2)]
    assert reasons[("step", 1)] == "argument cfg: Cfg() has no literal form"
    assert reasons[("_normal", 1)].startswith("JAX's own function")
    assert "derived from it by grad/vjp/vmap" in next(
        u.reason for u in found.unplayable if "derived" in u.reason)
    assert not found.planned
    for reason in (u.reason for u in found.unplayable):
        assert reason in text  # the same list in the plan, the summary and the JSON
        assert reason in summary_text(found, "plan.py", "run.json")
        assert reason in summary_json(found, "plan.py", "run.json")


@pytest.mark.parametrize(("replay", "why"), [
    (good_replay(function="__import__('os').system('x'):f"), "is not a dotted name"),
    (good_replay(function="model:step; import os"), "is not a dotted name"),
    (good_replay(function="model:class"), "is not a dotted name"),  # a keyword
    (good_replay(arguments=(Argument("mode", static=Value(ValueKind.LITERAL,
                                                          "__import__('os')")),)),
     "does not read back as a literal"),
    (good_replay(arguments=(Argument("mode", static=Value(ValueKind.LITERAL, "1e999")),)),
     "does not read back as itself"),
    (good_replay(arguments=(*good_replay().arguments[:2], Argument(
        "mode", keyword=True, static=Value(ValueKind.LITERAL, "(1, 2)")))), None),  # fine
    (good_replay(arguments=(Argument("x=1, y", keyword=True,
                                     static=Value(ValueKind.LITERAL, "1")),)), "is not a name"),
    (good_replay(arguments=(Argument("m", static=Value(
        ValueKind.DATACLASS, "model:Cfg", (Value(ValueKind.LITERAL, "1"),),
        ("a=exec('x')",))),)), "fields are not names"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.DTYPE, "float32')")),)),
     "the dtype"),
    (good_replay(arguments=(Argument("batch", tree=(
        Node(NodeKind.DICT, 2, keys=(Value(ValueKind.LITERAL, "open('/etc/passwd')"),
                                     Value(ValueKind.LITERAL, "'y'"))), LEAF, LEAF)),
                            Argument("lr", tree=(LEAF,)))), "does not read back"),
    (good_replay(arguments=(Argument("batch", tree=(
        Node(NodeKind.CUSTOM, 2, type="model:S(", aux=None), LEAF, LEAF)),
                            Argument("lr", tree=(LEAF,)))), "is not a dotted name"),
    (good_replay(arguments=(Argument("batch", tree=(DICT_XY, LEAF)),
                            Argument("lr", tree=(LEAF,)))), "its pytree ends early"),
    (good_replay(files={"os; x": "/a.py"}), "is not a dotted name"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.TREEDEF, nodes=(
        Node(NodeKind.CUSTOM, 1, type="os:system(1)"), LEAF))),)), "is not a dotted name"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.TREEDEF, nodes=(
        Node(NodeKind.TUPLE, 2), LEAF))),)), "its pytree ends early"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.TREEDEF, text="x", nodes=(
        LEAF,))),)), "a treedef value with items"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.TUPLE, nodes=(LEAF,))),)),
     "not a treedef"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.MAPPING, "os:environ.get(", (
        Value(ValueKind.LITERAL, "'a'"), Value(ValueKind.LITERAL, "1")))),)),
     "is not a dotted name"),
    (good_replay(arguments=(Argument("m", static=Value(ValueKind.MAPPING, "m:Frozen", (
        Value(ValueKind.LITERAL, "'a'"),))),)), "a key and no value"),
])
def test_every_part_of_a_replay_is_checked_before_it_is_written(replay, why):
    found, text = rendered(step_event(replay))
    compile(text, "plan.py", "exec")
    if why is None:
        assert found.planned and not found.unplayable
        return
    (item,) = found.unplayable
    assert why in item.reason
    assert not found.planned and "BLOCKS = []" in text


def test_placements_are_checked():
    mesh = Placement("mesh", (0, 1), "cpu", (2,), ("batch",), ("Explicit",), "('batch', None)",
                     "device")
    placed = good_replay(placements=(mesh,), leaf_placements=(1, 0, 0))
    found, text = rendered(step_event(placed))
    assert ("_array((8, 4), 'float32', sharding=_named(_mesh('cpu', (0, 1), (2,), ('batch',), "
            "('Explicit',)), ('batch', None), memory_kind='device'))") in text
    for bad, why in [(with_(mesh, axis_types=("Auto); import os; (",)), "unknown axis types"),
                     (with_(mesh, spec="__import__('os')"), "does not read back"),
                     (with_(mesh, spec="(1, 2)"), "not a tuple of axis names"),
                     (with_(mesh, mesh_shape=(3,)), "does not match its devices"),
                     (with_(mesh, kind="gspmd"), "a placement of kind")]:
        found, _ = rendered(step_event(with_(placed, placements=(bad,))))
        assert why in found.unplayable[0].reason
    found, _ = rendered(step_event(with_(placed, placements=(
        Placement("other", problem="a GSPMDSharding, which the plan does not build"),))))
    assert found.unplayable[0].reason == ("a sharding the plan cannot build: a GSPMDSharding, "
                                          "which the plan does not build")


def test_literal_round_trips_only():
    assert planning.literal("-1.5") == -1.5
    assert planning.literal("('a', None, (1, 2))") == ("a", None, (1, 2))
    for text in ("1.50", "x", "f()", "[" * 10000, "9" * 5000, "'a' 'b'"):
        with pytest.raises(Unwritable):
            planning.literal(text)


ALLOWED_CALLS = {"_jitted", "_array", "_ref", "_node", "_namedtuple", "_dataclass", "_device",
                 "_named", "_mesh", "_treedef", "_mapping"}
ALLOWED_NAMES = ALLOWED_CALLS | {"f", "label", "jax"}


def block_functions(text: str) -> list[ast.FunctionDef]:
    tree = ast.parse(text)
    blocks = next(node for node in tree.body if isinstance(node, ast.Assign)
                  and getattr(node.targets[0], "id", "") == "BLOCKS")
    names = {element.id for element in blocks.value.elts}  # type: ignore[attr-defined]
    return [node for node in tree.body if isinstance(node, ast.FunctionDef)
            and node.name in names]


def assert_inert(text: str) -> None:
    """Every block of the plan only calls the plan's helpers and ``f.lower``, reads no name
    but its own, and holds the session's text only as constants."""
    for block in block_functions(text):
        for node in ast.walk(block):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name):
                    assert func.id in ALLOWED_CALLS, ast.unparse(node)
                else:
                    assert ast.unparse(func) in ("f.lower", "jax.numpy.dtype"), ast.unparse(node)
            elif isinstance(node, ast.Name):
                assert node.id in ALLOWED_NAMES, node.id
            elif isinstance(node, ast.Attribute):
                assert ast.unparse(node) in ("f.lower", "jax.numpy", "jax.numpy.dtype")
            assert not isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Delete))


TEXT = st.text(st.characters(codec="utf-8"), max_size=30) | st.sampled_from([
    "'''", '"""', "\n", "\r", "\\", "__import__('os').system('id')", "a.b", "#", "\u2028",
    "\u202e", "model:step", "x=1)", "')", "\x00"])


@settings(max_examples=150, deadline=None)
@given(function=TEXT, ref=TEXT, name=TEXT, key=TEXT, literal=TEXT, dtype=TEXT, path=TEXT,
       site=TEXT, file=TEXT, axis=TEXT, module=TEXT)
def test_no_session_makes_a_plan_run_code_it_did_not_name(function, ref, name, key, literal,
                                                          dtype, path, site, file, axis,
                                                          module):
    replay = Replay(ref or "model:step", (
        Argument(name or "x", tree=(Node(NodeKind.DICT, 1, keys=(
            Value(ValueKind.LITERAL, key),)), LEAF)),
        Argument(name or "y", keyword=True, static=Value(ValueKind.LITERAL, literal))),
        files={module: file}, placements=(Placement("mesh", (0,), axis, (1,), (axis,), (),
                                                    "(None,)"),), leaf_placements=(1,))
    signature = sig(paths={path or "x": leaf(dtype or "f32", 2)})
    hostile = replace(event(signature, function=function, call_site=site, defined_at=site),
                      replay=replay)
    # a replay that passes every check, named and placed by the hostile texts
    named = replace(event(sig(paths={path or "x": leaf("f32", 2)}), function=function, seq=2,
                          call_site=site, defined_at=site, start=2.0),
                    replay=Replay("model:step", (Argument("x", tree=(LEAF,)),)))
    found = plan(session([hostile, step_event(good_replay(), seq=1), named]))
    assert found.planned  # at least the two good ones
    try:
        text = round_trips(render_plan(found, function, file, name=path), whole=False)
    except OutsideRoot as exc:  # a file the plan would load that is not inside the project
        assert {module: file} == found.planned[0].files and repr(file)[:40] in str(exc)
        return
    compile(text, "plan.py", "exec")  # parses: nothing breaks out of a string or comment
    assert_inert(text)
    assert len(found.planned) + sum(u.compiles for u in found.unplayable) == 3


def plan_of(target: str, *files: dict[str, str], replay: Replay | None = None) -> planning.Plan:
    """The plan of a session of ``target`` whose replays name ``files`` (one event each)."""
    events = [step_event(with_(replay or good_replay(), files=named), seq=i, n=8 + i)
              for i, named in enumerate(files)]
    return plan(session(events, target=target))


def test_a_plan_loads_only_files_inside_the_project_root(tmp_path, monkeypatch):
    """Stored files are data: the files a plan may load are inside the recorded program's
    repository or project (from its script's folder, the nearest folder upwards with .git,
    else with pyproject.toml, setup.py or setup.cfg), and each is named in the docstring; a
    session naming any other file is refused."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "lib").mkdir()
    (project / "pyproject.toml").write_text("")
    script, module = project / "scripts" / "train.py", project / "lib" / "model.py"
    outside = tmp_path / "outside" / "evil.py"
    outside.parent.mkdir()
    (project / "lib" / "link.py").symlink_to(outside)
    good = {"__main__": str(script), "model": str(module)}
    found = plan_of("scripts/train.py --epochs 1", good)
    docstring = ast.get_docstring(ast.parse(render_plan(found, "run.json", str(tmp_path))))
    assert f"inside the project root, {project}." in (docstring or "")
    assert f"    __main__  {script}\n    model  {module}" in (docstring or "")
    for files, why in [
            ({"model": "../../outside/evil.py"}, "'../../outside/evil.py' for module 'model', "
                                                  "which is not an absolute path"),
            ({"model": f"{project}/lib/../../outside/evil.py"}, "a path with '..' in it"),
            ({"model": str(outside)}, f"outside the project root {str(project)!r}"),
            ({"model": str(project / "lib" / "link.py")}, "once its links are resolved"),
            ({"model": "/tmp/a\x00b.py"}, "which is not a file's path"),
            ({"__main__": str(outside)}, "but the script it records running is "
                                          "'scripts/train.py'")]:
        with pytest.raises(OutsideRoot, match="Refusing to write a plan") as refused:
            render_plan(plan_of("scripts/train.py --epochs 1", good | files), "run.json")
        assert why in str(refused.value)
    # two events that give __main__ two files: one run, one script
    with pytest.raises(OutsideRoot, match="gives __main__ 2 files"):
        render_plan(plan_of("scripts/train.py", good, {"__main__": str(outside)}), "run.json")
    # a file target (profile, forecast, the API's file:line) is the program's file
    assert render_plan(plan_of(f"{script}:main", {"model": str(module)}), "run.json")
    with pytest.raises(OutsideRoot, match="outside the project root"):
        render_plan(plan_of(f"{script}:main", {"model": str(outside)}), "run.json")
    # a repository (.git) holds its projects: a library beside the script's project is in it
    mono = tmp_path / "mono"
    (mono / "app").mkdir(parents=True)
    (mono / ".git").mkdir()
    (mono / "app" / "pyproject.toml").write_text("")
    assert render_plan(plan_of("app/train.py", {"__main__": str(mono / "app" / "train.py"),
                                                "common": str(mono / "libs" / "common.py")}),
                       "run.json")
    # no file named: the project of the current folder
    monkeypatch.chdir(project / "lib")
    assert render_plan(plan_of("pkg.mod:main", {"model": str(module)}), "run.json")
    monkeypatch.chdir(outside.parent)
    with pytest.raises(OutsideRoot, match="outside the project root"):
        render_plan(plan_of("pkg.mod:main", {"model": str(module)}), "run.json")


def test_the_docstring_names_every_module_the_plan_imports():
    replay = good_replay(arguments=(
        Argument("batch", tree=(Node(NodeKind.CUSTOM, 2, type="nodes:Pair"), LEAF, LEAF)),
        Argument("lr", tree=(LEAF,)),
        Argument("mode", keyword=True, static=Value(ValueKind.TUPLE, items=(
            Value(ValueKind.REF, "modes:TRAIN"),
            Value(ValueKind.DATACLASS, "configs.base:Config", (), ()))))))
    found = plan(session([step_event(replay)]))
    text = render_plan(found, "run.json")
    docstring = ast.get_docstring(ast.parse(text)) or ""
    listed = docstring.partition("project root, ")[2].splitlines()[1:]
    assert [line.strip() for line in listed] == ["configs.base", "model", "modes", "nodes"]
    called = {node.args[0].value for node in ast.walk(ast.parse(text))
              if isinstance(node, ast.Call) and ast.unparse(node.func) in ("_jitted", "_ref")
              and isinstance(node.args[0], ast.Constant)}
    assert called == {"configs.base", "model", "modes", "nodes"}
    assert "no module of yours" in (ast.get_docstring(ast.parse(render_plan(
        plan(session([])), "run.json"))) or "")


def test_a_treedef_and_a_mapping_held_as_static_data_are_written_from_their_parts():
    """jax.example_libraries' OptimizerState keeps treedefs as its aux data, equinox.filter_jit
    passes one as a static argument, a flax.nnx GraphDef holds mappings: each is written from
    its parts, its leaves as ``0``, every name in it imported and listed."""
    treedef = Value(ValueKind.TREEDEF, nodes=(
        Node(NodeKind.TUPLE, 3), LEAF, Node(NodeKind.NONE),
        Node(NodeKind.CUSTOM, 1, type="nodes:Pair", aux=Value(ValueKind.MAPPING, "maps:Frozen", (
            Value(ValueKind.LITERAL, "'k'"), Value(ValueKind.REF, "modes:TRAIN")))), LEAF))
    replay = good_replay(arguments=(
        Argument("batch", tree=(Node(NodeKind.CUSTOM, 2, type="opt:State", aux=treedef),
                                LEAF, LEAF)),
        Argument("lr", tree=(LEAF,))))
    found, text = rendered(step_event(replay))
    assert found.planned and not found.unplayable
    assert ("_node(_ref('opt', 'State'), _treedef((0, None, _node(_ref('nodes', 'Pair'), "
            "_mapping(_ref('maps', 'Frozen'), {'k': _ref('modes', 'TRAIN')}), 0)))") \
        in ast.unparse(ast.parse(text))
    assert_inert(text)
    docstring = ast.get_docstring(ast.parse(text)) or ""
    listed = [line.strip() for line in docstring.partition("project root, ")[2].splitlines()]
    assert listed[1:] == ["maps", "model", "modes", "nodes", "opt"]


# The writer: what turns the tree into text. Terminal summaries: text for people, not code.
WRITER = {"render_plan", "_section", "_written", "_laid", "_items", "_fixed",
          "signature_source"}
NOT_CODE = {"summary_text", "summary_json", "_relative", "block_name"}


def test_the_writer_builds_nodes_and_formats_no_code():
    """Text is formatted (f-string, ``str.format``, ``%``) only into a comment (``_Note``), a
    constant (``ast.Constant``: the docstring) or an exception's message; every function but
    the writer's returns syntax tree nodes, and only the writer calls ``ast.unparse``."""
    module = ast.parse(inspect.getsource(warmup_plan))
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    assert functions.keys() >= WRITER | NOT_CODE
    allowed: set[int] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Raise) or (isinstance(node, ast.Call) and ast.unparse(
                node.func) in ("_Note", "ast.Constant")):
            allowed |= {id(inner) for inner in ast.walk(node)}
    for name, function in functions.items():
        for node in ast.walk(function):
            formatted = isinstance(node, ast.JoinedStr) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "format") or (
                isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
                and isinstance(node.left, ast.Constant | ast.JoinedStr))
            if formatted and name not in NOT_CODE:
                assert id(node) in allowed, f"{name}, line {node.lineno}: {ast.unparse(node)}"
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "ast.unparse":
                assert name in WRITER, f"{name} writes text of a tree"
        if name not in WRITER | NOT_CODE:
            returns = ast.unparse(function.returns or ast.Constant(None))
            assert "ast." in returns or "_Note" in returns, f"{name} returns {returns}"


def test_the_source_is_checked_against_its_tree(monkeypatch):
    """A layout that lost an item, or a comment that held a line break, would be code the tree
    does not hold: the plan is not written."""
    events = [step_event(good_replay(), 0)]
    items = warmup_plan._items
    monkeypatch.setattr(warmup_plan, "_items", lambda node: (
        (lambda head, found, tail: (head, found[:-1], tail))(*items(node))))
    with pytest.raises(AssertionError, match="differs from its syntax tree"):
        rendered(*events)
    monkeypatch.undo()
    monkeypatch.setattr(warmup_plan, "python_comment", lambda text: text + "\nimport os")
    with pytest.raises(AssertionError, match="differs from its syntax tree"):
        rendered(*events)


class Sneaky(str):
    """A string whose repr is code: ``ast.unparse`` writes a constant's repr."""

    def __repr__(self) -> str:
        return "__import__('os').system('id')"


def test_a_plan_made_by_hand_is_checked_as_its_tree_is_written():
    """What ``plan`` checks is checked again on the tree: a name that is not an identifier, a
    constant whose type is not a literal's, are not written."""
    found, _ = rendered(step_event(good_replay(), 0))
    (planned,) = found.planned
    keyword = Argument("x=__import__('os').system('id'), y", keyword=True,
                       static=Value(ValueKind.LITERAL, "1"))
    for bad, why in [(dataclasses.replace(planned, function=Sneaky("step")), "of type Sneaky"),
                     (dataclasses.replace(planned, label=Sneaky("x")), "of type Sneaky"),
                     (dataclasses.replace(planned, arguments=(*planned.arguments[:2], keyword)),
                      "is not a dotted name")]:
        with pytest.raises(Unwritable, match=why):
            render_plan(dataclasses.replace(found, planned=(bad,)), "run.json")


def test_the_after_warmup_gate_needs_a_warmup_and_names_each_miss():
    from recompile_cli.analysis.report import build_report
    from recompile_cli.gate.evaluate import Gated, Gates, Rule, evaluate
    from recompile_cli.session.warmup import Skipped, Warmup

    events = [step_event(good_replay(), 0, n=8), step_event(good_replay(), 1, n=4),
              step_event(good_replay(), 3, n=16)]
    gates = Gates(after_warmup=True)
    assert gates.any
    # no warm-up recorded: the gate cannot pass
    result = evaluate([Gated("prog", build_report(session(events)), gates)])
    (violation,) = result.every_violation
    assert violation.rule == Rule.AFTER_WARMUP and "recorded no warm-up plan" in violation.message
    # a warm-up that ended after the first two (8 and 4): 16 compiled after it
    warmup = Warmup("plan.py", 0.0, 1.5, compiled=2,
                    skipped=(Skipped("step", "x=f32[16,4]", "needs cpu devices [0, 1]"),))
    report = build_report(session(events, warmup=warmup))
    (violation,) = evaluate([Gated("prog", report, gates)]).every_violation
    assert violation.function == "step" and violation.call_site == "prog.py:10 (<module>)"
    assert violation.message.startswith("step: 1 compile after the warm-up (plan.py): the plan "
                                        "lacks step(batch['x']=f32[16,4], ")
    # against the closest planned signature: both differ as much, the most recent wins
    assert ("shape at batch['x']: f32[4,4] -> f32[16,4], batch['y']: f32[4,1] -> f32[16,1] "
            "against the closest planned signature") in violation.message
    assert "the plan skipped a signature of it here: needs cpu devices [0, 1]" in \
        violation.message
    # the plan raised: the run's failure, not a second violation
    failed = Warmup("plan.py", 0.0, 1.5, error="the warm-up plan plan.py raised KeyError")
    report = build_report(session(events[:2], warmup=failed))
    result = evaluate([Gated("prog", report, gates, failure=failed.error)])
    assert not result.every_violation and not result.held
