"""Notebook cells as IPython names them: the temporary file of a cell (``.../ipykernel_1/2.py``)
written as ``In[2]``, for the inline report (``RecompileReport._repr_html_``). IPython is never
imported here: the running shell, if any, is found in ``sys.modules``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

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
