"""Jupyter / IPython: the ``%recompiles`` / ``%%recompiles`` magics (``%load_ext
recompile_cli``), which record with ``record()``, display the inline report
(``RecompileReport._repr_html_``), keep it as ``_recompiles`` and, with ``--max-compiles`` and
``--save``, gate and save it. The report is shown whatever the code did (an exception, an
interrupt). IPython is imported only when the extension loads, never on import.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import TYPE_CHECKING, Any

from recompile_cli import options
from recompile_cli.api.recording import record
from recompile_cli.errors import RecompileError
from recompile_cli.exits import deferred_signals
from recompile_cli.render.escape import terminal

if TYPE_CHECKING:
    from recompile_cli.api.report import RecompileReport

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


# -- the IPython extension ------------------------------------------------------------------------
_REGISTERED: dict[int, Any] = {}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext recompile_cli``: register the ``%recompiles`` / ``%%recompiles`` magics."""
    magics = _magics_class()(ipython)
    ipython.register_magics(magics)
    _REGISTERED[id(ipython)] = magics


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext recompile_cli``: remove the magics again."""
    magics = _REGISTERED.pop(id(ipython), None)
    if magics is not None:
        for kind in ("line", "cell"):
            ipython.magics_manager.magics[kind].pop("recompiles", None)


def _magics_class() -> type:
    """The ``Magics`` subclass, built on first use so that IPython is imported only here.

    IPython's modules are used through ``Any`` (their annotations are partial, and the type
    checker may run where IPython is not installed)."""
    magic: Any = importlib.import_module("IPython.core.magic")
    arguments: Any = importlib.import_module("IPython.core.magic_arguments")
    argument = arguments.argument

    def recompiles(self: Any, line: str, cell: str | None = None) -> None:
        """Record a statement (``%recompiles [OPTIONS] STATEMENT``) or a cell
        (``%%recompiles [OPTIONS]``) and show the recompilation report."""
        __tracebackhide__ = True  # IPython leaves the magic's frames out of a cell's traceback
        usage = importlib.import_module("IPython.core.error").UsageError
        flags, code = _split_line(line) if cell is None else (line, cell)
        args = arguments.parse_argstring(self.recompiles, flags)  # UsageError when bad
        problem = _problem(args, code, cell is None)
        if problem is not None:  # a usage line, no traceback
            raise usage(f"{problem}. {_USAGE}")
        # a cell's body starts on the line after `%%recompiles`: keep its line numbers
        _run_recorded(self.shell, code if cell is None else "\n" + code, args.show_all,
                      args.max_compiles, args.keep_caches, args.save,
                      "%recompiles" if cell is None else "%%recompiles cell")

    # The decorators of IPython's magic_arguments example, applied innermost first.
    decorated: Any = magic.line_cell_magic(recompiles)
    for option in reversed([
            argument("--all", action="store_true", dest="show_all",
                     help="also list JAX's and libraries' internal functions"),
            argument("--max-compiles", type=int, default=None, metavar="N",
                     help="gate: fail when any of your functions compiles more than N times"),
            argument("--keep-caches", action="store_true",
                     help="keep JAX's in-memory caches (default: clear them first)"),
            argument("--save", default=None, metavar="PATH",
                     help="save the session as JSON (for `recompile-cli report PATH`)")]):
        decorated = option(decorated)
    decorated = arguments.magic_arguments()(decorated)
    magics_type: type = magic.magics_class(
        type("RecompileMagics", (magic.Magics,), {"recompiles": decorated,
                                                   "__doc__": "The %recompiles magics."}))
    return magics_type


_USAGE = ("Usage: %recompiles [--all] [--max-compiles N] [--keep-caches] [--save PATH] "
          "STATEMENT, or a %%recompiles cell with the same options")


def _problem(args: Any, code: str, line_magic: bool) -> str | None:
    """What is wrong with the magic's options or statement (checked before anything runs)."""
    if line_magic and code.lstrip().startswith("-"):
        return f"unknown option {terminal(code.split()[0])!r}"
    if not code.strip():
        return "nothing to record: give a statement, or use a %%recompiles cell"
    if args.max_compiles is not None:
        try:
            options.limit(args.max_compiles, "--max-compiles")
        except ValueError as exc:
            return str(exc)
    if args.save is not None and not args.save.strip():
        return "--save '': give a file path"
    return None


# Options of the line magic come before the statement: ``%recompiles --all f(x)``.
_LEADING_OPTION = re.compile(
    r"\s*(--all|--keep-caches|--max-compiles(?:=|\s+)\S+|--save(?:=|\s+)\S+)(?=\s|$)")


def _split_line(line: str) -> tuple[str, str]:
    """``--max-compiles 1 f(x)`` -> (``--max-compiles 1``, ``f(x)``): the leading options of
    the line magic, then the statement as written."""
    flags, position = [], 0
    while (match := _LEADING_OPTION.match(line, position)) is not None:
        flags.append(match.group(1))
        position = match.end()
    return " ".join(flags), line[position:].strip()


def _run_recorded(shell: Any, code: str, show_all: bool, max_compiles: int | None,
                  keep_caches: bool, save: str | None, label: str) -> None:
    """Run the code recorded and ALWAYS show the report of what was recorded, whatever the
    code did (an exception, ``sys.exit``, Ctrl-C or a kernel interrupt): the report first,
    then a ``--save`` that failed, then the code's own exception as IPython shows it."""
    __tracebackhide__ = True  # the cell's traceback shows the cell's frames, not these
    display: Any = importlib.import_module("IPython.display").display

    recording = record(label, keep_caches=keep_caches)
    compiled = _compile(shell, code)
    error: BaseException | None = None
    try:
        # the recording keeps the exception as the session's target_exception
        with recording, shell.builtin_trap:
            exec(compiled, shell.user_global_ns, shell.user_ns)
    except BaseException as exc:  # shown after the report, then re-raised
        error = exc
    with deferred_signals() as received:  # an interrupt now must not lose the report
        report: RecompileReport = recording.report
        if show_all:
            report = type(report)(report.report, show_all=True)
        if max_compiles is not None:
            report = report.check(max_compiles=max_compiles)
        shell.user_ns["_recompiles"] = report
        display(report)
        unsaved = _save(report, save)
    if unsaved is not None:
        if error is None:
            raise importlib.import_module("IPython.core.error").UsageError(unsaved)
        print(unsaved, file=sys.stderr)
    if error is not None:
        raise error
    if received.code is not None:
        raise KeyboardInterrupt


def _save(report: RecompileReport, path: str | None) -> str | None:
    """Save the session to ``--save PATH``; the message of a failure (shown after the report),
    or None."""
    if not path:
        return None
    try:
        report.save(path)
    except (OSError, RecompileError) as exc:
        return (f"recompile-cli: --save {terminal(path)}: {terminal(exc)} The report above "
                "was not saved; give a writable file path.")
    return None


def _compile(shell: Any, code: str) -> Any:
    """The code compiled under a file name that IPython knows as this cell's (``In[n]``), so
    that call sites, tracebacks and the report point at the cell's own lines."""
    transformed = shell.transform_cell(code)
    if code.startswith("\n") and not transformed.startswith("\n"):
        transformed = "\n" + transformed
    compiler = shell.compile
    try:
        filename = compiler.cache(transformed, _cell_number(shell), raw_code=code)
    except Exception:  # an IPython without CachingCompiler.cache
        filename = "<recompiles>"
    return compiler(transformed, filename, "exec")


def _cell_number(shell: Any) -> int:
    """The execution number of the cell running the magic: that of the innermost frame whose
    file IPython names ``In[n]`` (``shell.execution_count`` may already be the next one)."""
    frame = sys._getframe(1)
    while frame is not None:
        try:
            named = shell.compile.format_code_name(frame.f_code.co_filename)
        except Exception:
            named = None
        if named:
            digits = re.findall(r"\d+", str(named[1]))
            if digits:
                return int(digits[-1])
        frame = frame.f_back  # type: ignore[assignment]
    return int(shell.execution_count)
