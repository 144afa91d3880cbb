"""What to do about compiles of code not yours at a line of yours (``analysis.eager_lines``):
why the line compiles, in words, and its fix, by the change that repeats and where the line ran.

* A *storm* (one operation compiling again and again, ``EagerLine.storming``), by what repeats:
  - new sizes of the same inputs (``SHAPE``): inside a host callback, convert the callback's
    arguments to NumPy first (NumPy compiles nothing); elsewhere, give the operation fixed
    shapes (``jnp.where`` with a fixed size, ``size=`` on ``jnp.nonzero``, padding to a few
    sizes) or move it into a jitted function of yours, where it is traced once per shape of
    that function's arguments instead of compiled per value. A sweep over sizes that is meant
    compiles once per size, as it should: the advice says so.
  - the same inputs with a new function each call (``NEW_FUNCTION``: a closure made anew, as an
    optimizer's eager ``update`` makes its loop bodies): jit the step that holds the line, or
    create the function once outside the loop.
  Several storming lines of one host callback's function are advised as one
  (``callback_storms``): their fix is made once, at the callback's top.
* A line whose compiles are one operation's, each for other inputs (``_sweep``: a solver's loop
  run once per setting): each setting compiles once, as it should; no advice (jitting the
  call would compile one program per setting all the same).
* A line that compiles many operations once each: a one-time cost. Advised only for a line of
  several compiles (several operations, or one per layer shape) that is a large share of the
  run's compile time, or for the lines of one function that draw a model's initial values
  together (``model_builds``: a model built over several lines): a model's initialisers
  (random draws among its operations): build it under ``jax.jit`` (``nnx.jit``,
  ``jax.jit(model.init)``); JAX's operations alone (an eager ``jax.value_and_grad`` through a
  model): run it under ``jax.jit``; a library's own set-up reached from the line (one of its
  functions among the operations, no initialisers): the library's one-time cost, no advice.
"""

from __future__ import annotations

import math

from recompile_cli.analysis.eager_lines import EagerLine, LineOp
from recompile_cli.analysis.shorten import counted
from recompile_cli.session.locations import parse
from recompile_cli.session.model import CauseCode, Owner

ONE_TIME_OPS = 5  # a one-time line is advised from this many operations (a model, not an op)
ONE_TIME_SHARE = 0.25  # ... this share of all compile seconds
ONE_TIME_SECONDS = 0.5  # ... and this many seconds
INITIALISERS_SHARE = 0.2  # random draws among a line's operations that make it a model's init
_RANDOM = frozenset({"_uniform", "_normal", "_truncated_normal", "_bernoulli", "_randint",
                     "_orthogonal", "_gamma", "_beta", "_categorical", "_choice", "_permutation",
                     # the key work a model's initialisers do (Flax NNX's Rngs folds a key in
                     # per parameter)
                     "_threefry_fold_in", "_threefry_split", "_random_bits", "threefry_2x32"})


def _storms(line: EagerLine, code: CauseCode) -> tuple[LineOp, ...]:
    return tuple(op for op in line.storming if op.code == code)


def why(line: EagerLine) -> str:
    """```gather`, `add` compiled again here for new sizes of the same inputs, 32 times in 34
    compiles (last of `gather`: shape at args[1]: i32[3,1] -> i32[5,1]); ...``, or ``64
    compiles here of 8 functions (...), each operation once, a one-time cost ...``."""
    if line.storm:
        parts = []
        sized = _storms(line, CauseCode.SHAPE)
        if sized:
            text = (f"{_names(sized)} compiled again here for new sizes of the same inputs, "
                    f"{counted(sum(op.repeated for op in sized), 'time')} in "
                    f"{counted(line.compiles, 'compile')}")
            if sized[0].change:
                text += f" (last of {_name(sized[0])}: {sized[0].change})"
            parts.append(text + "; a shape that depends on the values (boolean-mask indexing "
                         "`x[mask]`, `jnp.nonzero` or `jnp.unique` without `size=`) makes a "
                         "new one each call, and so does a sweep over sizes")
        made = _storms(line, CauseCode.NEW_FUNCTION)
        if made:
            text = (f"{_names(made)} compiled again here for the same inputs, "
                    f"{counted(sum(op.repeated for op in made), 'time')} in "
                    f"{counted(line.compiles, 'compile')}: its function is a new object each "
                    "call (a closure or loop body made anew by the call, as an eager optimizer "
                    "`update` makes), which JAX's cache never finds again")
            sizes = sum(op.new_sizes for op in made)
            if sizes:
                text += (f" (and {counted(sizes, 'time')} for new sizes: a sweep over sizes "
                         "compiles once per size, as it should)")
            parts.append(text)
        return "; ".join(parts)
    library = _library(line)
    text = (f"{counted(line.compiles, 'compile')} here of {counted(len(line.ops), 'function')} "
            f"({_names(line.ops)}), each operation once")
    if library and not _initialises(line):
        return (f"{text}: `{library}`'s own set-up reached from this call, the library's "
                "one-time cost, not a storm of yours")
    return text + ", a one-time cost unless the line runs again with new inputs"


def fix(line: EagerLine, compile_seconds: float) -> str | None:
    """The fix for the line, or ``None`` where none is worth its change (``compile_seconds``:
    the run's, for the one-time rule)."""
    if line.storm:
        saves = (f"saves about {counted(line.storm_again, 'compile')}, "
                 f"{line.storm_again_seconds:.3f} s")
        fixes = []
        if _storms(line, CauseCode.SHAPE):
            if line.host_callback is not None:
                fixes.append(f"it runs inside `{line.host_callback}`: convert the callback's "
                             "arguments to NumPy at its top (`x = np.asarray(x)`); NumPy "
                             "operations compile nothing")
            else:
                fixes.append("give the operation fixed shapes: `jnp.where(mask, x, 0)` instead "
                             "of `x[mask]`, `jnp.nonzero(mask, size=N)`, or padding to a few "
                             "sizes; or move the line into a jitted function of yours, or into "
                             "NumPy where it works on host data (if the sizes are a sweep you "
                             "meant, each compiles once, as it should: keep it)")
        if _storms(line, CauseCode.NEW_FUNCTION):
            fixes.append("jit the step that holds this line (`jax.jit` of the loop's body, or of "
                         "the optimizer's `update`) so that it compiles once, or create the "
                         "function once, outside the loop, and pass what changes as arguments")
        return "; ".join(fixes) + f" ({saves})"
    if (line.compiles >= ONE_TIME_OPS and line.seconds >= ONE_TIME_SECONDS
            and line.seconds >= ONE_TIME_SHARE * compile_seconds):
        if _initialises(line):
            return ("build the model under `jax.jit` to compile it as one program (Flax NNX: "
                    "`nnx.jit` of a function that makes it; Linen: `jax.jit(model.init)`), or "
                    "accept the one-time cost")
        if _library(line) is None and not _sweep(line):
            return ("run it under `jax.jit` (Equinox: `eqx.filter_jit`) to compile it as one "
                    "program instead of one per operation, or accept the one-time cost")
    return None


def callback_storms(lines: tuple[EagerLine, ...]) -> list[tuple[EagerLine, ...]]:
    """The storming lines of one host callback's function (several lines of PPO's logging
    callback that index by a mask), where there are several: their one fix is the same, made
    once at the callback's top, so they are advised as one."""
    by_scope: dict[tuple[str, str | None, str], list[EagerLine]] = {}
    for line in lines:
        where = parse(line.line)
        if (where is not None and line.storm and line.host_callback is not None
                and _storms(line, CauseCode.SHAPE)):
            by_scope.setdefault((where.path, where.function, line.host_callback),
                                []).append(line)
    return [tuple(sorted(members, key=lambda line: _line_number(line.line)))
            for members in by_scope.values() if len(members) > 1]


def callback_storm_text(lines: tuple[EagerLine, ...]) -> str:
    """The suggestion for the storming lines of one host callback: why and the fix, once."""
    first, last = parse(lines[0].line), parse(lines[-1].line)
    assert first is not None and last is not None
    ops = tuple(op for line in lines for op in _storms(line, CauseCode.SHAPE))
    again = sum(line.storm_again for line in lines)
    seconds = math.fsum(line.storm_again_seconds for line in lines)
    compiles = sum(line.compiles for line in lines)
    return (f"lines {first.line}-{last.line} of {first.function or '<module>'}, inside "
            f"`{lines[0].host_callback}`: {_names(ops)} compiled again for new sizes of the same "
            f"inputs, {counted(again, 'time')} in {counted(compiles, 'compile')} (a shape that "
            "depends on the values: boolean-mask indexing `x[mask]` of the callback's "
            "arguments). Fix: convert the callback's arguments to NumPy at its top "
            "(`x = jax.tree.map(np.asarray, x)` for each argument `x`); NumPy operations "
            "compile nothing "
            f"(saves about {counted(again, 'compile')}, {seconds:.3f} s)")


def model_builds(lines: tuple[EagerLine, ...], compile_seconds: float
                 ) -> list[tuple[EagerLine, ...]]:
    """The lines of one function (or module) that together build a model op by op, where no
    one of them is advised alone: each draws initial values and compiles once per operation
    (a layer per line), and together they pass the one-time rule (``fix``)."""
    by_scope: dict[tuple[str, str | None], list[EagerLine]] = {}
    for line in lines:
        where = parse(line.line)
        if (where is not None and not line.storm and _initialises(line)
                and fix(line, compile_seconds) is None):
            by_scope.setdefault((where.path, where.function), []).append(line)
    out = []
    for members in by_scope.values():
        seconds = math.fsum(line.seconds for line in members)
        if (len(members) > 1 and sum(line.compiles for line in members) >= ONE_TIME_OPS
                and seconds >= ONE_TIME_SECONDS and seconds >= ONE_TIME_SHARE * compile_seconds):
            out.append(tuple(sorted(members, key=lambda line: _line_number(line.line))))
    return out


def model_build_text(lines: tuple[EagerLine, ...]) -> str:
    """The suggestion for a model built over ``lines``: why and the fix, as one text."""
    first, last = parse(lines[0].line), parse(lines[-1].line)
    assert first is not None and last is not None
    compiles = sum(line.compiles for line in lines)
    seconds = math.fsum(line.seconds for line in lines)
    return (f"{counted(compiles, 'compile')} at lines {first.line}-{last.line} of "
            f"{first.function or '<module>'} ({seconds:.3f} s), each operation once: a model's "
            "initial values drawn op by op over several lines, a one-time cost. Fix: build "
            "the model under `jax.jit` to compile it as one program (Flax NNX: `nnx.jit` of a "
            "function that makes it; Linen: `jax.jit(model.init)`; by hand: one jitted "
            "`init(key)` that returns every layer's parameters), or accept the one-time cost")


def _sweep(line: EagerLine) -> bool:
    """Whether the line's compiles are one operation's, each for other inputs (a solver's loop
    run for each setting of a sweep): jitting the call merges no operations, so it saves
    nothing. Not a model's initial values drawn one operation per layer shape: jitting the
    build does make those one program."""
    return len(line.ops) == 1 and line.compiles > 1 and not _initialises(line)


def _line_number(text: str) -> int:
    where = parse(text)
    return where.line if where is not None else 0


def _initialises(line: EagerLine) -> bool:
    """Whether the line draws a model's initial values: random draws are a share of its
    operations."""
    drawn = sum(1 for op in line.ops if op.name in _RANDOM)
    return drawn > 0 and drawn >= INITIALISERS_SHARE * len(line.ops)


def _library(line: EagerLine) -> str | None:
    """The library whose own functions compiled at the line, where one did."""
    return next((op.package for op in line.ops if op.owner == Owner.LIBRARY), None)


def _name(op: LineOp) -> str:
    return f"`{op.name}`"


def _names(ops: tuple[LineOp, ...], shown: int = 3) -> str:
    names = ", ".join(_name(op) for op in ops[:shown])
    return names + (f" and {len(ops) - shown} more" if len(ops) > shown else "")
