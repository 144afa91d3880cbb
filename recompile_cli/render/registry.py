"""The report formats by name, and the format an output file's extension implies.

Kept free of heavy imports (no pandas, no JAX) so that the command line can offer the format
choices in ``--help`` without loading any renderer.
"""

from __future__ import annotations

FORMATS = ("table", "json", "markdown", "csv", "chrome-trace", "html")

_EXTENSIONS = {".trace.json": "chrome-trace", ".json": "json", ".txt": "table",
               ".md": "markdown", ".csv": "csv", ".html": "html", ".htm": "html"}


def guess_format(path: str | None) -> str | None:
    """The format implied by an output file's extension, if any."""
    if not path:
        return None
    for extension, name in _EXTENSIONS.items():
        if str(path).lower().endswith(extension):
            return name
    return None
