"""Reading YAML documents, and validation errors that name the file, the line and the field.

Shared by the spec and budget-file validators: raise ``Invalid(where, message)`` with the path
of keys and indices to the bad field; ``Invalid.located`` turns it into the user's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class Invalid(Exception):
    def __init__(self, where: tuple, message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message

    def located(self, path: Any, text: str | None = None) -> str:
        line = line_of(text, self.where) if text is not None else None
        at = f", line {line}" if line else ""
        return f"{path}{at}, field {field_name(self.where)}: {self.message}"


def read_text(path: Path, error: type[Exception], what: str, hint: str = "") -> str:
    """The file's text, or ``error`` saying which file could not be read and why."""
    try:
        return path.read_text()
    except OSError as exc:
        raise error(f"Cannot read the {what} {path}: {exc.strerror or exc}.{hint}") from None


def load_yaml(path: Path, text: str, error: type[Exception]) -> Any:
    """``yaml.safe_load`` of ``text``, or ``error`` naming the file and line of a syntax error."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{path}{where}: not valid YAML ({problem}). Fix the syntax and run "
                    "again.") from None


def only_keys(raw: dict, allowed: tuple, where: tuple) -> None:
    for key in raw:
        if key not in allowed:
            raise Invalid(where + (key,), f"unknown field {key!r}; allowed here: "
                                          + ", ".join(allowed))


def field_name(where: tuple) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def line_of(text: str, where: tuple) -> int | None:
    """The 1-based line of the deepest node along ``where`` in the YAML source."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in where:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line
