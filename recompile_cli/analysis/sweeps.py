"""Shape sweeps: a function of yours whose array argument took many sizes along one dimension,
with the sizes seen and the bucket edges that padding would use, for the HTML report's picture.

The buckets are those ``analysis.advice.padding`` proposes first (``predict.powers_of_two``
when they save compiles without more than doubling the largest size, else ``predict.multiples_of``
a width from ``predict.multiple_for``); the sizes and dims come from ``predict.varying_dims`` over
the function's successful top-level traces. Pure data: no JAX, no rendering.
"""

from __future__ import annotations

from dataclasses import dataclass

from recompile_cli.analysis.advice import predict
from recompile_cli.session.model import Owner, Session, Signature, function_key

MIN_SIZES = 3  # fewer sizes are a last batch or two datasets, not a sweep


@dataclass(frozen=True, slots=True)
class Sweep:
    """``function``'s ``argument`` took ``sizes`` (distinct, ascending) along ``dim``;
    ``edges`` are the proposed bucket sizes (ascending), ``scheme`` says which kind."""

    function: str
    argument: str
    dim: int
    sizes: tuple[int, ...]
    edges: tuple[int, ...]
    scheme: str  # "powers of two" or "multiples of N"


def sweeps(session: Session) -> list[Sweep]:
    """The shape sweeps of your functions, the most sizes first."""
    signatures: dict[str, tuple[str, list[Signature]]] = {}
    for event in session.events:
        if (event.owner == Owner.USER and event.depth == 0 and event.traced
                and event.error is None and event.signature is not None):
            key = function_key(event.function, event.defined_at)
            signatures.setdefault(key, (event.function, []))[1].append(event.signature)
    found = []
    for name, sigs in signatures.values():
        best: tuple[str, int, list[int]] | None = None
        for path in sigs[-1].leaves:
            for dim, values in predict.varying_dims(sigs, path).items():
                if best is None or len(values) > len(best[2]):
                    best = (path, dim, values)
        sweep = _sweep(name, *best) if best is not None and len(best[2]) >= MIN_SIZES else None
        if sweep is not None:
            found.append(sweep)
    return sorted(found, key=lambda s: -len(s.sizes))


def _sweep(function: str, argument: str, dim: int, values: list[int]) -> Sweep | None:
    """The sweep with its buckets; ``None`` when no bucketing saves a compile."""
    full = max(values)
    pow2 = sorted(set(predict.powers_of_two(values).values()))
    if len(pow2) < len(values) and pow2[-1] <= 2 * full:
        return Sweep(function, argument, dim, tuple(sorted(values)), tuple(pow2),
                     "powers of two")
    width = predict.multiple_for(values)
    multiples = sorted(set(predict.multiples_of(width, values).values()))
    if len(multiples) >= len(values):
        return None
    return Sweep(function, argument, dim, tuple(sorted(values)), tuple(multiples),
                 f"multiples of {width}")
