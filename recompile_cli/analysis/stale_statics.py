"""Stale statics as the report says them (``Session.stale_statics``, found by
``capture.stale_statics``): the render's warnings and the gate's ``max_stale_statics`` use them."""

from __future__ import annotations

from recompile_cli.session.model import StaleStatic


def stale_static_text(found: StaleStatic) -> str:
    """The warning for one stale static: the fields that differ with both values, and what
    the type's equality compares."""
    then = ", ".join(f"`{d.path}={d.compiled}`" for d in found.differences)
    now = ", ".join(f"`{d.path}={d.called}`" for d in found.differences)
    if found.seen == "call":
        how = (f"the executable of {found.function} compiled for {then} ran with {now}"
               + (f" ({found.seen_times} times)" if found.seen_times > 1 else ""))
    else:
        how = (f"{found.function} was traced again with `{found.argument}` equal to the one an "
               f"executable was compiled for ({then}) but with {now}; a call that reuses that "
               "executable runs with the old values (--count-calls sees every reuse)")
    return (f"stale static: {how}: {found.compares}. Make the type's `__eq__` and `__hash__` "
            "compare every field the function reads, or pass those fields as arguments.")

