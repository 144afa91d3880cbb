"""Jupyter / IPython: the inline HTML report and the ``%recompiles`` magics.

``%load_ext recompile_cli`` registers two magics that record with ``recompile_cli.record()``
(the same recorder, session and analysis as the command line) and display the report:

* ``%recompiles STATEMENT`` records one line;
* ``%%recompiles [--all] [--max-compiles N] [--keep-caches] [--save PATH]`` records a cell.
  ``--max-compiles`` evaluates the CLI's gate on every user function and shows the violations
  first, in red; ``--save`` writes the session for ``recompile-cli report``.

The last report is also stored in the user namespace as ``_recompiles``.

``report_html`` builds the fragment shown inline (``RecompileReport._repr_html_``): a summary,
gate violations, the cost-ranked causes, suggestions, the functions table and the events (folded).
It is self-contained (inline styles scoped to ``.recompile-cli``, no script, no network), and every
value from the session goes through ``render.escape.html``. IPython is imported only when the
extension is loaded.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from recompile_cli.render.escape import html as _escape
from recompile_cli.render.escape import is_missing

if TYPE_CHECKING:
    from recompile_cli.analysis.report import Report
    from recompile_cli.api import RecompileReport
    from recompile_cli.gate.evaluate import Violation

__all__ = ["load_ipython_extension", "report_html", "unload_ipython_extension"]

_STYLE = """<style>
.recompile-cli { font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; }
.recompile-cli h4 { font-size: 13px; margin: 14px 0 4px; }
.recompile-cli .rc-title { font-weight: 600; font-size: 14px; }
.recompile-cli .rc-env { color: #666; font-weight: normal; }
.recompile-cli .rc-summary { margin: 2px 0 6px; }
.recompile-cli .rc-summary b { font-size: 15px; }
.recompile-cli table.rc-table { border-collapse: collapse; margin: 2px 0; }
.recompile-cli table.rc-table th, .recompile-cli table.rc-table td { border: 1px solid #ddd;
  padding: 2px 7px; text-align: left; vertical-align: top; }
.recompile-cli table.rc-table th { background: #f4f4f4; }
.recompile-cli table.rc-table td { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.recompile-cli table.rc-table td.num { text-align: right; }
.recompile-cli .rc-cause { font-weight: 600; color: #8a3b00; }
.recompile-cli .rc-fail { border: 2px solid #b00020; background: #fdecee; color: #7a0016;
  padding: 6px 10px; margin: 6px 0; border-radius: 4px; }
.recompile-cli .rc-fail b { color: #b00020; }
.recompile-cli .rc-ok { color: #1b5e20; }
.recompile-cli .rc-error { color: #b00020; }
.recompile-cli .rc-muted { color: #666; }
.recompile-cli ul { margin: 2px 0; padding-left: 20px; }
</style>"""


def report_html(report: Report, show_all: bool = False, violations: Sequence[Violation] = (),
                relabel: Callable[[str], str] | None = None) -> str:
    """The inline HTML fragment of a report (see the module docstring).

    Args:
        report: the analysed session.
        show_all: also list JAX's and libraries' internal functions.
        violations: gate violations, shown first.
        relabel: applied to every text before it is escaped; by default, inside IPython, the
            temporary file of a notebook cell becomes its ``In[n]`` label (``notebook_labels``).
    """
    from recompile_cli.render.table import cause_rows, event_rows, function_rows, hidden_functions

    label = relabel or notebook_labels()

    def escape(value: Any) -> str:
        return _escape(label(value) if isinstance(value, str) else value)

    session, totals = report.session, report.totals
    env = session.environment
    parts = [f'<div class="recompile-cli">{_STYLE}',
             f'<div class="rc-title">recompile-cli: {escape(session.target)} '
             f'<span class="rc-env">(jax {escape(env.jax_version)}, {escape(env.backend)}, '
             f"hook mode {escape(env.hook_mode)})</span></div>",
             f'<div class="rc-summary"><b>{escape(totals["compiles"])}</b> compiles, '
             f'<b>{escape(totals["traces"])}</b> traces, <b>{escape(totals["errors"])}</b> '
             f"errors; compile {escape(_seconds(totals['compile_seconds']))} s of "
             f"{escape(_seconds(totals['wall_seconds']))} s wall</div>"]
    if violations:
        items = "".join(f"<li>{escape(v.message)}</li>" for v in violations)
        parts.append(f'<div class="rc-fail"><b>Gate FAILED</b> ({len(violations)} '
                     f"violation{'s' if len(violations) != 1 else ''})<ul>{items}</ul></div>")
    if session.target_exception:
        parts.append(f'<p class="rc-error">The recorded code raised: '
                     f"{escape(session.target_exception)}</p>")
    if not report.cause_table.empty:
        headers, rows = cause_rows(report)
        parts += ["<h4>Re-compilations by cost</h4>", _table(headers, rows, escape, 1)]
    elif not violations:
        parts.append('<p class="rc-ok">No re-compilation of your functions.</p>')
    if report.suggestions:
        parts.append("<h4>Suggestions</h4><ul>" + "".join(
            f"<li><b>{escape(s.function)}</b>: {escape(s.message)}</li>"
            for s in report.suggestions) + "</ul>")
    headers, rows = function_rows(report, show_all)
    parts.append("<h4>Functions</h4>")
    parts.append(_table(headers, rows, escape) if rows else
                 '<p class="rc-muted">(no user function was traced or compiled)</p>')
    if not show_all:
        parts += [f'<div class="rc-muted">{escape(line)}</div>'
                  for line in hidden_functions(report)]
    headers, rows = event_rows(report, show_all)
    if rows:
        parts.append(f"<details><summary><b>Recompilation events</b> ({len(rows)})</summary>"
                     f"{_table(headers, rows, escape, 6)}</details>")
    if session.warnings:
        parts.append("<h4>Warnings</h4><ul>" + "".join(
            f"<li>{escape(w)}</li>" for w in session.warnings) + "</ul>")
    parts.append("</div>")
    return "\n".join(parts)


def _seconds(value: Any) -> str:
    try:
        return f"{float(value):.3f}"
    except (TypeError, ValueError):
        return ""


def _table(headers: list[str], rows: list[list[Any]], escape: Callable[[Any], str],
           cause_column: int | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v, escape, i == cause_column)
                                    for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f'<table class="rc-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _cell(value: Any, escape: Callable[[Any], str], cause: bool = False) -> str:
    if is_missing(value):
        return "<td></td>"
    if isinstance(value, float):
        return f'<td class="num">{escape(f"{value:.3f}")}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<td class="num">{escape(value)}</td>'
    return f'<td class="rc-cause">{escape(value)}</td>' if cause else f"<td>{escape(value)}</td>"


# A notebook cell's code lives in a temporary file (``.../ipykernel_123/4567.py``).
_CELL_FILE = re.compile(r"[^\s()'\"]*ipykernel_\d+[/\\]\d+\.py(?::(?P<line>\d+))?")


def notebook_labels() -> Callable[[str], str]:
    """Inside IPython, a function that writes the temporary files of notebook cells as
    ``In[3]`` (``In[3], line 2`` for ``file:line``), as IPython's tracebacks do; else identity."""
    shell = None
    if "IPython" in sys.modules:
        try:
            shell = sys.modules["IPython"].get_ipython()
        except Exception:
            shell = None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if name_of is None:
        return _same

    def relabel(text: str) -> str:
        def cell(match: re.Match[str]) -> str:
            path = match.group(0).rsplit(":", 1)[0] if match["line"] else match.group(0)
            try:
                named = name_of(path)
            except Exception:
                named = None
            if not named:
                return match.group(0)
            return str(named[1]) + (f", line {match['line']}" if match["line"] else "")

        return _CELL_FILE.sub(cell, text) if "ipykernel_" in text else text

    return relabel


def _same(text: str) -> str:
    return text


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
        options, code = _split_line(line) if cell is None else (line, cell)
        args = arguments.parse_argstring(self.recompiles, options)
        if not code.strip():
            raise ValueError("nothing to record: use `%recompiles STATEMENT` or a "
                             "`%%recompiles` cell")
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


# Options of the line magic come before the statement: ``%recompiles --all f(x)``.
_LEADING_OPTION = re.compile(
    r"\s*(--all|--keep-caches|--max-compiles(?:=|\s+)\S+|--save(?:=|\s+)\S+)(?=\s|$)")


def _split_line(line: str) -> tuple[str, str]:
    """``--max-compiles 1 f(x)`` -> (``--max-compiles 1``, ``f(x)``): the leading options of
    the line magic, then the statement as written."""
    options, position = [], 0
    while (match := _LEADING_OPTION.match(line, position)) is not None:
        options.append(match.group(1))
        position = match.end()
    return " ".join(options), line[position:].strip()


def _run_recorded(shell: Any, code: str, show_all: bool, max_compiles: int | None,
                  keep_caches: bool, save: str | None, label: str) -> None:
    from recompile_cli.api import record

    display: Any = importlib.import_module("IPython.display").display

    recording = record(label, keep_caches=keep_caches)
    compiled = _compile(shell, code)
    error: Exception | None = None
    try:
        # the recording keeps the exception as the session's target_exception
        with recording, shell.builtin_trap:
            exec(compiled, shell.user_global_ns, shell.user_ns)
    except Exception as exc:  # shown after the report, as IPython would show it
        error = exc
    if save:
        recording.report.save(save)
    report: RecompileReport = recording.report
    if show_all:
        report = type(report)(report.report, show_all=True)
    if max_compiles is not None:
        report = report.check(max_compiles=max_compiles)
    shell.user_ns["_recompiles"] = report
    display(report)
    if error is not None:
        raise error


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
