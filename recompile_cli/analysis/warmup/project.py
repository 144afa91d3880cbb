"""Which files a warm-up plan may load by path: only files inside the project root of the
recorded program, each named in the plan's docstring (``render.warmup_plan``).

A session says where the modules a plan refers to live (``Replay.files``: module -> file), and
a saved session may have been edited. The project root (``project_root``) is the project of
the recorded program: from the program's file, the nearest folder upwards that holds
``.git`` (its repository), else the nearest that holds another of ``MARKERS``, else the file's
own folder. The program's file is the file the replays give
``__main__`` (the run's script: one file, the one the target names, or the session is
refused), else the file the session's target names (``file.py:function``, ``file.py:line``,
``script.py args``), found among the files the session records. A session that names neither
(``pkg.mod:function``) has the project of the current folder (where ``warmup`` runs).

``checked_files`` refuses (``OutsideRoot``, exit 2: no plan is written) a file that is not an
absolute path, has a ``..`` part, or lies outside the root as written or with its links
resolved. Reads the file system (markers, links), nothing else.
"""

from __future__ import annotations

import os
import re

from recompile_cli.analysis.shorten import shown
from recompile_cli.analysis.warmup.plan import Plan, reference
from recompile_cli.errors import SessionFileError
from recompile_cli.session.locations import parse
from recompile_cli.session.warmup import references

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_TARGET_FILE = re.compile(r"(?P<path>\S+?\.py)(?=[:\s]|$)")  # a path with spaces: none


class OutsideRoot(SessionFileError):
    """A session whose plan would load a file outside the recorded project root."""


def checked_files(plan: Plan) -> tuple[str, dict[str, str]]:
    """(the project root, module -> file of every file the plan may load, sorted by module);
    ``OutsideRoot`` naming the module and file when one is not a file inside the root. A
    module given two files keeps the first planned one's (both are checked)."""
    root = project_root(plan)
    files: dict[str, str] = {}
    for planned in plan.planned + plan.at_first_call:
        for module, path in planned.files.items():
            _check(module, path, root)
            files.setdefault(module, path)
    return root, dict(sorted(files.items()))


def imported_modules(plan: Plan) -> list[str]:
    """Every module a plan's code names, sorted: each planned jitted object's, each one a
    static value, a dict key, a pytree node's type or its data refers to, each one given a
    file. (``plan`` checked each name: ``dotted``, ``reference``.)"""
    names: set[str] = set()
    for planned in plan.planned + plan.at_first_call:
        names |= {*([planned.module] if planned.module else []), *planned.files}
        names |= {reference(text)[0] for text in references(planned.arguments)}
    return sorted(names)


def project_root(plan: Plan) -> str:
    """The folder the files of ``plan`` must be inside: the recorded program's repository (the
    nearest folder upwards from its file holding ``.git``), else its project (the nearest
    holding another of ``MARKERS``), else its file's folder."""
    program = _program_file(plan)
    start = os.path.dirname(program) if program is not None else os.getcwd()
    for markers in (MARKERS[-1:], MARKERS[:-1]):
        folder = start
        while True:
            if any(os.path.exists(os.path.join(folder, marker)) for marker in markers):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return start


def _program_file(plan: Plan) -> str | None:
    """The recorded program's file: ``__main__``'s (which must be the script the target
    names, for a script's run), else the file the target names, found among the recorded
    files."""
    mains = {path for planned in plan.planned + plan.at_first_call
             for module, path in planned.files.items() if module == "__main__"}
    if len(mains) > 1:
        raise OutsideRoot(f"the session gives __main__ {len(mains)} files ("
                          f"{', '.join(sorted(_shown(path) for path in mains))}): a run has "
                          "one script. Refusing to write a plan from it.")
    found = _TARGET_FILE.match(plan.target)
    named = found["path"] if found is not None else None
    for path in mains:
        _check("__main__", path, None)
        script = found is not None and not plan.target[found.end():].startswith(":")
        if script and named is not None and not _names(path, named):
            raise OutsideRoot(f"the session gives __main__ the file {_shown(path)}, but the "
                              f"script it records running is {_shown(named)}. Refusing to "
                              "write a plan from it.")
        return os.path.normpath(path)
    if named is None:
        return None
    candidates = [named] if os.path.isabs(named) else _recorded_paths(plan)
    for path in candidates:
        if os.path.isabs(path) and _names(path, named):
            return os.path.normpath(path)
    return None


def _names(path: str, named: str) -> bool:
    """Whether the absolute ``path`` is the file ``named``: absolute, or relative to the
    folder the run was recorded in (with a ``..``: the same file name)."""
    path, named = os.path.normpath(path), os.path.normpath(named)
    if os.path.isabs(named):
        return path == named or os.path.realpath(path) == os.path.realpath(named)
    if named.split(os.sep)[0] == os.pardir:
        return os.path.basename(path) == os.path.basename(named)
    return path.endswith(os.sep + named)


def _recorded_paths(plan: Plan) -> list[str]:
    """The absolute files the plan's part of the session names, in the order planned."""
    out: list[str] = []
    for planned in plan.planned + plan.at_first_call:
        out += planned.files.values()
        for location in (planned.call_site, planned.key.partition("@")[2]):
            found = parse(location)
            if found is not None:
                out.append(found.path)
    return out


def _check(module: str, path: object, root: str | None) -> None:
    """``OutsideRoot`` unless ``path`` is an absolute path without ``..`` parts, inside
    ``root`` (when given) as written and with its links resolved."""
    def refuse(why: str) -> OutsideRoot:
        return OutsideRoot(f"the session names the file {_shown(path)} for module "
                           f"{shown(module, 80)!r}, {why}: a warm-up plan runs only files "
                           "inside the project root (the recorded program's repository, the "
                           "nearest folder above it with .git, else with pyproject.toml, "
                           "setup.py or setup.cfg, else its folder). Refusing to write a plan "
                           "from it.")

    if not isinstance(path, str) or not path or "\x00" in path:
        raise refuse("which is not a file's path")
    if not os.path.isabs(path):
        raise refuse("which is not an absolute path (a recorded file's path always is)")
    if os.pardir in path.replace("\\", "/").split("/"):
        raise refuse("a path with '..' in it")
    if root is None:
        return
    where = f"outside the project root {_shown(root)}"
    if not _inside(os.path.normpath(path), os.path.normpath(root)):
        raise refuse(where)
    if not _inside(os.path.realpath(path), os.path.realpath(root)):
        raise refuse(f"{where} once its links are resolved ({_shown(os.path.realpath(path))})")


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive (Windows)
        return False


def _shown(path: object) -> str:
    """A path in a message: quoted, cut, its control characters escaped."""
    return repr(shown(str(path), 200))
