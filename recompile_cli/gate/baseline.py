"""Baseline files: per-function trace and compile counts saved from one run, read back to gate
a later one. Storage only: the totals and their ``file.py:name`` keys are
``analysis.compare``'s, and the comparison is part of the gate evaluator (``evaluate``). The file
is a msgspec document (``BaselineDocument``): reading checks every field's type and range
(``ranges``: a count at most 10**12, seconds finite and at most 1e8), as for sessions, and every
field must be there: a baseline that lacks one is refused (exit 2, the field named), never read
as zeros that would let any run pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from recompile_cli.analysis.compare import FunctionTotals, function_totals
from recompile_cli.analysis.report import Report
from recompile_cli.errors import BudgetError
from recompile_cli.fileio import atomic_write_text
from recompile_cli.ranges import Count, Seconds
from recompile_cli.session import codec
from recompile_cli.session.model import SCHEMA_VERSION

BASELINE_KIND = "recompile-cli-baseline"
_ENVIRONMENT_FIELDS = ("jax_version", "backend", "python_version")


class _Counts(msgspec.Struct):
    """One function's counts: every field required (``equations`` may be null)."""

    traces: Count
    compiles: Count
    compile_seconds: Seconds
    # of the largest compiled program; null: not recorded (it needs the private hooks)
    equations: Count | None


class BaselineDocument(msgspec.Struct, kw_only=True):
    """A baseline file as written and read: every field required."""

    kind: str
    schema_version: int
    environment: dict[str, str | None]
    functions: dict[str, _Counts]


@dataclass(frozen=True, slots=True)
class Baseline:
    """A loaded baseline file: where it came from, what made it, and the counts."""

    path: str
    environment: dict[str, str | None]
    functions: dict[str, FunctionTotals]


def environment_of(reports: list[Report]) -> dict[str, str | None]:
    env = msgspec.structs.asdict(reports[0].session.environment) if reports else {}
    return {name: env.get(name) for name in _ENVIRONMENT_FIELDS}


def baseline_text(reports: Iterable[Report]) -> str:
    reports = list(reports)
    functions = {key: _Counts(t.traces, t.compiles, round(t.compile_seconds, 6), t.equations)
                 for key, t in sorted(function_totals(reports).items())}
    return codec.indented(BaselineDocument(kind=BASELINE_KIND, schema_version=SCHEMA_VERSION,
                                           environment=environment_of(reports),
                                           functions=functions))


def save_baseline(reports: Iterable[Report], path: str | Path) -> None:
    """Write the baseline atomically (a failed write leaves the previous file intact)."""
    atomic_write_text(Path(path), baseline_text(reports))


def load_baseline(path: str | Path) -> Baseline:
    """Read and validate a baseline file; ``BudgetError`` (exit 2) when it is not one."""
    hint = "Create it with --save-baseline"
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BudgetError(f"Cannot read the baseline {path}: {exc.strerror or exc}. "
                          f"{hint}.") from None
    try:
        document = msgspec.json.decode(data, type=BaselineDocument)
    except msgspec.ValidationError as exc:  # (a DecodeError too: caught first)
        if _kind(data) != BASELINE_KIND:
            raise BudgetError(f"{path} is not a recompile-cli baseline. {hint}.") from None
        raise BudgetError(codec.field_error(exc, str(path), hint)) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise BudgetError(f"Cannot read the baseline {path}: not JSON "
                          f"({codec.reason(exc, data)}). {hint}.") from None
    if document.kind != BASELINE_KIND:
        raise BudgetError(f"{path} is not a recompile-cli baseline. {hint}.")
    if document.schema_version != SCHEMA_VERSION:
        raise BudgetError(f"{path}, field schema_version: {document.schema_version!r}; this "
                          f"recompile-cli reads baselines of version {SCHEMA_VERSION}. {hint} "
                          "again.")
    functions = {key: FunctionTotals(c.traces, c.compiles, c.compile_seconds, c.equations)
                 for key, c in document.functions.items()}
    return Baseline(str(path), document.environment, functions)


class _Kind(msgspec.Struct):
    kind: object = None


def _kind(data: bytes) -> object:
    try:
        return msgspec.json.decode(data, type=_Kind).kind
    except (msgspec.DecodeError, RecursionError):  # (a ValidationError too)
        return None
