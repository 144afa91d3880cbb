"""Keeping untrusted text inert in every output format.

Function names, static values, argument paths, file paths, warnings and exception messages come
from the profiled program, or from a saved session someone else made. Every renderer passes
them through one of these functions at the point where they enter its format, so that no value
can colour or move the terminal, add a Markdown row or block, start a spreadsheet formula, end a
GitHub workflow command, break XML, or add HTML.

Control characters (C0 ``\\x00``-``\\x1f``, DEL ``\\x7f``, C1 ``\\x80``-``\\x9f``) and the
bidirectional overrides are shown as Python-style escapes (``\\x1b``, ``\\n``, ``\\u202e``) in
text meant for people; a missing value (``None``, ``NaN``, ``pd.NA``) is an empty string.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable
from html import escape as _html_escape
from typing import Any

# C0, DEL, C1, and the Unicode bidirectional controls ("Trojan Source").
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def is_missing(value: Any) -> bool:
    """``None``, a float NaN, or pandas' ``NA``/``NaT`` (anything not equal to itself)."""
    if value is None:
        return True
    try:
        return bool(value != value)  # true only of NaN-like values
    except (TypeError, ValueError):  # pd.NA raises in bool(); arrays are not missing
        return type(value).__name__ in ("NAType", "NaTType")


def text(value: Any) -> str:
    """A value as text: ``""`` when missing."""
    return "" if is_missing(value) else str(value)


def controls(value: Any) -> str:
    """Text with every control character shown as an escape, e.g. ESC as ``\\x1b``."""
    return _CONTROL.sub(_show, text(value))


def _show(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


# -- terminal ---------------------------------------------------------------------------------

def terminal(value: Any) -> str:
    """Text for a terminal, one line: no escape sequences, bells or line breaks reach it."""
    return controls(value)


def cell(value: Any, escape: Callable[[Any], str] = terminal) -> Any:
    """A table cell: numbers stay numbers (tabulate aligns them), missing values become ``""``
    and text goes through ``escape``."""
    if is_missing(value):
        return ""
    if isinstance(value, numbers.Number):
        return value
    return escape(value)


# -- Markdown ---------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(
    r"[\\|`&<*~@]|(?<!-)>"  # escapes, cells, code, entities, HTML, emphasis, e-mail autolinks
    r"|\](?=[(\[:])"  # a link, an image or a link definition: [x](url), ![x](url), [x]: url
    r"|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # _emphasis_ (train_step stays as it is)
    r"|(?<=:)/(?=/)|(?i:(?<=www))\.")  # GitHub's autolinks of http://... and www....
_MD_REPLACE = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}  # the rest: a backslash before it
# What starts a block where a line (or a list item's text) starts, besides what is escaped
# everywhere (``* _ ` ~ | < >``): a heading (``#``), a list or a rule (``-``, ``+``, ``- -``), a
# setext underline (``=``), a numbered list ("1. x", "1) x"; not "0.10.2").
_MD_BLOCK_START = re.compile(r"[#+=-]|(\d{1,9})[.)](?=\s|$)")
_MD_HEADING_END = re.compile(r"(?<=\s)#(?=#*\s*$)")  # what a heading would take as its closing #s


def markdown(value: Any) -> str:
    """Text for a GitHub-flavoured Markdown table cell, bullet or line, shown literally: no
    link, image, autolink, HTML or emphasis, and no block (rule, heading, list, quote, table
    row, code block) can come from it, wherever it starts.

    ``&``, ``<`` and ``>`` become entities (``->`` arrows stay as they are: with ``<`` escaped
    no tag can open); backslashes, ``|``, backticks, ``*``, ``~``, ``@``, a ``]`` that would
    close a link, an ``_`` at a word's edge, the ``/`` of ``://`` and the ``.`` of ``www.`` are
    backslash-escaped (shown as they are), as is a ``#`` after a blank at the end (a heading
    would drop it as its closing sequence); a leading ``#``, ``-``, ``+``, ``=`` or ``1.`` gets
    a backslash (``- -`` is no rule, ``- x`` no list) and leading spaces become ``&#32;`` (no
    indented code); and control characters, line breaks included, are shown as escapes so a
    value can never start a row or a block of its own.
    """
    return _block_start(_markdown_inline(controls(value)))


def _markdown_inline(shown: str) -> str:
    shown = _MD_SPECIAL.sub(lambda m: _MD_REPLACE.get(m.group(), "\\" + m.group()), shown)
    return _MD_HEADING_END.sub(r"\\#", shown)


def _block_start(shown: str) -> str:
    """Markdown that starts no block where it starts a line or a bullet's text: leading
    spaces as ``&#32;`` (no indented code), a backslash before what would start one
    (``_MD_BLOCK_START``)."""
    spaces = len(shown) - len(shown.lstrip(" "))
    if spaces:
        return "&#32;" * spaces + shown[spaces:]
    start = _MD_BLOCK_START.match(shown)
    if start is None:
        return shown
    digits = start.group(1) or ""
    return f"{digits}\\{shown[len(digits):]}"


def markdown_prose(value: Any) -> str:
    """Markdown for a sentence of recompile-cli's own that quotes values in `code spans` (the
    suggestions): paired backticks stay code spans, whose content is literal in Markdown; the
    text between them is escaped as by ``markdown``. An odd number of backticks means a value
    brought its own, and then every backtick is escaped."""
    shown = controls(value)
    parts = shown.split("`")
    if len(parts) % 2 == 0:
        return markdown(shown)
    return _block_start("`".join(part if i % 2 else _markdown_inline(part)
                                 for i, part in enumerate(parts)))


# -- CSV --------------------------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def csv_text(value: Any) -> Any:
    """A CSV cell that no spreadsheet runs as a formula (OWASP CSV injection): text starting
    with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a leading ``'``. Numbers, and
    text that is just a number (``-1``), are left alone."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) \
            and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


# -- printed text -------------------------------------------------------------------------------

_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                                  "\u2066-\u2069]")
_BREAKS = "\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"  # where str.splitlines ends a line
_LINE_START = f"(?:^|(?<=[{_BREAKS}]))[^\\S{_BREAKS}]*"  # then blanks, as lstrip takes them
_COMMAND_LINE = re.compile(f"({_LINE_START}):(?=:)")
_CSV_COMMAND_LINE = re.compile(f"({_LINE_START}::[^,{_BREAKS}]*)")


def terminal_lines(value: Any) -> str:
    """Text of several lines for a terminal (a CSV table, a traceback): line breaks kept, every
    other control character shown as an escape."""
    return _CONTROL_BUT_NEWLINE.sub(_show, text(value))


def no_workflow_commands(value: str, csv: bool = False) -> str:
    """Text printed to stdout or stderr in which no line starts a GitHub workflow command
    (``::error::...``): the line's first colon gets a backslash, or, in CSV, the line's first
    field is quoted (the same data for any CSV reader)."""
    if "::" not in value:
        return value
    if csv:
        return _CSV_COMMAND_LINE.sub(r'"\1"', value)
    return _COMMAND_LINE.sub(r"\1\\:", value)


# -- GitHub Actions workflow commands ----------------------------------------------------------

def github_data(value: Any) -> str:
    """The message of a workflow command (``::error ...::MESSAGE``): one line, always. GitHub
    decodes ``%25``, ``%0D`` and ``%0A``; other control characters are shown as escapes."""
    encoded = text(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return controls(encoded)


def github_property(value: Any) -> str:
    """A property value of a workflow command (``file=...,line=...``)."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")


# -- XML --------------------------------------------------------------------------------------

# Characters XML 1.0 forbids even as character references; ElementTree writes them raw.
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml(value: Any) -> str:
    """Text for an XML attribute or element (ElementTree escapes ``<&>"`` itself): characters
    XML 1.0 cannot hold are shown as escapes, e.g. ``\\x1b``."""
    return _XML_FORBIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) <= 0xFF
                              else f"\\u{ord(m.group()):04x}", text(value))


# -- HTML -------------------------------------------------------------------------------------

def html(value: Any) -> str:
    """Text for HTML content or a quoted attribute: ``<>&"'`` escaped, controls shown."""
    return _html_escape(controls(value), quote=True)


def html_prose(value: Any) -> str:
    """HTML for a sentence of recompile-cli's own that quotes values in `code spans` (advice):
    paired backticks become ``<code>`` elements around text escaped as by ``html``, so that no
    value becomes markup. An odd number of backticks means a value brought its own, and then
    every backtick is shown as it is."""
    parts = html(value).split("`")
    if len(parts) % 2 == 0:
        return "`".join(parts)
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


# -- Python source (generated warm-up plans) ----------------------------------------------------

def python_comment(value: Any) -> str:
    """Text for a ``#`` comment of generated Python: one line (no line break, carriage return
    or other control character ends the comment early; bidi overrides are shown too)."""
    return controls(value)


def python_string(value: Any) -> str:
    """A Python string literal of the text (``repr``): data in a generated program is only
    ever a string, never code."""
    return repr(text(value))


# -- JSON -------------------------------------------------------------------------------------
