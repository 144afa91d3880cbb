"""User-given option values, checked once for every front door (the CLI, the Python API, the
guard and the notebook magics): the same types, the same refusals, the same words.

A single name where a list of names is expected is one item, never a list of its characters
(``functions="train_step"``, ``fail_on="shape"``). A wrong type is a ``TypeError`` and a wrong
value a ``ValueError``, each naming the parameter; the command line turns them into exit 2.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from recompile_cli.session.model import CauseCode


def names(value: str | Iterable[str] | None, parameter: str) -> tuple[str, ...] | None:
    """Function names or globs: ``None`` (not given), one text, or an iterable of texts."""
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else _items(value, parameter)
    for item in items:
        if not isinstance(item, str) or not item:
            raise TypeError(f"{parameter}: {item!r} is not a function name or glob; pass a "
                            "name, e.g. 'train_step', or a list of names")
    return items


def cause_codes(value: str | CauseCode | Iterable[str | CauseCode] | None, parameter: str
                ) -> tuple[CauseCode, ...]:
    """Cause codes: one code (``"shape"``), a comma-separated text (``"shape,dtype"``, as on the
    command line) or an iterable of codes; an unknown one is a ``ValueError`` naming them all."""
    if value is None:
        return ()
    if isinstance(value, str):
        items: tuple[Any, ...] = tuple(part.strip() for part in value.split(",") if part.strip())
    else:
        items = _items(value, parameter)
    known = [code.value for code in CauseCode]
    unknown = [item for item in items if not isinstance(item, str) or item not in known]
    if unknown:
        raise ValueError(f"{parameter}: unknown cause code(s) "
                         f"{', '.join(map(repr, unknown))}; use {', '.join(known)}")
    return tuple(CauseCode(item) for item in items)


def _items(value: Any, parameter: str) -> tuple[Any, ...]:
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{parameter}: {value!r} is not a list; pass one value or a list of "
                        "them") from None
