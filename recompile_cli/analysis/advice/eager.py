"""What to do about compiles of code not yours at a line of yours (``analysis.eager_lines``):
why the line compiles, in words, and its fix, by what its operations did and where the line
ran.

* A *storm* (an operation compiling again for new inputs): inside a host callback, convert the
  callback's arguments to NumPy first (NumPy compiles nothing); elsewhere, give the operation
  fixed shapes (``jnp.where`` with a fixed size, ``size=`` on ``jnp.nonzero``, padding to a few
  sizes) or move it into a jitted function of yours, where it is traced once per shape of that
  function's arguments instead of compiled per value.
* A line that compiles many operations once each (a model built op by op, its initialisers):
  a one-time cost; build it under ``jax.jit`` (``nnx.jit``, ``jax.jit(model.init)``) or accept
  it. Advised only for a line of several operations that is a large share of the run's compile
  time.
"""

from __future__ import annotations

from recompile_cli.analysis.eager_lines import EagerLine, LineOp
from recompile_cli.analysis.shorten import counted
from recompile_cli.session.model import CauseCode

ONE_TIME_OPS = 5  # a one-time line is advised from this many operations (a model, not an op)
ONE_TIME_SHARE = 0.25  # ... this share of all compile seconds
ONE_TIME_SECONDS = 0.5  # ... and this many seconds


def why(line: EagerLine) -> str:
    """```gather`, `add` compiled again here for new inputs, 32 times in 34 compiles (last of
    `gather`: shape at args[1]: i32[3,1] -> i32[5,1])``, or ``8 operations compiled here one by
    one (...), a one-time cost ...``."""
    op = line.worst
    if line.storm:
        again = [found for found in line.ops if found.again]
        text = (f"{_names(tuple(again))} compiled again here for new inputs, "
                f"{counted(line.again, 'time')} in {counted(line.compiles, 'compile')}")
        if op.change:
            text += f" (last of {_name(op)}: {op.change})"
        if any(found.code == CauseCode.SHAPE for found in again):
            text += ("; a shape that depends on the values (boolean-mask indexing `x[mask]`, "
                     "`jnp.nonzero` or `jnp.unique` without `size=`) makes a new one each call")
        return text
    return (f"{counted(len(line.ops), 'operation')} compiled here one by one "
            f"({counted(line.compiles, 'compile')}: {_names(line.ops)}), a one-time cost "
            "unless the line runs again with new inputs")


def fix(line: EagerLine, compile_seconds: float) -> str | None:
    """The fix for the line, or ``None`` where none is worth its change (``compile_seconds``:
    the run's, for the one-time rule)."""
    if line.storm:
        saved = line.again
        if line.host_callback is not None:
            return (f"it runs inside `{line.host_callback}`: convert the callback's arguments to "
                    "NumPy at its top (`x = np.asarray(x)`); NumPy operations compile nothing "
                    f"(saves about {counted(saved, 'compile')}, {line.again_seconds:.3f} s)")
        return ("give the operation fixed shapes: `jnp.where(mask, x, 0)` instead of `x[mask]`, "
                "`jnp.nonzero(mask, size=N)`, or padding to a few sizes; or move the line into "
                "a jitted function of yours, or into NumPy where it works on host data "
                f"(saves about {counted(saved, 'compile')}, {line.again_seconds:.3f} s)")
    if (len(line.ops) >= ONE_TIME_OPS and line.seconds >= ONE_TIME_SECONDS
            and line.seconds >= ONE_TIME_SHARE * compile_seconds):
        return ("build the model under `jax.jit` to compile it as one program (Flax NNX: "
                "`nnx.jit` of a function that makes it; Linen: `jax.jit(model.init)`), or "
                "accept the one-time cost")
    return None


def _name(op: LineOp) -> str:
    return f"`{op.name}`"


def _names(ops: tuple[LineOp, ...], shown: int = 3) -> str:
    names = ", ".join(_name(op) for op in ops[:shown])
    return names + (f" and {len(ops) - shown} more" if len(ops) > shown else "")
