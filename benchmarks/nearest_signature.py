"""Closest-signature search: explain_events with its index vs diffing every earlier signature.

A synthetic session of one function traced N times: ``x`` with shape (i, 8) for i = 1..N (a new
shape each call) plus constant arguments (``y`` f32[8], a weakly typed scalar ``scale``, a static
``n``). Prints the seconds to explain all events, brute force (up to 2,000 events) vs indexed,
and the per-event cost of one search with a history of 100 vs 5,000 signatures.

    python benchmarks/nearest_signature.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from brute_force import explain_events_brute_force

from recompile_cli.analysis.causes.explain import (
    SignatureIndex,
    diff_signatures,
    explain_events,
)
from recompile_cli.session.model import Event, Leaf, Signature


def signature(i: int) -> Signature:
    return Signature(
        leaves={"x": Leaf((i, 8), "float32"), "y": Leaf((8,), "float32"),
                "scale": Leaf((), "float32", weak_type=True)},
        static={"n": "3"}, structure={"x": "*", "y": "*", "scale": "*"},
        positional=3, keywords=("n",), function_id=1)


def session(n: int) -> list[Event]:
    return [Event(seq=i, function="f", defined_at="bench.py:1", owner="user", call_site=None,
                  call_index=None, depth=0, traced=True, compiled=True,
                  start_seconds=float(i), signature=signature(i + 1)) for i in range(n)]


def seconds(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def per_search_seconds(history: int, queries: int = 500) -> float:
    """One search plus the diff of the chosen pair, with ``history`` signatures indexed."""
    index = SignatureIndex({})
    for i in range(history):
        index.add(signature(i + 1))
    news = [signature(history + 1 + q) for q in range(queries)]
    start = time.perf_counter()
    for new in news:
        list(diff_signatures(new, index.signatures[index.nearest(new)], {}))
    return (time.perf_counter() - start) / queries


def main() -> None:
    print(f"{'events':>7}  {'brute force s':>13}  {'indexed s':>9}")
    for n in (1_000, 2_000, 10_000):
        events = session(n)
        indexed = seconds(explain_events, events, {})
        brute = seconds(explain_events_brute_force, events, {}) if n <= 2_000 else None
        assert brute is None or explain_events(events, {}) == explain_events_brute_force(
            events, {})
        print(f"{n:>7}  {'-' if brute is None else f'{brute:.3f}':>13}  {indexed:>9.3f}")
    small, large = per_search_seconds(100), per_search_seconds(5_000)
    print(f"per event: {small * 1e6:.1f} us with 100 earlier signatures, {large * 1e6:.1f} us "
          f"with 5,000 (ratio {large / small:.2f})")


if __name__ == "__main__":
    main()
