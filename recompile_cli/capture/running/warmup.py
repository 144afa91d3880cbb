"""Running a warm-up plan before the workload (``run --after-warmup``, ``check``'s
``after_warmup``, ``guard(after_warmup=...)``), beside the user's code.

``check_plan`` refuses a plan that cannot run before anything starts (no such file, a syntax
error, no top-level ``warm_up``). ``run_plan`` imports the plan, calls its ``warm_up`` (with
``parallel`` when given) and tells the recorder the moment it ended, what it compiled and what
it skipped there (``Recorder.warmed_up``: streamed to the events log at once), or what it
raised. Every compile that starts after that moment is the workload's.

A plan warms up the very function objects the workload calls: for a script, ``run_main`` runs
the script as ``__main__`` in two parts, its definitions first, then the plan, then its
``if __name__ == "__main__":`` block (the plan finds the script's functions in ``__main__``).
What the plan cannot warm up front, it warms at the first call (``capture.running.first_call``):
a script without that block runs after the plan, whole, and each of its functions is warmed at
its first call (``up_front`` False: the plan's ``warm_up`` is not called); a jit that no module
holds (made inside a function) is warmed at its first call in either case.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recompile_cli import exits
from recompile_cli.capture.code.stack import exception_summary
from recompile_cli.capture.running import first_call
from recompile_cli.errors import TargetError
from recompile_cli.session.warmup import Skipped, Warmup

if TYPE_CHECKING:
    from recompile_cli.capture.recorder import Recorder

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def check_plan(path: str | Path, option: str = "--after-warmup") -> Path:
    """The plan's absolute path, after checking that it exists, compiles and defines
    ``warm_up`` at its top level (``TargetError``, exit 2, otherwise)."""
    plan = Path(path)
    if not plan.is_file():
        what = ("a folder" if plan.is_dir() else "not a regular file (a FIFO, a device or a "
                "socket)" if plan.exists() else "no such file")
        raise TargetError(f"{option} {plan}: {what}. Write a plan with recompile-cli "
                          "warmup SESSION.json -o PLAN.py, then pass its path.")
    try:
        tree = ast.parse(plan.read_bytes(), str(plan))
    except SyntaxError as exc:
        raise TargetError(f"{option} {plan}, line {exc.lineno}: syntax error ({exc.msg}). Fix "
                          "the plan, or write it again with recompile-cli warmup.") from None
    except (OSError, ValueError) as exc:
        raise TargetError(f"{option} {plan}: cannot read it ({exc}).") from None
    if not any(isinstance(node, ast.FunctionDef) and node.name == "warm_up"
               for node in tree.body):
        raise TargetError(f"{option} {plan}: defines no warm_up() function at its top level, so "
                          "it is not a warm-up plan. Write one with recompile-cli warmup "
                          "SESSION.json -o PLAN.py.")
    return plan.resolve()


def run_plan(recorder: Recorder, plan: Path, parallel: int | None = None,
             hint: str | None = None, up_front: bool = True) -> Warmup:
    """Import ``plan`` and call its ``warm_up`` (unless not ``up_front``); then warm the rest
    of its ``AT_FIRST_CALL`` (all of it when not ``up_front``) at each function's first call.
    The ``Warmup`` it made is recorded (and returned). What the plan raises is the warm-up's
    ``error`` (with ``hint`` appended), and the recorder's failure; Ctrl-C and SIGTERM
    propagate."""
    started = recorder.seconds()
    compiled, error, module = 0, None, None
    skipped: tuple[Skipped, ...] = ()
    try:
        module = _load(plan)
        if up_front:
            result = module.warm_up() if parallel is None else module.warm_up(parallel=parallel)
            compiled, skipped = _result(result)
    except exits.INTERRUPTIONS:
        raise
    except BaseException as exc:
        error = exception_summary(f"the warm-up plan {plan.name}", exc)
        if hint:
            error += f" ({hint})"
        recorder.fail(error, exc)
    warmup = Warmup(str(plan), started, recorder.seconds(), compiled, skipped, error,
                    at_first_call=not up_front)
    if error is None and module is not None:
        warmup = _at_first_calls(recorder, module, plan, warmup, up_front)
    recorder.warmed_up(warmup)
    return warmup


def _at_first_calls(recorder: Recorder, module: Any, plan: Path, warmup: Warmup,
                    up_front: bool) -> Warmup:
    """``warmup`` waiting for the first calls of the plan's functions not warmed up front."""
    warmed = getattr(module, "BLOCKS", ()) if up_front else ()
    waiting = first_call.blocks(module, plan, warmed if isinstance(warmed, list) else ())
    if not waiting:
        return warmup
    calls = first_call.FirstCalls(recorder, warmup, waiting, _skip_error(module))
    if not recorder.after_each_trace(calls):
        recorder.warn("the warm-up plan's functions that it warms at their first call were not "
                      "warmed: that needs JAX's tracing internals (hook mode private)")
        return warmup
    return calls.warmup


def _skip_error(module: Any) -> type[BaseException] | None:
    kind = getattr(module, "_Skip", None)
    return kind if isinstance(kind, type) and issubclass(kind, BaseException) else None


class WarmupFailed(Exception):
    """The plan raised (already recorded as the run's failure): the workload does not run."""


def warm_up_first(recorder: Recorder, plan: Path, parallel: int | None,
                  up_front: bool = True) -> None:
    """``run_plan``; ``WarmupFailed`` when the plan raised, so that the workload never runs
    after a warm-up that did not finish."""
    if run_plan(recorder, plan, parallel, up_front=up_front).error is not None:
        raise WarmupFailed


def _load(plan: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_recompile_cli_warmup_plan", plan)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {plan}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(result: Any) -> tuple[int, tuple[Skipped, ...]]:
    """What ``warm_up`` returned: ``{"compiled": [...], "skipped": [(function, label,
    reason)]}``; anything else compiled an unknown number (0) and skipped nothing known."""
    if not isinstance(result, dict):
        return 0, ()
    compiled = result.get("compiled")
    skipped = []
    for item in result.get("skipped") or ():
        if isinstance(item, (tuple, list)) and len(item) == 3:
            skipped.append(Skipped(*(str(part) for part in item)))
    return (len(compiled) if isinstance(compiled, (list, tuple)) else 0), tuple(skipped)


def run_main(script: Path, before_main: Callable[[bool], None]) -> None:
    """Run ``script`` as ``__main__`` (as ``runpy.run_path`` does), calling
    ``before_main(has_main_block)`` after its top-level definitions and before its first
    top-level ``if __name__ == "__main__":`` block (or first, when it has none)."""
    source = script.read_bytes()
    filename = str(script)
    tree = ast.parse(source, filename)
    split = next((i for i, node in enumerate(tree.body) if _is_main_block(node)), None)
    head = compile(ast.Module(tree.body[:split] if split is not None else tree.body, []),
                   filename, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=filename, __cached__=None, __loader__=None,
                           __package__="", __spec__=None, __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        if split is None:
            before_main(False)
            exec(head, module.__dict__)
            return
        exec(head, module.__dict__)
        before_main(True)
        rest = compile(ast.Module(tree.body[split:], []), filename, "exec",
                       flags=head.co_flags & _FUTURE_FLAGS, dont_inherit=True)
        exec(rest, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _is_main_block(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either way round)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1
