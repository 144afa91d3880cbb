"""A large synthetic session, for the scale benchmarks and tests: ``events`` events over
``functions`` functions, built from ``session.model`` objects (no JAX needed).

Each user function is traced again and again with a new leading dimension of ``x`` (a ``shape``
miss), ``y`` and a weakly typed ``scale`` constant, a static ``n``; every 10th event is a compile
without a re-trace, every 7th a nested trace inside its parent, a few events belong to JAX's own
functions and to a library, and one in 997 is a failed trace. Times are plausible (a few ms per
stage, back to back), so the timeline spans minutes.

    python benchmarks/synthetic.py OUT.json [--events 100000] [--functions 50]
"""

from __future__ import annotations

import argparse

from recompile_cli.session.model import (
    Change,
    Environment,
    Event,
    Leaf,
    Session,
    Signature,
    TraceError,
)


def _signature(function: int, size: int) -> Signature:
    return Signature(
        leaves={"x": Leaf((size, 8), "float32"), "y": Leaf((8,), "float32"),
                "scale": Leaf((), "float32", weak_type=True)},
        static={"n": "3"}, structure={"x": "*", "y": "*", "scale": "*"},
        positional=3, keywords=("n",), function_id=function + 1)


def _owner(function: int) -> tuple[str, str]:
    if function % 25 == 24:
        return "jax", f"/venv/lib/python3.11/site-packages/jax/_src/ops_{function}.py:{function}"
    if function % 25 == 23:
        return "library", f"/venv/lib/python3.11/site-packages/flax/linen_{function}.py:10"
    return "user", f"/home/me/project/model_{function % 7}.py:{10 + function}"


def build(events: int = 100_000, functions: int = 50) -> Session:
    out: list[Event] = []
    sizes = [0] * functions
    clock = 0.0
    for seq in range(events):
        function = (seq * 7919) % functions  # interleaved, deterministic
        owner, defined_at = _owner(function)
        nested = seq % 7 == 3
        no_retrace = seq % 10 == 9 and sizes[function] > 0
        failed = seq % 997 == 500
        if not no_retrace:
            sizes[function] += 1
        trace = 0.0 if no_retrace else 0.002
        lower, compile_ = (0.001, 0.004) if not failed and not nested else (0.0, 0.0)
        start = clock
        event = Event(
            seq=seq, function=f"fn_{function}", defined_at=defined_at, owner=owner,
            call_site=f"/home/me/project/train.py:{100 + function % 13}",
            call_index=seq // functions, depth=1 if nested else 0,
            traced=not no_retrace, compiled=not failed and not nested, start_seconds=start,
            trace_seconds=trace, lower_seconds=lower, compile_seconds=compile_,
            signature=None if no_retrace else _signature(function, sizes[function]),
            lowering_changes=((Change("in_shardings", "None", "PositionalSharding", "x"),)
                              if no_retrace else None),
            error=TraceError("TracerBoolConversionError", "bool() on a tracer", "x")
            if failed else None,
            call_of=None,
            lower_start_seconds=start + trace if lower else None,
            compile_start_seconds=start + trace + lower if compile_ else None)
        out.append(event)
        clock += trace + lower + compile_ + 0.0005
    return Session(
        environment=Environment("0.10.2", "3.11.9", "cpu", "private"),
        target="synthetic.py", events=tuple(out), wall_seconds=clock + 1.0,
        calls={}, warnings=("a synthetic session",))


def main() -> None:
    from recompile_cli.session.files import save_session

    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--functions", type=int, default=50)
    args = parser.parse_args()
    save_session(build(args.events, args.functions), args.out)


if __name__ == "__main__":
    main()
