"""Baseline files: per-function trace and compile counts saved from one run, read back to gate
a later one. Storage only: the totals and their ``file.py:name`` keys are
``analysis.compare``'s, and the comparison is part of the gate evaluator (``evaluate``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from recompile_cli.analysis.compare import FunctionTotals, function_totals
from recompile_cli.analysis.report import Report
from recompile_cli.errors import BudgetError
from recompile_cli.fileio import atomic_write_text
from recompile_cli.session.model import SCHEMA_VERSION

BASELINE_KIND = "recompile-cli-baseline"
_ENVIRONMENT_FIELDS = ("jax_version", "backend", "python_version")


@dataclass(frozen=True, slots=True)
class Baseline:
    """A loaded baseline file: where it came from, what made it, and the counts."""

    path: str
    environment: dict[str, str | None]
    functions: dict[str, FunctionTotals]


def environment_of(reports: list[Report]) -> dict[str, str | None]:
    env = asdict(reports[0].session.environment) if reports else {}
    return {name: env.get(name) for name in _ENVIRONMENT_FIELDS}


def baseline_text(reports: Iterable[Report]) -> str:
    reports = list(reports)
    functions = {key: {"traces": t.traces, "compiles": t.compiles}
                 for key, t in sorted(function_totals(reports).items())}
    data = {"kind": BASELINE_KIND, "schema_version": SCHEMA_VERSION,
            "environment": environment_of(reports), "functions": functions}
    return json.dumps(data, indent=2) + "\n"


def save_baseline(reports: Iterable[Report], path: str | Path) -> None:
    """Write the baseline atomically (a failed write leaves the previous file intact)."""
    atomic_write_text(Path(path), baseline_text(reports))


def load_baseline(path: str | Path) -> Baseline:
    """Read and validate a baseline file; ``BudgetError`` (exit 2) when it is not one."""
    hint = " Create it with --save-baseline."
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise BudgetError(f"Cannot read the baseline {path}: {reason}.{hint}") from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise BudgetError(f"{path} is not a recompile-cli baseline.{hint}")
    environment = data.get("environment", {})
    if not isinstance(environment, dict):
        raise BudgetError(f"{path}, field environment: must be a mapping.{hint}")
    functions = data.get("functions", {})
    if not isinstance(functions, dict):
        raise BudgetError(f"{path}, field functions: must map 'file.py:function' to counts."
                          f"{hint}")
    out: dict[str, FunctionTotals] = {}
    for key, counts in functions.items():
        if not isinstance(counts, dict):
            raise BudgetError(f"{path}, field functions.{key}: must be a mapping with traces "
                              f"and compiles.{hint}")
        values = [counts.get(name, 0) for name in ("traces", "compiles")]
        if not all(_count(v) for v in values):
            raise BudgetError(f"{path}, field functions.{key}: traces and compiles must be "
                              f"non-negative integers, got {values}.{hint}")
        out[str(key)] = FunctionTotals(*values)
    env = {str(k): (None if v is None else str(v)) for k, v in environment.items()}
    return Baseline(str(path), env, out)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
