"""The budget file: which targets ``recompile-cli check`` runs and the limits per function.

Read from ``recompile-budget.yaml`` or ``[tool.recompile-cli]`` in ``pyproject.toml``, validated
completely; paths in it are relative to the file's folder. Errors name file, line and field
(TOML errors name the field only). Booleans must be booleans; limits must be finite,
non-negative and in ``ranges``' range (a count at most 10**12, seconds at most 1e8, a
tolerance at most 1e4), so that no limit is one that can never fail. The YAML reader refuses
non-UTF-8 text, duplicate keys, deep nesting and alias bombs (see ``inputs.yaml_doc``).
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recompile_cli import ranges
from recompile_cli.analysis.shorten import distinct
from recompile_cli.errors import BudgetError
from recompile_cli.gate.limits import BUDGET_KEYS, Budget, budget_values
from recompile_cli.inputs.fields import Invalid, Where, only_keys
from recompile_cli.inputs.jit_options import parse_jit_options

DEFAULT_FILE = "recompile-budget.yaml"
_TARGET_KEYS = ("target", "args", "script", "script_args", "steady_state_after", "budgets",
                "static_argnames", "static_argnums", "no_jit", "after_warmup")


@dataclass(frozen=True, slots=True)
class TargetBudget:
    """One thing to run (a function with its spec, or a script) and its budgets."""

    label: str
    target: str | None = None  # "path/file.py:function" or "module:function"
    args: str | None = None  # spec file path
    script: str | None = None
    script_args: tuple[str, ...] = ()
    steady_state_after: int | None = None
    budgets: tuple[Budget, ...] = ()
    jit_options: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    no_jit: bool = False
    after_warmup: str | None = None  # a warm-up plan run first; no compile after it


@dataclass(frozen=True, slots=True)
class BudgetFile:
    path: str
    folder: str
    targets: tuple[TargetBudget, ...]


def find_budget_file(explicit: str | Path | None, cwd: Path | None = None) -> Path:
    """The given file, else ``recompile-budget.yaml``, else ``pyproject.toml`` in ``cwd``."""
    if explicit is not None:
        return Path(explicit)
    folder = cwd or Path(".")
    for name in (DEFAULT_FILE, "pyproject.toml"):
        if (folder / name).is_file():
            return folder / name
    raise BudgetError(f"No budget file: there is no {DEFAULT_FILE} or pyproject.toml in "
                      f"{folder.resolve()}. "
                      "Pass one (recompile-cli check path/to/recompile-budget.yaml); docs/ci.md "
                      "has an example.")


def load_budget_file(path: str | Path) -> BudgetFile:
    """The budget file at ``path`` (YAML, or TOML's ``[tool.recompile-cli]``), validated;
    ``BudgetError`` naming the line and field of the first problem."""
    from recompile_cli.inputs.yaml_doc import load_yaml, read_text  # PyYAML: only here

    path = Path(path)
    text = read_text(path, BudgetError, "budget file")
    lines: str | None = text  # for line numbers in messages: YAML only
    if path.suffix == ".toml":
        try:
            tool = tomllib.loads(text).get("tool", {})
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise BudgetError(f"{path}: not valid TOML ({exc}). Fix the syntax and run "
                              "again.") from None
        data = tool.get("recompile-cli") if isinstance(tool, dict) else None
        if data is None:
            raise BudgetError(f"{path} has no [tool.recompile-cli] table. Add one with a "
                              "'targets' list, or pass a recompile-budget.yaml.")
        lines = None
    else:
        data = load_yaml(path, text, BudgetError)
    try:
        return BudgetFile(str(path), str(path.resolve().parent), _parse(data))
    except Invalid as bad:
        raise BudgetError(bad.located(path, lines)) from None


def _parse(data: Any) -> tuple[TargetBudget, ...]:
    if not isinstance(data, dict):
        raise Invalid((), "the budget file must be a mapping with a 'targets' list")
    only_keys(data, ("targets",), ())
    targets = data.get("targets")
    if not isinstance(targets, list) or not targets:
        raise Invalid(("targets",), "must be a non-empty list of targets")
    return _distinct([_target(raw, ("targets", i)) for i, raw in enumerate(targets)])


def _distinct(targets: list[TargetBudget]) -> tuple[TargetBudget, ...]:
    """The targets with labels that tell them apart (the summary has a row, JUnit a test case,
    per target and function): a target named twice is labelled with its spec too
    (``prog.py:step --args one.yaml``), then with its place in the file."""
    labels = distinct([t.label for t in targets], [
        lambda i: f" --args {targets[i].args}" if targets[i].args else "",
        lambda i: f" (targets[{i}])"])
    return tuple(dataclasses.replace(t, label=label) if label != t.label else t
                 for t, label in zip(targets, labels, strict=True))


def _target(raw: Any, where: Where) -> TargetBudget:
    if not isinstance(raw, dict):
        raise Invalid(where, "each target is a mapping with 'target' (and 'args') or 'script'")
    only_keys(raw, _TARGET_KEYS, where)
    if ("target" in raw) == ("script" in raw):
        raise Invalid(where, "give exactly one of 'target' (module:function) or 'script'")
    for key in ("target", "args", "script", "after_warmup"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key]):
            raise Invalid((*where, key), f"must be a non-empty string, got {raw[key]!r}")
    if "target" in raw and ":" not in raw["target"]:
        raise Invalid((*where, "target"), "must be 'path/file.py:function' or "
                                           "'module:function'")
    script_args = raw.get("script_args", [])
    if not isinstance(script_args, list):
        raise Invalid((*where, "script_args"), "must be a list of strings")
    for i, arg in enumerate(script_args):
        if not isinstance(arg, (str, int, float)) or isinstance(arg, bool):
            raise Invalid((*where, "script_args", i), "must be a string (quote it), got "
                                                      f"{arg!r}")
    steady = raw.get("steady_state_after")
    if steady is not None and (problem := ranges.count_problem(steady)):
        raise Invalid((*where, "steady_state_after"), problem)
    no_jit = raw.get("no_jit", False)
    if not isinstance(no_jit, bool):
        raise Invalid((*where, "no_jit"), f"must be true or false, got {no_jit!r}")
    budgets = raw.get("budgets", {})
    if not isinstance(budgets, dict) or (not budgets and steady is None
                                         and "after_warmup" not in raw):
        raise Invalid((*where, "budgets"), "must map function names or globs to limits, e.g. "
                                            "{train_step: {max_compiles: 2}}")
    for pattern in budgets:
        if not isinstance(pattern, str) or not pattern:
            raise Invalid((*where, "budgets", pattern), "a function name or glob must be a "
                                                        f"non-empty string, got {pattern!r}")
    jit_keys = ("static_argnames", "static_argnums")
    jit_options = parse_jit_options({k: raw[k] for k in jit_keys if k in raw}, where, jit_keys)
    label = raw.get("target") or " ".join([raw["script"], *map(str, script_args)])
    return TargetBudget(
        label=label, target=raw.get("target"), args=raw.get("args"), script=raw.get("script"),
        script_args=tuple(str(a) for a in script_args), steady_state_after=steady,
        budgets=tuple(_budget(str(k), v, (*where, "budgets", k)) for k, v in budgets.items()),
        jit_options=tuple(jit_options.items()), no_jit=no_jit,
        after_warmup=raw.get("after_warmup"))


def _budget(pattern: str, raw: Any, where: Where) -> Budget:
    if not isinstance(raw, dict) or not raw:
        raise Invalid(where, "must be a mapping of limits: " + ", ".join(BUDGET_KEYS))
    only_keys(raw, BUDGET_KEYS, where)
    return Budget(pattern, **budget_values(raw, where))
