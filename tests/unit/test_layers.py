"""The package's floor plan, read from its source with ``ast`` (nothing of it is imported).

Every import counts: module-level, function-local and type-only ones. Data flows one way,
inputs -> capture -> session -> analysis -> render and gate, and no two modules import each
other, directly or around a circle. Only ``capture/jax/`` imports JAX's private modules
(``jax._src``), no folder holds more than 15 modules, and the front doors (``api/``, ``guards/``, ``cli/``) stand side by side: none
reaches into another's modules but for the guard's public errors.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "recompile_cli"

# What each layer may import besides itself. The front doors (``api``, ``cli``, ``guards``, the
# package itself) may import any layer.
LEAVES = {"exits", "errors", "fileio", "ranges"}
ALLOWED = {
    "exits": set(),
    "ranges": set(),
    "errors": {"exits"},
    "fileio": {"exits", "errors"},
    "inputs": LEAVES,
    "session": LEAVES,
    "capture": LEAVES | {"inputs", "session"},
    "analysis": LEAVES | {"session"},
    "gate": LEAVES | {"inputs", "session", "analysis"},
    "render": LEAVES | {"session", "analysis", "gate"},
    # The measured process and how it is started: below the front doors, which all use it.
    "process": LEAVES | {"inputs", "session", "capture", "analysis", "gate", "render"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(module: str) -> Iterator[str]:
    """The modules of the package that ``module`` imports (a name imported from a package is
    its submodule when there is one, else the package)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                yield name


GRAPH = {module: set(imported(module)) for module in MODULES}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_sees_the_package():
    assert "recompile_cli.session.model" in GRAPH["recompile_cli.analysis.report"]
    assert "recompile_cli.capture.recorder" in GRAPH["recompile_cli.api.recording"]  # a local import


def test_layers_import_only_what_lies_before_them():
    wrong = sorted(f"{module} -> {target}" for module, targets in GRAPH.items()
                   for target in targets if layer(module) in ALLOWED
                   and layer(target) != layer(module)
                   and layer(target) not in ALLOWED[layer(module)])
    assert wrong == []


def test_the_measured_process_imports_no_front_door():
    """``process`` is started by the CLI, the API and the tests alike: it imports none of them
    (above all not ``cli``, the only code that prints)."""
    wrong = sorted(f"{module} -> {target}" for module, targets in GRAPH.items()
                   for target in targets if layer(module) == "process"
                   and layer(target) in {"cli", "api", "guards", ""})
    assert wrong == []
    assert "recompile_cli.process.supervisor" in GRAPH["recompile_cli.cli.finish"]


def test_no_layer_after_capture_imports_capture():
    wrong = sorted(f"{module} -> {target}" for module, targets in GRAPH.items()
                   for target in targets
                   if layer(module) in {"analysis", "gate", "render", "session", "inputs"}
                   and layer(target) == "capture")
    assert wrong == []


def private_jax_imports(module: str) -> list[str]:
    """The ``jax._src`` modules that ``module`` imports: ``import``, ``from ... import`` and
    ``importlib.import_module("jax._src...")`` with a literal name."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__")):
            found.append(node.args[0].value)
    return sorted({name for name in found if name == "jax._src" or name.startswith("jax._src.")})


def test_only_capture_jax_imports_jax_private_modules():
    wrong = sorted(f"{module} -> {name}" for module in MODULES
                   if not module.startswith("recompile_cli.capture.jax.")
                   for name in private_jax_imports(module))
    assert wrong == []


def test_the_private_import_finder_sees_the_internals_layer():
    assert private_jax_imports("recompile_cli.capture.jax.hooks")


FRONT_DOORS = {"api", "guards", "cli"}
SHARED_FRONT_DOOR_MODULES = {"recompile_cli.guards.errors"}  # public warnings and exceptions


def test_front_doors_do_not_reach_into_each_other():
    wrong = sorted(f"{module} -> {target}" for module, targets in GRAPH.items()
                   for target in targets if layer(module) in FRONT_DOORS
                   and layer(target) in FRONT_DOORS - {layer(module)}
                   and target not in SHARED_FRONT_DOOR_MODULES)
    assert wrong == []


def test_the_top_level_holds_at_most_eight_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


MAX_FOLDER = 15  # modules of one folder (its __init__ aside); past that, sub-folders by concept


def test_no_folder_holds_more_than_fifteen_modules():
    crowded = sorted((folder.relative_to(PACKAGE.parent).as_posix(), count)
                     for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]
                     if (count := len([m for m in folder.glob("*.py")
                                       if m.name != "__init__.py"])) > MAX_FOLDER)
    assert crowded == []


def test_every_folder_of_modules_is_a_package_that_says_what_it_owns():
    for folder in {path.parent for path in PACKAGE.rglob("*.py")}:
        init = folder / "__init__.py"
        assert init.exists(), folder
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), init


def test_no_import_cycles():
    assert cycles(GRAPH) == []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, with an
    explicit stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
