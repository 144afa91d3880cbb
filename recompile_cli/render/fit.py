"""Terminal text that fits: the width to fit (``terminal_width``), every table of every report
laid out in it by one rule (``layout``, ``table``) and sentences wrapped to it (``wrap``); and
the columns every human format leaves out because they say nothing (``drop_empty``).

The rule is the columns' (``RULES``, by header, so that a new table whose columns are named as
the others' gets it too). A table that is too wide gives way in this order, losing as little as
it can:

1. locations lose their folders (``.../train_loop.py:51 (main)``), and values and lists wrap:
   values at `` -> `` (``f32[32,8] ->`` / ``f32[4,8]``), then at spaces; nothing is lost;
2. the columns that say least are left out (``DROPPED_FIRST``: the stage, the trace and lower
   seconds, then the call, then the seconds);
3. argument paths and causes wrap at their joints (``opt_state.hyperparams`` /
   ``['learning_rate']``): never cut, at any width;
4. names and values are cut in the middle (``analysis.shorten.middle``), locations lose their
   calling function, then every folder (``train_loop.py:51``: never less than the file name
   and line), targets every folder or package (``shapes.py:slow_function``), the widest first;
5. on a narrow terminal, all of these down to their header's width (an argument or a cause
   still whole, a line broken where it must; a target keeps its function name whole and loses
   the start of its module instead, ``...es.py:slow_function``).

Whatever a wrap or a cut frees goes back to the arguments, names and locations, then to the
columns left out. Cells come in already made inert (``render.escape``); numbers are
right-aligned, floats with three decimals.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from tabulate import tabulate

from recompile_cli.analysis.shorten import middle
from recompile_cli.render import escape

FALLBACK_WIDTH = 100  # a terminal whose size cannot be read
MIN_WIDTH = 40
_GAP = 2  # spaces between columns

Table = tuple[list[str], list[list[Any]]]


class Give(Enum):
    """How a column gets narrower than its widest cell."""

    KEEP = "keep"  # an argument path or a cause: wrapped at its joints, never cut
    WRAP = "wrap"  # values and lists: wrapped at `` -> ``, then at spaces; cut in the middle last
    END = "end"  # a location: keeps its end, the file name and line
    MIDDLE = "middle"  # a name: keeps both ends
    TARGET = "target"  # ``path/file.py:function``, ``package.module:Class.method``: keeps the
    # function, loses the module's folders or packages (then its start)


_MINIMUM = {Give.KEEP: 8, Give.WRAP: 12, Give.END: 18, Give.MIDDLE: 16, Give.TARGET: 18}


@dataclass(frozen=True, slots=True)
class Column:
    """How one column (named by its header) gives way."""

    give: Give | None = None
    minimum: int | None = None  # the default is ``_MINIMUM[give]``
    words: bool = False  # wrapped (``Give.WRAP``) but no word cut, but on a narrow terminal


# Every table's columns, by header; a text column not named here wraps (``Give.WRAP``), a
# number never gives.
RULES: dict[str, Column] = {
    "argument": Column(Give.KEEP), "cause": Column(Give.KEEP), "status": Column(Give.KEEP),
    "reason": Column(Give.KEEP),  # a slow call's cause
    "top causes": Column(Give.WRAP, words=True),  # ``first_compile 1, shape 2``
    "target": Column(Give.TARGET),  # the gate table's
    "function": Column(Give.MIDDLE), "owner": Column(Give.MIDDLE, 8),
    "call": Column(Give.END), "defined at": Column(Give.END), "line": Column(Give.END),
    "report": Column(Give.END),
}
# The columns left out when the table is still too wide, the first first.
DROPPED_FIRST = ("stage", "lower s", "trace s", "call", "seconds")


def terminal_width() -> int | None:
    """The columns to fit: ``COLUMNS`` when set, else the terminal's width when the output is a
    terminal; None (no limit) for a pipe or a file, which are read later at any width, or
    searched, and lose nothing that way."""
    if not (os.environ.get("COLUMNS", "").strip() or _is_terminal(sys.stdout)):
        return None
    return max(shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns, MIN_WIDTH)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def drop_empty(table: Table, zero: Iterable[str] = ()) -> Table:
    """The table without its columns that hold nothing (every cell missing or ``""``), and
    without the ``zero`` columns whose every value is 0 (e.g. ``errors``)."""
    headers, rows = table
    zero = set(zero)
    keep = [i for i, header in enumerate(headers)
            if not all(_blank(row[i]) or (header in zero and row[i] == 0) for row in rows)]
    if len(keep) == len(headers):
        return table
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _blank(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and value != value)


def table(table: Table, width: int | None, text: Callable[[Any], str] = escape.terminal,
          markdown: bool = False, zero: Iterable[str] = (), last: Sequence[str] = ()) -> str:
    """A table as a report shows it: without the columns that say nothing (``drop_empty``,
    ``zero`` as there), every text cell made inert by ``text``; on the terminal laid out in
    ``width`` columns (``layout``; None: no limit; ``last`` as its ``dropped_last``), in
    Markdown as a GitHub table, whose cells are never wrapped (a line break would end the
    row)."""
    headers, rows = drop_empty(table, zero)
    cells = [[escape.cell(value, text) for value in row] for row in rows]
    if not markdown:
        return layout((headers, cells), width, dropped_last=last)
    words = [i for i in range(len(headers)) if any(isinstance(row[i], str) and row[i]
                                                   for row in cells)]  # never parsed as numbers
    return tabulate(cells, headers=headers, tablefmt="github",
                    floatfmt=".3f", disable_numparse=words)


def layout(table: Table, width: int | None, columns: Mapping[str, Column] | None = None,
           dropped_last: Sequence[str] = ()) -> str:
    """The table as terminal text (headers, dashes, rows) no wider than ``width`` (None: no
    limit) where its columns can give way that far (``columns``, by header: ``RULES`` and
    these; a text column named in neither wraps, a number never gives). ``dropped_last``: the
    columns of this table left out last, in that order (after ``DROPPED_FIRST``'s others), as
    the cause table's cost column, whatever its name."""
    headers, rows = table
    texts = [[_text(value) for value in row] for row in rows]
    numeric = [bool(rows) and all(_is_number(row[i]) or _blank(row[i]) for row in rows)
               for i in range(len(headers))]
    natural = [max([len(h), *(len(row[i]) for row in texts)]) for i, h in enumerate(headers)]
    rules = {**RULES, **(columns or {})}
    specs = [rules.get(h, Column(None if numeric[i] else Give.WRAP))
             for i, h in enumerate(headers)]
    widths, shown = list(natural), list(range(len(headers)))
    if width is None:
        width = _total(widths, shown)

    def narrow(gives: tuple[Give, ...], floor: Callable[[int], int]) -> None:
        _narrow(widths, [i for i in shown if specs[i].give in gives],
                lambda i: max(len(headers[i]), floor(i)), _total(widths, shown) - width)

    def minimum(i: int) -> int:
        return _minimum(specs[i])

    def widest(measure: Callable[[str, Give | None], int]) -> Callable[[int], int]:
        return lambda i: max((measure(row[i], specs[i].give) for row in texts), default=0)

    narrow((Give.END, Give.TARGET), lambda i: max(minimum(i), widest(_file_only)(i)))
    # (nothing lost yet)
    narrow((Give.WRAP,), lambda i: max(minimum(i), widest(_longest_part)(i)))
    dropped = []
    for header in [*(h for h in DROPPED_FIRST if h not in dropped_last), *dropped_last]:
        if _total(widths, shown) <= width:
            break
        if header in headers and headers.index(header) in shown:
            dropped.append(headers.index(header))
            shown.remove(dropped[-1])
    narrow((Give.KEEP,), widest(_longest_part))  # still nothing lost
    # cuts from here on: a location or target keeps its file name (package) and line (function)
    narrow((Give.END, Give.TARGET), lambda i: max(minimum(i), widest(_bare_width)(i)))
    narrow((Give.WRAP, Give.MIDDLE), lambda i: max(
        minimum(i), widest(_longest_word)(i) if specs[i].words else 0))
    # a narrow terminal: names, values and locations down to their headers, a target to its
    # function (``...:slow_function``), the widest first; then anything, down to the headers
    narrow((Give.WRAP, Give.MIDDLE, Give.END, Give.TARGET),
           lambda i: widest(_function_width)(i) if specs[i].give is Give.TARGET else 0)
    narrow(tuple(Give), lambda i: 0)
    _settle(texts, headers, widths, natural, shown, specs, width, _CUT)
    for i in reversed(dropped):  # what a wrap freed brings back what was left out
        if _total(widths, shown) + _GAP + widths[i] > width:
            break
        shown = sorted([*shown, i])
    cells = _settle(texts, headers, widths, natural, shown, specs, width, (*_CUT, Give.WRAP))
    lines = [_line([headers[i] for i in shown], [widths[i] for i in shown],
                   [numeric[i] for i in shown]),
             _line(["-" * widths[i] for i in shown], [widths[i] for i in shown],
                   [False] * len(shown))]
    for row in cells:
        for k in range(max((len(cell) for cell in row), default=1)):
            lines.append(_line([cell[k] if k < len(cell) else "" for cell in row],
                               [widths[i] for i in shown], [numeric[i] for i in shown]))
    return "\n".join(lines)


_CUT = (Give.KEEP, Give.MIDDLE, Give.END, Give.TARGET)  # what gets back what a wrap frees, first


def _settle(texts: list[list[str]], headers: list[str], widths: list[int], natural: list[int],
            shown: list[int], specs: list[Column], width: int, gives: tuple[Give, ...]
            ) -> list[list[list[str]]]:
    """The cells fitted to ``widths``. A wrapped or cut column may need less than it was given
    (a wrap breaks at spaces and joints only): each column takes what its cells need, and what
    that frees goes back to the columns of ``gives`` that were wrapped or cut, in that order; a
    column that could not use what it was given (its next joint is further) is passed over."""
    given: dict[int, int] = {}  # what each column was last given
    for _ in range(2 * len(shown) + 2):  # each round fills the slack or passes a column over
        cells = [[_fit(row[i], widths[i], specs[i].give) for i in shown] for row in texts]
        for k, i in enumerate(shown):
            widths[i] = max([len(headers[i]), *(len(line) for row in cells for line in row[k])])
        stuck = {i for i, offered in given.items() if widths[i] < offered}
        slack = width - _total(widths, shown)
        grow = [i for give in gives for i in shown if specs[i].give is give
                and widths[i] < natural[i] and i not in stuck]
        if slack <= 0 or not grow:
            return cells
        for i in grow:
            more = min(slack, natural[i] - widths[i])
            widths[i] += more
            given[i] = widths[i]
            slack -= more
    return [[_fit(row[i], widths[i], specs[i].give) for i in shown] for row in texts]


def wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """A sentence wrapped at spaces to ``width``, later lines indented; a word longer than a
    line is broken."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False) or [""]


def _longest_part(text: str, give: Give | None) -> int:
    """The widest piece that a wrap of ``give`` keeps on one line."""
    pieces = _joints(text) if give is Give.KEEP else _split(text, _after_item)
    return max(len(piece.rstrip()) for piece in pieces)


def _longest_word(text: str, give: Give | None) -> int:
    return max((len(word) for word in text.split()), default=0)


def _file_only(location: str, give: Give | None = None) -> int:
    """The width of a location without its folders: ``.../train_loop.py:51 (main)``."""
    slash = location.split(" (", 1)[0].rfind("/")
    return len(location) if slash < 0 else len(location) - slash + 3


def _bare_width(text: str, give: Give | None = None) -> int:
    """The width of a location or target without its folders or packages: ``train_loop.py:51``,
    ``shapes.py:slow_function``, ``module:step``."""
    return len(_bare(text))


def _bare(text: str) -> str:
    """``text`` from after the last folder (or, for a dotted target, package) of its path: a
    location's calling function left out, a target's function kept."""
    where = text.split(" (", 1)[0]
    path, colon, rest = where.rpartition(":")
    if not colon:
        path, rest = where, ""
    cut = path.rfind("/") if "/" in path else path.rfind(".") if _dotted(path, rest) else -1
    return where[cut + 1:]


def _function_width(text: str, give: Give | None = None) -> int:
    """The width of a target cut to its function, ``...:slow_function``."""
    module, colon, function = text.rpartition(":")
    return len(function) + 4 if colon and module else 0


def _dotted(module: str, function: str) -> bool:
    """Whether ``module:function`` is a target named by a dotted module (``pkg.mod:step``), not
    a file (``train.py:step``, ``train.py:51``)."""
    return bool(function) and not function.isdigit() and not module.endswith(".py")


def _minimum(spec: Column) -> int:
    if spec.minimum is not None:
        return spec.minimum
    return _MINIMUM[spec.give] if spec.give else 0


def _total(widths: Sequence[int], shown: Sequence[int]) -> int:
    return sum(widths[i] for i in shown) + _GAP * (len(shown) - 1)


def _narrow(widths: list[int], candidates: list[int], floor: Callable[[int], int],
            excess: int) -> None:
    """Take ``excess`` characters away from the ``candidates``, one at a time from the
    widest, none below its ``floor``."""
    if excess <= 0:
        return
    floors = {i: floor(i) for i in candidates}
    while excess > 0:
        open_ = [i for i in candidates if widths[i] > floors[i]]
        if not open_:
            return
        widest = max(open_, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1


def _fit(text: str, width: int, give: Give | None) -> list[str]:
    """A cell's lines in ``width`` characters."""
    if len(text) <= width or give is None:
        return [text]
    if give is Give.KEEP:
        return _packed(_joints(text), width)
    if give is Give.WRAP:
        return [middle(part, width) for line in _wrapped(text, width)
                for part in (textwrap.wrap(line, width, break_long_words=False,
                                           break_on_hyphens=False) or [line])]
    if give is Give.END:
        return [_location(text, width)]
    if give is Give.TARGET:
        return [_target(text, width)]
    return [middle(text, width)]


def _location(text: str, width: int) -> str:
    """A location in ``width``: whole folders left out (``.../train_loop.py:51 (main)``), then
    the calling function, then every folder (``train_loop.py:51``), then the start of what is
    left."""
    where = text.split(" (", 1)[0]
    for shown in (text, where):
        slash = shown.find("/", len(shown) - (width - 3), len(where))
        if slash > 0:
            return "..." + shown[slash:]
    if len(where) <= width:
        return where
    bare = _bare(text)
    return bare if len(bare) <= width else middle(bare, width, end=1.0)


def _target(text: str, width: int) -> str:
    """A target in ``width``: its function whole, its module shortened from the start, at a
    folder (``.../shapes.py:slow_function``) or package (``...models.mlp:step``), then to the
    file or module alone (``shapes.py:slow_function``), then cut (``...es.py:slow_function``);
    the function itself is cut only where nothing else is left. A text without a function (a
    script, a suite) is shortened as a location."""
    if len(text) <= width:
        return text
    module, colon, function = text.rpartition(":")
    if not colon or not module or function.split(" (", 1)[0].isdigit():
        return _location(text, width)
    sep = "." if _dotted(module, function) else "/"
    room = width - 3 - len(colon + function)
    cut = module.find(sep, len(module) - room) if room > 0 else -1
    if cut > 0:
        return "..." + module[cut + (sep == "."):] + colon + function
    bare = _bare(text)
    if len(bare) <= width:
        return bare
    if len(function) + 4 <= width:
        return middle(text, width, end=1.0)
    return middle(function, width)


# The pieces of an argument path or a cause: ``[key]`` (quotes kept whole: ``['a.b']``),
# ``.name``, blanks, and runs of anything else (any one character that starts none of these).
_TOKEN = re.compile(r"""\[(?:'[^']*'|"[^"]*"|[^\]'"])*\]|\.[^.\[\s]*|\s+|[^.\[\s]+|[\s\S]""")


def _joints(text: str) -> list[str]:
    """``text`` in the pieces a wrap keeps whole, which join to it again: a path breaks before
    ``.name`` and ``[key]`` (``opt_state`` / ``.hyperparams`` / ``['learning_rate']``), a
    sentence after its blanks (``error: `` / ``TypeError``)."""
    pieces: list[str] = []
    for token in _TOKEN.findall(text):
        if pieces and (token.isspace() or not (token.startswith((".", "["))
                                               or pieces[-1][-1].isspace())):
            pieces[-1] += token
        else:
            pieces.append(token)
    return pieces or [text]


def _packed(pieces: list[str], width: int) -> list[str]:
    """Pieces joined into lines of ``width``; a piece longer than a line is broken, never cut."""
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1] + piece.rstrip()) <= width:
            lines[-1] += piece
            continue
        while len(piece.rstrip()) > width:
            lines.append(piece[:width])
            piece = piece[width:]
        lines.append(piece)
    return [line.rstrip() for line in lines if line.strip()] or [""]


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` in lines of ``width``, broken at spaces outside brackets only, so that
    ``f32[1] ... f32[40] (40 values)`` keeps ``(40 values)`` whole: after the arrow of a change
    (``f32[32,8] ->`` / ``f32[4,8]``) and after the commas of a list first, then at any such
    space; a longer part has a line of its own."""
    if len(text) <= width:
        return [text]
    items = _packed_words(_split(text, _after_item), width)
    return [line for item in items
            for line in ([item] if len(item) <= width else _packed_words(_split(item), width))]


def _after_item(before: str) -> bool:
    """Whether a wrap of values and lists may break after ``before``: after ``->`` or ``,``."""
    return before.endswith(("->", ","))


def _split(text: str, where: Callable[[str], bool] = lambda before: True) -> list[str]:
    """``text`` split at the spaces outside brackets whose text before them is ``where``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if char == " " and depth <= 0 and where(text[start:i]):
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _packed_words(parts: list[str], width: int) -> list[str]:
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += " " + part
        else:
            lines.append(part)
    return lines


def _line(cells: Sequence[str], widths: Sequence[int], right: Sequence[bool]) -> str:
    return (" " * _GAP).join(cell.rjust(w) if r else cell.ljust(w)
                             for cell, w, r in zip(cells, widths, right, strict=True)).rstrip()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any) -> str:
    if _blank(value):
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
