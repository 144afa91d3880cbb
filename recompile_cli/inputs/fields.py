"""Validation errors that name the file, the line and the field of a spec or budget file.

A validator raises ``Invalid(where, message)`` with the path of keys and indices to the bad
field; ``Invalid.located`` turns it into the user's message. Kept apart from the YAML reader, so
that code which only validates (jit options, budgets already read) does not load PyYAML.
"""

from __future__ import annotations

from typing import Any

Where = tuple[Any, ...]  # the path of keys and indices to a field


class Invalid(Exception):
    """One bad field: where it is and what is wrong with it."""

    def __init__(self, where: Where, message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message

    def located(self, path: Any, text: str | None = None) -> str:
        """``path, line N, field a.b[2]: message`` (the line when the YAML text is given)."""
        line = None
        if text is not None:
            # PyYAML: only a message with the file's text needs it (validators do not)
            from recompile_cli.inputs.yaml_doc import line_of

            line = line_of(text, self.where)
        at = f", line {line}" if line else ""
        return f"{path}{at}, field {field_name(self.where)}: {self.message}"


def only_keys(raw: dict[Any, Any], allowed: tuple[str, ...], where: Where) -> None:
    """``Invalid`` for the first key of ``raw`` that is not ``allowed``."""
    for key in raw:
        if key not in allowed:
            raise Invalid((*where, key), f"unknown field {key!r}; allowed here: "
                                          + ", ".join(allowed))


def field_name(where: Where) -> str:
    """``targets[0].budgets.train_step`` for ('targets', 0, 'budgets', 'train_step')."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"
