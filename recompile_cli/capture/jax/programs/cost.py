"""What a compiled program is made of (``CompileCost``), read from JAX's private objects.

Part of the JAX-internals layer: it reads ``jax._src`` objects. ``hooks``' lowering hook
calls it through the recorder, on the miss path only, after ``_pjit_lower`` lowered a jaxpr and
before XLA compiles it; it never raises (``cost_of`` returns None instead).

What it reads, checked on JAX 0.10.2 and 0.12.0 (``jax._src.core``, ``jaxlib`` tracebacks and
the MLIR bindings; absent pieces are feature-detected and left out):

* ``ClosedJaxpr.jaxpr.eqns`` and ``core.jaxprs_in_params(eqn.params)``: every equation, the
  bodies of ``scan``/``while``/``cond``/``remat`` and nested jits walked once each, as JAX's own
  ``jaxpr_util.pprof_equation_profile`` counts them (``JAX_DUMP_IR_MODES=eqn_count_pprof``);
* ``eqn.source_info.traceback.raw_frames()``: the code objects on the stack that made each
  equation, of which the first of the user's (``stack.is_user_file``) names its line; a body
  equation with no user frame takes its caller's line (JAX appends the caller's traceback);
* ``ClosedJaxpr.consts`` (and array literals): the constants baked into the program;
* ``MeshComputation._hlo`` (an ``ir.Module``) walked with ``Operation.walk``: its operations.

Both walks are bounded: past ``EQUATION_LIMIT`` equations are counted but not attributed
(``CompileCost.walked`` says where it stopped), and past ``MODULE_OP_LIMIT`` lowered operations
the count stops there (``CompileCost.module_ops_bounded``: "at least" that many). Equations are
always counted in full, so a limit on them is always checked.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from recompile_cli.capture.code import stack
from recompile_cli.capture.jax.programs import cost_lines
from recompile_cli.session.model import CompileCost, ConstantCost, function_key

EQUATION_LIMIT = 50_000  # equations attributed to lines; the rest are only counted
MODULE_OP_LIMIT = 200_000  # lowered operations counted; past it, "at least" that many
_JIT_PRIMITIVES = frozenset({"pjit", "jit", "closed_call", "core_call"})
_UNKNOWN = cost_lines.UNKNOWN

# code object -> is it the user's (stack.is_user_file on its file): a few hundred codes per run
_USER_CODE: dict[Any, bool] = {}


def cost_of(closed_jaxpr: Any, lowering: Any, fun: Any = None,
            on_error: Callable[[BaseException], None] | None = None) -> CompileCost | None:
    """The cost profile of a lowered jaxpr (``lowering``: what ``_pjit_lower`` returned);
    ``fun``: the jitted Python function, whose closure may hold the constants. Never raises."""
    try:
        return _Walk(closed_jaxpr).cost(lowering, fun, on_error)
    except Exception as exc:
        if on_error is not None:
            on_error(exc)
        return None


class _Walk:
    def __init__(self, closed_jaxpr: Any) -> None:
        from jax._src import core  # lazy: capture loads before the job's environment is set

        self._params = core.jaxprs_in_params
        self._closed = closed_jaxpr
        self.equations = 0
        self.in_bodies = 0
        self.records: list[tuple[str, str, bool]] = []  # (location, primitive, in a body)
        self.inlined: dict[str, int] = {}
        self.literals: list[tuple[Any, str]] = []
        self._visited: set[int] = set()
        self._codes: dict[tuple[Any, int], str] = {}

    def cost(self, lowering: Any, fun: Any,
             on_error: Callable[[BaseException], None] | None = None) -> CompileCost:
        jaxpr = self._closed.jaxpr
        const_sites = self._walk(jaxpr, None, False, set(map(id, jaxpr.constvars)))
        consts = list(self._closed.consts)
        arrays = [(c, const_sites.get(id(v))) for c, v in zip(consts, jaxpr.constvars,
                                                               strict=False)]
        arrays += [(value, where) for value, where in self.literals]
        sizes = [_nbytes(value) for value, _ in arrays]
        large = [(value, where, size) for (value, where), size in zip(arrays, sizes, strict=True)
                 if size >= cost_lines.LARGE_CONSTANT_BYTES]
        large.sort(key=lambda item: -item[2])
        try:  # the equations are kept even when the module cannot be walked
            module_ops, bounded = _module_ops(lowering)
        except Exception as exc:
            module_ops, bounded = None, False
            if on_error is not None:
                on_error(exc)
        return CompileCost(
            equations=self.equations, in_bodies=self.in_bodies, walked=len(self.records),
            lines=cost_lines.line_costs(self.records), module_ops=module_ops,
            module_ops_bounded=bounded, constants=len(arrays), constants_bytes=sum(sizes),
            large_constants=tuple(_constant(value, where, size, fun)
                                  for value, where, size in large[:cost_lines.MAX_CONSTANTS]),
            inlined=tuple(sorted(self.inlined.items(), key=lambda kv: -kv[1])[:10]))

    def _walk(self, jaxpr: Any, caller: str | None, in_body: bool,
              constvars: set[int] | None = None) -> dict[int, str | None]:
        """Count and attribute ``jaxpr``'s equations; returns constvar id -> the line of the
        first equation reading it (for the top-level jaxpr only)."""
        sites: dict[int, str | None] = {}
        records = self.records
        for eqn in jaxpr.eqns:
            self.equations += 1
            self.in_bodies += in_body
            where = None
            if len(records) < EQUATION_LIMIT:
                where = self._location(eqn.source_info.traceback) or caller
                records.append((where or _UNKNOWN, eqn.primitive.name, in_body))
            for var in eqn.invars:
                if constvars and id(var) in constvars and id(var) not in sites:
                    sites[id(var)] = where
                value = getattr(var, "val", None)
                if value is not None and getattr(value, "ndim", 0) > 0:
                    self.literals.append((value, where or _UNKNOWN))
            name = eqn.primitive.name
            for sub in self._params(eqn.params):
                if id(sub) in self._visited:
                    continue
                self._visited.add(id(sub))
                before = self.equations
                self._walk(sub, where or caller, in_body or name not in _JIT_PRIMITIVES)
                callee = _user_function(sub) if name in _JIT_PRIMITIVES else None
                if callee is not None:
                    self.inlined[callee] = self.inlined.get(callee, 0) + self.equations - before
        return sites

    def _location(self, traceback: Any) -> str | None:
        return user_location(traceback, self._codes)


def user_location(traceback: Any, memo: dict[tuple[Any, int], str] | None = None
                  ) -> str | None:
    """``file:line`` of the first user frame of an equation's traceback
    (``eqn.source_info.traceback``); ``memo`` keeps the text of each (code, offset) seen."""
    if traceback is None:
        return None
    codes, lastis = traceback.raw_frames()
    for code, lasti in zip(codes, lastis, strict=False):
        user = _USER_CODE.get(code)
        if user is None:
            user = _USER_CODE[code] = stack.is_user_file(code.co_filename)
        if user:
            key = (code, lasti)
            text = memo.get(key) if memo is not None else None
            if text is None:
                text = f"{code.co_filename}:{_line(code, lasti)}"
                if memo is not None:
                    memo[key] = text
            return text
    return None


def _user_function(jaxpr: Any) -> str | None:
    """``name@file:line`` of the user's function a nested jit's jaxpr was traced from (its
    ``debug_info.func_src_info`` reads ``name at file:line``); None for JAX's and libraries'."""
    source = getattr(getattr(jaxpr, "debug_info", None), "func_src_info", None)
    if not isinstance(source, str) or " at " not in source:
        return None
    name, _, where = source.rpartition(" at ")
    if not stack.is_user_file(cost_lines.path_part(where)):
        return None
    return function_key(name, where)


def _line(code: Any, lasti: int) -> int:
    # lazy: capture loads before the job's environment is set
    from jax._src.lib import xla_client  # type: ignore[attr-defined]

    line = xla_client.Traceback.code_addr2line(code, lasti)
    return int(line) if line is not None else code.co_firstlineno


def _nbytes(value: Any) -> int:
    try:
        return int(getattr(value, "nbytes", 0) or 0)
    except Exception:
        return 0


def _module_ops(lowering: Any) -> tuple[int | None, bool]:
    """The lowered module's operations, and whether that count is a lower bound: the walk
    stops at ``MODULE_OP_LIMIT`` by telling MLIR to (``WalkResult.INTERRUPT``), never by
    raising, since an exception raised in the callback comes back out of MLIR's C++ walk as
    another type (it did past 200,000 operations on JAX 0.10.2)."""
    module = getattr(lowering, "_hlo", None)
    walk = getattr(getattr(module, "operation", None), "walk", None)
    if walk is None:
        return None, False
    # lazy: capture loads before the job's environment is set
    from jax._src.lib.mlir import ir  # type: ignore[attr-defined]

    advance, interrupt = ir.WalkResult.ADVANCE, ir.WalkResult.INTERRUPT
    count = 0

    def visit(op: Any) -> Any:
        nonlocal count
        count += 1
        return interrupt if count > MODULE_OP_LIMIT else advance

    walk(visit)
    if count > MODULE_OP_LIMIT:
        return MODULE_OP_LIMIT, True
    return count - 1, False  # the module itself is not an operation of the program


def _constant(value: Any, where: str | None, size: int, fun: Any) -> ConstantCost:
    """A large constant, named by the variable that holds it where one is found: a global of
    the module whose line captured it, or a closure variable of the jitted function."""
    shape = tuple(int(d) for d in getattr(value, "shape", ()))
    dtype = str(getattr(value, "dtype", "?"))
    variable = defined_at = None
    try:
        found = _variable_of(value, where, fun)
        if found is not None:
            variable, path = found
            line = cost_lines.assignment_line(path, variable, where)
            defined_at = f"{path}:{line}" if line else None
    except Exception:
        pass
    import numpy as np  # lazy: capture loads before the job's environment is set

    kind = "numpy array" if isinstance(value, np.ndarray) else "jax array"
    return ConstantCost(size, shape, dtype, kind, where if where != _UNKNOWN else None,
                        variable, defined_at)


def _variable_of(value: Any, where: str | None, fun: Any) -> tuple[str, str] | None:
    import numpy as np  # lazy: capture loads before the job's environment is set

    try:
        data = np.asarray(value)
    except Exception:
        return None
    candidates: list[tuple[str, Any, str]] = []
    inner = stack.python_function(fun) if fun is not None else None
    code = getattr(inner, "__code__", None)
    cells = getattr(inner, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, cells, strict=False):
            try:
                candidates.append((name, cell.cell_contents, code.co_filename))
            except ValueError:  # an empty cell
                continue
    path = cost_lines.path_part(where) if where else None
    for module in list(sys.modules.values()):
        if path and getattr(module, "__file__", None) == path:
            candidates += [(k, v, path) for k, v in vars(module).items()]
    for name, candidate, file in candidates:
        if candidate is value or (
                isinstance(candidate, np.ndarray) and candidate.shape == data.shape
                and candidate.dtype == data.dtype and np.shares_memory(candidate, data)):
            return name, file
    return None
