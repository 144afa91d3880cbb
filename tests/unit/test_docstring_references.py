"""The package's maps stay true: every module the docstrings, comments and docs name still exists.

Read with ``ast``, ``tokenize`` and the file system only (nothing of the package is imported).
The text read: every module, class and function docstring and every comment under
``recompile_cli/``, and ``README.md`` and ``docs/*.md`` (fenced code blocks left out).

What counts as a module reference: the whole text of a span in single or double backquotes, in
one of these forms, and nothing else (a name inside a longer span, or in plain text, is not):

- A dotted name (``a.b``, ``a.b.c()``; a trailing ``()`` is dropped) whose first component is
  ``recompile_cli`` or a top-level module or folder of the package (``analysis``, ``cli``,
  ``exits``, ...; not ``__main__``, which names the user's script). It is read from the package
  root: ``capture.running.runner`` is ``recompile_cli/capture/running/runner.py``.
- In a Python file only, a dotted name whose first component that file imports from the package
  at module level (``from recompile_cli.capture.hosts import process`` makes ``process.x`` mean
  ``capture.hosts.process.x``). A first component the file imports from elsewhere (``jax``,
  ``os``) is not a reference, nor one that is local where the text stands: a parameter or local
  name of an enclosing function, or a name of an enclosing class body (``options.count_calls``
  in a function taking ``options``).
- A path with a slash whose first segment is ``recompile_cli`` or a top-level folder of the
  package, naming a ``.py`` file or, ending in ``/``, a folder (``process/child.py``,
  ``render/sections/``), read from the package root.
- In the docstring or comments of a package's ``__init__.py`` only, a bare ``name.py`` or
  ``name/``: a module or folder of that package (``record.py`` in ``api/__init__.py``).

So ``jax.jit``, ``os._exit``, ``sys.stdout``, ``model.act`` and ``tests/unit/...`` are never
references (module names relative to a sibling, like ``escape.html`` in ``render/``, are not
checked unless the file imports that sibling as a module).

A reference resolves when its longest prefix of folders and modules exists (a package folder
with ``__init__.py``, or ``<path>.py``) and the rest, if any, starts with a name that module binds
at its top level (a function, class, assignment or import, also under ``if``/``try``). If that
name is a class and more follows, the next name must be bound in its body, assigned as
``self.<name>`` in one of its methods, or found in a base class of the same module (a base from
elsewhere may hold it, so that is not checked); if the name is imported from the package, the
rest is read in the module it comes from. Anything after that is not checked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "recompile_cli"
PACKAGE_NAME = PACKAGE.name

# A backquoted span: double backquotes first, so that ``x`` is not read as two empty `` pairs.
SPAN = re.compile(r"``([^`]+?)``|`([^`]+?)`")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"\w+(?:/\w+)*(?:\.py|/)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file()


def top_level_names() -> frozenset[str]:
    """The package's top-level modules and folders, by the names a reference starts with."""
    names = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    names |= {path.name for path in PACKAGE.iterdir() if path.is_dir() and _is_package(path)}
    return frozenset(names)


TOP = top_level_names()


@dataclass(frozen=True)
class Reference:
    file: str  # relative to the repository root
    line: int
    text: str  # as written
    target: tuple[str, ...]  # dotted, from the package root (without ``recompile_cli``)
    kind: str = "name"  # or "file" (``x/y.py``: a module) or "folder" (``x/y/``)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


# Reading the package's source

_trees: dict[Path, ast.Module] = {}


def _tree(path: Path) -> ast.Module:
    if path not in _trees:
        _trees[path] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return _trees[path]


def bindings(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body binds, with the statement that binds each (the last one),
    looking inside ``if``, ``try``, ``with``, ``for`` and ``while`` but not into functions."""
    found: dict[str, ast.AST] = {}
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[statement.name] = statement
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        found[node.id] = statement
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                found[alias.asname or alias.name.split(".")[0]] = statement
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                found[alias.asname or alias.name] = statement
        elif isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for part in ("body", "orelse", "finalbody"):
                found.update(bindings(getattr(statement, part, [])))
            for handler in getattr(statement, "handlers", []):
                found.update(bindings(handler.body))
    return found


def package_of(path: Path) -> tuple[str, ...]:
    """The package a source file is in, from the package root: ``()`` for the root itself."""
    parts = path.relative_to(PACKAGE).parts
    return tuple(parts[:-1])


def imported_from_package(statement: ast.AST, name: str, path: Path) -> tuple[str, ...] | None:
    """What ``name``, bound by an import ``statement`` of ``path``, stands for, from the package
    root; ``None`` when it comes from outside the package."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if (alias.asname or alias.name.split(".")[0]) == name:
                dotted = tuple(alias.name.split("."))
                if dotted[0] != PACKAGE_NAME:
                    return None
                return dotted[1:] if alias.asname else ()
        return None
    assert isinstance(statement, ast.ImportFrom)
    if statement.level:  # relative: from the file's own package, one level up per extra dot
        base = package_of(path)
        if statement.level > 1:
            base = base[: len(base) - (statement.level - 1)]
        source = base + tuple((statement.module or "").split(".") if statement.module else ())
    else:
        dotted = tuple((statement.module or "").split("."))
        if dotted[0] != PACKAGE_NAME:
            return None
        source = dotted[1:]
    for alias in statement.names:
        if (alias.asname or alias.name) == name:
            return (*source, alias.name)
    return None


def problem(target: tuple[str, ...], kind: str = "name", depth: int = 0) -> str | None:
    """Why ``target`` (dotted, from the package root) does not resolve; ``None`` when it does."""
    if kind == "file":
        found = PACKAGE.joinpath(*target).with_suffix(".py").is_file()
        return None if found else "no such module"
    if kind == "folder":
        return None if PACKAGE.joinpath(*target).is_dir() else "no such folder"
    folder, index = PACKAGE, 0
    while index < len(target) and _is_package(folder / target[index]):
        folder, index = folder / target[index], index + 1
    module = folder / "__init__.py"
    if index < len(target) and (folder / f"{target[index]}.py").is_file():
        module, index = folder / f"{target[index]}.py", index + 1
    rest = target[index:]
    if not rest:
        return None
    shown = module.relative_to(ROOT).as_posix()
    names = bindings(_tree(module).body)
    if rest[0] not in names:
        return f"no module {folder.relative_to(ROOT).as_posix()}/{rest[0]}.py, " \
            f"and {shown} defines no {rest[0]}"
    if len(rest) == 1 or depth > 10:
        return None
    statement = names[rest[0]]
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        source = imported_from_package(statement, rest[0], module)
        return None if source is None else problem((*source, *rest[1:]), depth=depth + 1)
    if isinstance(statement, ast.ClassDef) and not class_has(statement, rest[1], module):
        return f"class {rest[0]} in {shown} has no {rest[1]}"
    return None


def class_has(klass: ast.ClassDef, name: str, module: Path) -> bool:
    """Whether ``klass`` binds ``name``, assigns ``self.name``, or may inherit it (from a base
    class that is not one of its module's own, which is not read)."""
    if name in bindings(klass.body):
        return True
    for node in ast.walk(klass):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self" \
                and node.attr == name:
            return True
    local = {statement.name: statement for statement in _tree(module).body
             if isinstance(statement, ast.ClassDef)}
    for base in klass.bases:
        if not isinstance(base, ast.Name) or base.id not in local:
            return True  # a base from elsewhere (``Enum``, ``msgspec.Struct``) may hold it
        if local[base.id] is not klass and class_has(local[base.id], name, module):
            return True
    return False


# Finding references


def spans(text: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of every backquoted span of ``text``."""
    for match in SPAN.finditer(text):
        yield match.start(), match.group(1) if match.group(1) is not None else match.group(2)


def reference(text: str, file: str, line: int, *,
              imports: dict[str, tuple[str, ...] | None] | None = None,
              local: frozenset[str] = frozenset(), package: tuple[str, ...] | None = None
              ) -> Reference | None:
    """The module reference ``text`` (a span's whole text) is by the rules above, or ``None``.

    ``imports``: what each name the file imports at module level stands for, from the package
    root (``None``: from outside the package); ``None`` for a Markdown file. ``local``: the names
    local where the text stands. ``package``: for an ``__init__.py``, its package (where bare
    file names are read)."""
    name = text.removesuffix("()")
    if DOTTED.fullmatch(name) and not name.endswith(".py"):
        parts = tuple(name.split("."))
        first = parts[0]
        if imports is not None and first in local:
            return None
        if imports is not None and first in imports:
            source = imports[first]
            return None if source is None else Reference(file, line, text, (*source, *parts[1:]))
        if first == PACKAGE_NAME:
            return Reference(file, line, text, parts[1:])
        if first in TOP:
            return Reference(file, line, text, parts)
        return None
    if PATH.fullmatch(text):
        kind = "file" if text.endswith(".py") else "folder"
        segments = tuple(text.removesuffix("/").removesuffix(".py").split("/"))
        if len(segments) > 1 or text.startswith(f"{PACKAGE_NAME}/"):
            if segments[0] == PACKAGE_NAME:
                return Reference(file, line, text, segments[1:], kind)
            if segments[0] in TOP:
                return Reference(file, line, text, segments, kind)
            return None
        if package is not None:
            return Reference(file, line, text, (*package, *segments), kind)
    return None


def _scopes(tree: ast.Module) -> list[tuple[int, int, frozenset[str]]]:
    """(first line, last line, local names) of every function and class of ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            names = {arg.arg for arg in (*arguments.posonlyargs, *arguments.args,
                                         *arguments.kwonlyargs)}
            names |= {arg.arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None}
            names |= {target.id for target in ast.walk(node)
                      if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)}
        elif isinstance(node, ast.ClassDef):
            names = set(bindings(node.body))
        else:
            continue
        found.append((node.lineno, node.end_lineno or node.lineno, frozenset(names)))
    return found


def _docstrings(tree: ast.Module, source: str) -> Iterator[tuple[int, str]]:
    """(first line, source text) of every module, class and function docstring of ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            constant = node.body[0].value
            yield constant.lineno, ast.get_source_segment(source, constant) or ""


def _comments(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def python_references(source: str, file: str) -> Iterator[Reference]:
    """The module references in the docstrings and comments of one Python file (``file``: its
    path from the repository root, under ``recompile_cli/``)."""
    path = ROOT / file
    tree = ast.parse(source, file)
    imports = {name: imported_from_package(statement, name, path)
               for name, statement in bindings(tree.body).items()
               if isinstance(statement, (ast.Import, ast.ImportFrom))}
    package = package_of(path) if path.name == "__init__.py" else None
    scopes = _scopes(tree)
    texts = [*_docstrings(tree, source), *_comments(source)]
    for first_line, text in texts:
        for offset, span in spans(text):
            line = first_line + text.count("\n", 0, offset)
            local = frozenset().union(*(names for start, end, names in scopes
                                        if start <= line <= end))
            found = reference(span, file, line, imports=imports, local=local, package=package)
            if found is not None:
                yield found


def markdown_references(text: str, file: str) -> Iterator[Reference]:
    """The module references in one Markdown file, outside its fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    prose = "\n".join(lines)
    for offset, span in spans(prose):
        found = reference(span, file, 1 + prose.count("\n", 0, offset))
        if found is not None:
            yield found


def stale(references: list[Reference]) -> list[str]:
    """``file:line: reference (why)`` for each reference that does not resolve."""
    return [f"{found} ({why})" for found in sorted(references, key=lambda r: (r.file, r.line))
            if (why := problem(found.target, found.kind)) is not None]


def package_references() -> list[Reference]:
    found: list[Reference] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        file = path.relative_to(ROOT).as_posix()
        found.extend(python_references(path.read_text(encoding="utf-8"), file))
    return found


def docs_references() -> list[Reference]:
    found: list[Reference] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found.extend(markdown_references(path.read_text(encoding="utf-8"),
                                         path.relative_to(ROOT).as_posix()))
    return found


# The tests


def test_every_module_the_package_source_names_exists() -> None:
    references = package_references()
    assert len(references) > 150, "the scan found too few references: is it still reading?"
    problems = stale(references)
    assert not problems, "stale module references in docstrings and comments (fix the text to " \
        "name the module, or attribute, that now holds the thing):\n" + "\n".join(problems)


def test_every_module_the_docs_name_exists() -> None:
    references = docs_references()
    assert len(references) > 10, "the scan found too few references: is it still reading?"
    problems = stale(references)
    assert not problems, "stale module references in the docs:\n" + "\n".join(problems)


def test_stale_references_are_found_and_ordinary_code_is_not_a_reference() -> None:
    source = '''"""Reads ``analysis.report`` and ``analysis.no_such_module``, with ``jax.jit``,
``os._exit``, ``sys.stdout`` and ``model.act``; ``exits.ExitCode`` and ``gate.limits.Gates.budgets``
are there, ``exits.NoSuchCode`` and ``gate.limits.Gates.no_such`` are not; so are
`process/child.py`, `render/sections/` and `recompile_cli/options.py` but not
`process/no_such.py`; ``recompile_cli.record()`` is, ``recompile_cli.no_such()`` is not.
"""

from recompile_cli.render import escape
import jax


def f(options):
    """``options.count_calls`` is a parameter, ``escape.terminal`` and ``escape.nothing``
    what the module imported, ``jax.no_such`` is JAX's."""
    # and so is a comment: ``cli.child``
'''
    references = list(python_references(source, "recompile_cli/analysis/example.py"))
    found = [str(reference) for reference in references]
    assert found == [
        "recompile_cli/analysis/example.py:1: analysis.report",
        "recompile_cli/analysis/example.py:1: analysis.no_such_module",
        "recompile_cli/analysis/example.py:2: exits.ExitCode",
        "recompile_cli/analysis/example.py:2: gate.limits.Gates.budgets",
        "recompile_cli/analysis/example.py:3: exits.NoSuchCode",
        "recompile_cli/analysis/example.py:3: gate.limits.Gates.no_such",
        "recompile_cli/analysis/example.py:4: process/child.py",
        "recompile_cli/analysis/example.py:4: render/sections/",
        "recompile_cli/analysis/example.py:4: recompile_cli/options.py",
        "recompile_cli/analysis/example.py:5: process/no_such.py",
        "recompile_cli/analysis/example.py:5: recompile_cli.record()",
        "recompile_cli/analysis/example.py:5: recompile_cli.no_such()",
        "recompile_cli/analysis/example.py:13: escape.terminal",
        "recompile_cli/analysis/example.py:13: escape.nothing",
        "recompile_cli/analysis/example.py:15: cli.child",
    ]
    assert [problem.split(" (")[0] for problem in stale(references)] == [
        "recompile_cli/analysis/example.py:1: analysis.no_such_module",
        "recompile_cli/analysis/example.py:3: exits.NoSuchCode",
        "recompile_cli/analysis/example.py:3: gate.limits.Gates.no_such",
        "recompile_cli/analysis/example.py:5: process/no_such.py",
        "recompile_cli/analysis/example.py:5: recompile_cli.no_such()",
        "recompile_cli/analysis/example.py:13: escape.nothing",
        "recompile_cli/analysis/example.py:15: cli.child",
    ]


def test_bare_file_names_are_read_in_a_package_docstring_only() -> None:
    source = '"""``recording.py``, ``record.py`` and ``notebook/``; ``stages.py``."""\n'
    in_package = stale(list(python_references(source, "recompile_cli/api/__init__.py")))
    assert [problem.split(" (")[0] for problem in in_package] == [
        "recompile_cli/api/__init__.py:1: record.py",
        "recompile_cli/api/__init__.py:1: notebook/",
        "recompile_cli/api/__init__.py:1: stages.py",
    ]
    assert list(python_references(source, "recompile_cli/api/report.py")) == []


def test_markdown_references_skip_code_blocks() -> None:
    text = ("The child (`process/child.py`, `cli/child.py`) and `jax.jit`;\n"
            "```python\nimport recompile_cli\n`analysis.nothing`\n```\n"
            "then `recompile_cli.analysis.report.build_report` and `analysis.padding`.\n")
    problems = stale(list(markdown_references(text, "docs/example.md")))
    assert [problem.split(" (")[0] for problem in problems] == [
        "docs/example.md:1: cli/child.py",
        "docs/example.md:6: analysis.padding",
    ]


def test_every_page_a_message_points_to_exists() -> None:
    """A message that sends the user to a page (``docs/spec.md``, the README's section) names
    one that exists: two pointed to README sections that had moved to docs/ (issue 43)."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    missing = []
    for path in sorted((root / "recompile_cli").rglob("*.py")):
        text = path.read_text()
        missing += [f"{path.name}: {page}" for page in re.findall(r"docs/[\w-]+\.md", text)
                    if not (root / page).is_file()]
        missing += [f"{path.name}: README section {name!r}"
                    for name in re.findall(r"README's '([^']+)' section", text)
                    if f"## {name}\n" not in readme]
    assert not missing
