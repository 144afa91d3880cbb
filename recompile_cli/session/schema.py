"""The saved-session schema: each field's type, checked on load, and the path of a bad field.

``session.decode`` checks every document it loads against ``SESSION`` (``session.files``, for
an events log, against ``HEADER``, ``EVENT_RECORD`` and ``END_RECORD``); a wrong type raises
``Bad``, which the loader turns into a ``SessionFileError`` naming the file and the field path
(``events[3].signature.leaves['x'].shape``). ``value_types`` gives the fast reader
(``session.columns``) the exact types that pass each field's check.
"""

from __future__ import annotations

from typing import Any

Where = tuple[Any, ...]  # the path of keys and indices to a field


class Key(str):
    """A mapping key in a field path, shown as ``['key']``."""


class Bad(Exception):
    def __init__(self, where: Where, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.where, self.message, self.line = where, message, line

    def message_for(self, source: str, advice: str = "") -> str:
        at = f", line {self.line}" if self.line is not None else ""
        field = f", field {path_name(self.where)}" if self.where else ""
        advice = advice or ("the session file is damaged or was not written by recompile-cli; "
                            "record the session again (--save FILE.json)")
        return f"{source}{at}{field}: {self.message}. {advice[0].upper()}{advice[1:]}."


def path_name(where: Where) -> str:
    """``events[3].signature.leaves['x'].shape`` for ('events', 3, 'signature', ...)."""
    text = ""
    for part in where:
        if isinstance(part, Key):
            text += f"[{str(part)!r}]"
        elif isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


def _describe(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    shown = repr(value) if not isinstance(value, (dict, list)) else ""
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return names.get(type(value), type(value).__name__) + (f" ({shown})" if shown else "")


class _Type:
    name = ""

    def check(self, value: Any, where: Where) -> None:
        raise NotImplementedError

    def fail(self, value: Any, where: Where) -> None:
        raise Bad(where, f"must be {self.name}, got {_describe(value)}")


class _Scalar(_Type):
    def __init__(self, types: tuple[type, ...], name: str) -> None:
        self.types, self.name = types, name

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, self.types) or (isinstance(value, bool)
                                                 and bool not in self.types):
            self.fail(value, where)


class _Nullable(_Type):
    def __init__(self, inner: _Type) -> None:
        self.inner, self.name = inner, f"{inner.name} or null"

    def check(self, value: Any, where: Where) -> None:
        if value is not None:
            try:
                self.inner.check(value, where)
            except Bad as bad:
                if bad.where == where:
                    self.fail(value, where)
                raise


class _Anything(_Type):
    def check(self, value: Any, where: Where) -> None:
        pass


class _ListOf(_Type):
    def __init__(self, item: _Type) -> None:
        self.item, self.name = item, f"a list of {item.name}"

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, list):
            self.fail(value, where)
        for i, item in enumerate(value):
            self.item.check(item, (*where, i))


class _DictOf(_Type):
    def __init__(self, item: _Type) -> None:
        self.item, self.name = item, f"an object of {item.name}"

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, dict):
            self.fail(value, where)
        for key, item in value.items():
            self.item.check(item, (*where, Key(key)))


class _Record(_Type):
    def __init__(self, name: str, required: dict[str, _Type], optional: dict[str, _Type],
                 open_: bool = False) -> None:
        self.name, self.required, self.optional, self.open = name, required, optional, open_

    def check(self, value: Any, where: Where) -> None:
        if not isinstance(value, dict):
            self.fail(value, where)
        for key in self.required:
            if key not in value:
                raise Bad(where, f"the field {key!r} is missing from {self.name}")
        for key, item in value.items():
            kind = self.required.get(key) or self.optional.get(key)
            if kind is None:
                if self.open:
                    continue
                known = ", ".join([*self.required, *self.optional])
                raise Bad((*where, key), f"unknown field {key!r} in {self.name} (known: "
                                           f"{known})")
            kind.check(item, (*where, key))


def value_types(kind: _Type) -> frozenset[type] | None:
    """The exact types that a decoded JSON value of ``kind`` may have (``None``: any type); what
    a list or an object holds is not looked at. A value of one of these types passes ``kind``'s
    own check, and any other value fails it."""
    if isinstance(kind, _Scalar):
        return frozenset(kind.types)  # exact: ``bool`` only where it is named
    if isinstance(kind, _Nullable):
        inner = value_types(kind.inner)
        return None if inner is None else inner | {type(None)}
    if isinstance(kind, (_Record, _DictOf)):
        return frozenset((dict,))
    if isinstance(kind, _ListOf):
        return frozenset((list,))
    return None


def field_types(record: _Record) -> dict[str, frozenset[type] | None]:
    """``value_types`` of each field of ``record``, required and optional."""
    return {name: value_types(kind) for name, kind in {**record.required,
                                                        **record.optional}.items()}


STRING = _Scalar((str,), "a string")
INTEGER = _Scalar((int,), "an integer")
NUMBER = _Scalar((int, float), "a number")
BOOLEAN = _Scalar((bool,), "true or false")
ANY = _Anything()
LEAF = _Record("a leaf (an array's abstract value)", {"shape": _ListOf(INTEGER), "dtype": STRING},
               {"weak_type": BOOLEAN, "sharding": _Nullable(STRING)})
SIGNATURE = _Record("a signature", {}, {
    "leaves": _DictOf(LEAF), "static": _DictOf(STRING), "structure": _DictOf(STRING),
    "positional": INTEGER, "keywords": _ListOf(STRING), "context": _DictOf(STRING),
    "function_id": INTEGER, "function_kind": STRING})
CHANGE = _Record("a lowering change", {"field": STRING, "before": STRING, "after": STRING},
                 {"argument": _Nullable(STRING)})
CHANGES = _ListOf(CHANGE)
TRACE_ERROR = _Record("a trace error", {"type": STRING, "message": STRING},
                      {"argument": _Nullable(STRING)})
EVENT = _Record("an event", {
    "seq": INTEGER, "function": STRING, "defined_at": _Nullable(STRING), "owner": STRING,
    "call_site": _Nullable(STRING), "call_index": _Nullable(INTEGER), "depth": INTEGER,
    "traced": BOOLEAN, "compiled": BOOLEAN, "start_seconds": NUMBER,
}, {
    "trace_seconds": NUMBER, "lower_seconds": NUMBER, "compile_seconds": NUMBER,
    "signature": _Nullable(SIGNATURE), "lowering_changes": _Nullable(CHANGES),
    "error": _Nullable(TRACE_ERROR), "persistent_cache": _Nullable(STRING),
    "cache_saved_seconds": NUMBER, "call_of": _Nullable(STRING),
    "lower_start_seconds": _Nullable(NUMBER), "compile_start_seconds": _Nullable(NUMBER),
    "process": _Nullable(INTEGER),
    "kind": ANY, "cause": ANY, "causes": ANY,  # added by the report, recomputed on analysis
})
ENVIRONMENT = _Record("the environment", {
    "jax_version": STRING, "python_version": STRING, "backend": STRING, "hook_mode": STRING,
}, {"compilation_cache_dir": _Nullable(STRING), "process_index": _Nullable(INTEGER),
    "process_count": _Nullable(INTEGER), "host": _Nullable(STRING)})
STALE = _Record("a stale capture", {
    "function": STRING, "defined_at": _Nullable(STRING), "variable": STRING, "scope": STRING,
    "traced_value": STRING, "current_value": STRING}, {})
PROCESS = _Record("a process of a merged session", {
    "index": INTEGER, "source": STRING, "target": STRING, "wall_seconds": NUMBER}, {
    "host": _Nullable(STRING), "jax_version": _Nullable(STRING), "calls": _DictOf(INTEGER),
    "target_exception": _Nullable(STRING)})
SESSION = _Record("a session", {
    "schema_version": INTEGER, "environment": ENVIRONMENT, "events": _ListOf(EVENT),
}, {
    "target": STRING, "target_exception": _Nullable(STRING),
    "totals": _Record("the totals", {}, {"wall_seconds": NUMBER}, open_=True),
    "base_context": _DictOf(STRING), "calls": _DictOf(INTEGER), "warnings": _ListOf(STRING),
    "stale_captures": _ListOf(STALE), "processes": _ListOf(PROCESS),
    "functions": ANY, "cause_table": ANY, "suggestions": ANY,  # report only: recomputed
})
HEADER = _Record("the header record", {
    "type": STRING, "schema_version": INTEGER, "environment": ENVIRONMENT, "target": STRING,
    "base_context": _DictOf(STRING)}, {})
EVENT_RECORD = _Record("an event record", {"type": STRING, "id": INTEGER, "event": EVENT}, {})
END_RECORD = _Record("the end record", {
    "type": STRING, "wall_seconds": NUMBER, "calls": _DictOf(INTEGER),
    "warnings": _ListOf(STRING), "stale_captures": _ListOf(STALE),
    "target_exception": _Nullable(STRING)}, {"environment": ENVIRONMENT})
