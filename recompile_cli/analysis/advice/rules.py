"""When each kind of advice applies: the one table of suggestion rules and their preconditions.

An ``AdviceRule`` names the cause codes it answers, says in words which kinds of value it is true
for (``when``), checks that on a ``Group`` (``applies``) and builds the message and its prediction
(``advise``, in ``advice`` and ``padding``). ``advise`` below takes the first rule, in table order,
whose code and preconditions hold; a group that no rule fits gets no advice, and so does one whose
rule finds nothing true to say (padding whose overhead is absurd): no advice is better than wrong
advice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from recompile_cli.analysis.advice import padding, texts
from recompile_cli.analysis.advice.groups import (
    Advice,
    Group,
    key_impl,
    number,
    numeric_dtype,
    raw_key,
    recreated,
    structural,
)
from recompile_cli.analysis.causes.explain import AUX_DATA, PRINTS_SAME_UNEQUAL, STATIC_FIELD
from recompile_cli.session.model import CauseCode

C = CauseCode


@dataclass(frozen=True)
class AdviceRule:
    """One kind of advice: the cause codes it answers, its preconditions in words (``when``)
    and as a predicate (``applies``), its builder (``advise``: the message and the predicted
    compiles) and the fix whose compiles it predicts (``predicts``; empty: none predicted)."""

    name: str
    codes: frozenset[CauseCode]
    when: str
    applies: Callable[[Group], bool]
    advise: Callable[[Group], Advice | None]
    predicts: str = ""


# -- preconditions ------------------------------------------------------------------------------
def _numeric(g: Group) -> bool:
    """A numeric array: not a PRNG key, not an opaque dtype."""
    return bool(g.leaves) and all(numeric_dtype(leaf.dtype) for leaf in g.leaves)


def _data(g: Group) -> bool:
    """A numeric array of data, not a model's parameter or an optimizer's state (whose shape
    changes with the model: no padding of the call fixes it)."""
    return _numeric(g) and not g.in_model


def _key_types(g: Group) -> bool:
    kinds = {key_impl(leaf) for leaf in g.leaves}
    return (len(kinds) > 1 and any(kinds)
            and all(raw_key(leaf) for leaf in g.leaves if key_impl(leaf) is None))


def _dimensions(g: Group) -> bool:
    return (_data(g) and len({len(leaf.shape) for leaf in g.leaves}) == 1
            and bool(g.table.varying_dims(g.argument or "")))


def _ranks(g: Group) -> bool:
    return _data(g) and len({len(leaf.shape) for leaf in g.leaves}) > 1


def _dtypes(g: Group) -> bool:
    return _numeric(g) and len({leaf.dtype for leaf in g.leaves}) > 1


def _detail(g: Group, words: str) -> bool:
    return any(words in c.detail for c in g.causes)


def _identity(g: Group) -> bool:
    """The static value's type compares by identity (``object.__eq__``)."""
    name = g.argument or ""
    return _detail(g, "__eq__ is identity") or any(
        sig.static_classes[name].identity for sig in g.distinct if name in sig.static_classes)


def _same_text(g: Group) -> bool:
    """New objects that print the same but compare unequal: a type with identity equality."""
    return _detail(g, PRINTS_SAME_UNEQUAL) and _identity(g)


def _new_objects(g: Group) -> bool:
    """Objects (not functions: different functions are different programs) re-created for each
    call: texts that differ only by a memory address, or a type that compares by identity."""
    values = g.statics()
    return not any(g.functions()) and (
        recreated(values) or (_identity(g) and not _detail(g, PRINTS_SAME_UNEQUAL)))


def _functions(g: Group) -> bool:
    """Function objects (or values holding one) re-created for each call: texts that differ
    only by memory addresses, or that print the same but compare unequal."""
    return all(g.functions()) and (recreated(g.statics()) or _detail(g, PRINTS_SAME_UNEQUAL))


def _numbers(g: Group) -> bool:
    values = g.statics()
    return len(values) > 1 and all(map(number, values))


def _field(g: Group) -> bool:
    """A static field, attribute or aux data of a pytree node changed, not its containers."""
    return all(c.detail.startswith((STATIC_FIELD, f"the {AUX_DATA}"))
               or (c.detail.startswith("pytree node data changed")
                   and not any(map(structural, (c.before or "", c.after or ""))))
               for c in g.causes)


def _field_objects(g: Group) -> bool:
    """Static data holding objects re-created for each call: a static field whose values
    differ only by memory addresses or print the same but compare unequal, or an argument
    whose whole structure texts differ only by memory addresses."""
    if _field(g):
        return recreated(g.values()) or _detail(g, PRINTS_SAME_UNEQUAL)
    name = g.argument or ""
    return recreated(list(dict.fromkeys(sig.structure[name] for sig in g.distinct
                                        if name in sig.structure)))


def _containers(g: Group) -> bool:
    """Containers of data that changed (not a model's or an optimizer's: those change with
    the model, and no padding or masking of the call fixes them)."""
    return not _field(g) and not _field_objects(g) and not g.in_model


def _library_mode(g: Group) -> bool:
    """A Python bool that the library class holding it branches on (``Note.mode``)."""
    notes = g.notes()
    return bool(notes) and all(note.mode for note in notes)


def _mode(g: Group) -> bool:
    return _field(g) and all(v in ("True", "False", "None") for v in g.values())


def _none_or_array(g: Group) -> bool:
    """Structures that differ only where one has None and the other an array (``*``)."""
    values = g.values()
    return (_containers(g) and len(values) > 1 and any("None" in v for v in values)
            and len({v.replace("None", "*") for v in values}) == 1)


def _same_arguments(g: Group) -> bool:
    """The same arguments passed positionally in one call and by keyword in another (an
    argument passed in one call and left to its default in another is no mistake to fix)."""
    return not any(c.detail.startswith("a different set") for c in g.causes)


def _always(g: Group) -> bool:
    return True


# -- the table ----------------------------------------------------------------------------------
RULES: tuple[AdviceRule, ...] = (
    AdviceRule(
        "prng_key_type", frozenset({C.SHAPE, C.DTYPE}),
        "a PRNG key that was a typed key (`key<impl>`) in some calls and a raw uint32 key or a "
        "key of another implementation in others", _key_types, texts.prng_keys,
        "every raw key of the function as a typed key of the one implementation seen"),
    AdviceRule(
        "pad_dimension", frozenset({C.SHAPE}),
        "a numeric array of data (not a PRNG key, a model's parameter or an optimizer's state) "
        "whose rank stays the same and some of whose dimensions take several sizes; dropped "
        "where padding's extra work is absurd (padding.MAX_OVERHEAD)",
        _dimensions, padding.pad_dimension,
        "every dimension of the same axis padded to its bucket"),
    AdviceRule(
        "change_rank", frozenset({C.SHAPE}),
        "a numeric array of data that arrived with different ranks", _ranks,
        padding.change_rank),
    AdviceRule(
        "cast_dtype", frozenset({C.DTYPE}), "a numeric array that arrived with different dtypes",
        _dtypes, texts.dtype, "the argument cast to the dtype seen first"),
    AdviceRule(
        "weak_type", frozenset({C.WEAK_TYPE}),
        "leaves that were weakly typed (a Python scalar or a weakly typed array) in some calls "
        "and not in others; one advice per function", lambda g: bool(texts.weak_paths(g)),
        texts.weak_types, "every such leaf given a dtype where it is made"),
    AdviceRule(
        "library_mode", frozenset({C.STATIC_VALUE, C.TREE_STRUCTURE}),
        "a Python bool of a library's module that the library branches on in Python (a mode "
        "switch such as equinox `Dropout(inference=...)` or flax `BatchNorm"
        "(use_running_average=...)`): each mode compiling once is expected",
        _library_mode, texts.library_mode),
    AdviceRule(
        "static_type", frozenset({C.STATIC_VALUE}),
        "a static argument that took equal values of different types (`2` and "
        "`np.int64(2)`, an `Enum` member and its value), which JAX keys apart",
        lambda g: bool(texts.type_pairs(g)), texts.static_type,
        "the argument converted to one type"),
    AdviceRule(
        "static_function", frozenset({C.STATIC_VALUE}),
        "a static value that is (or holds) a function object and differs only by memory "
        "addresses or prints the same but compares unequal (re-created each call)",
        _functions, texts.static_function, "one function object kept"),
    AdviceRule(
        "static_identity", frozenset({C.STATIC_VALUE}),
        "a static value whose values print the same but compare unequal (identity `__eq__`)",
        _same_text, texts.static_identity, "one instance kept (or value equality)"),
    AdviceRule(
        "static_object", frozenset({C.STATIC_VALUE}),
        "a static value, not a function, that differs only by a memory address, or whose type "
        "compares by identity (re-created objects)", _new_objects, texts.static_object,
        "one instance kept (or value equality)"),
    AdviceRule(
        "static_number", frozenset({C.STATIC_VALUE}),
        "a static value whose values are all Python numbers or booleans (strings, tuples and "
        "other values get no advice)", _numbers, texts.static_number,
        "the whole static argument passed traced"),
    AdviceRule(
        "field_object", frozenset({C.TREE_STRUCTURE}),
        "static data (a static field, aux data, or the whole structure) whose values differ "
        "only by memory addresses, or print the same but compare unequal (an object rebuilt "
        "each call)", _field_objects, texts.field_object, "one object kept"),
    AdviceRule(
        "mode_flag", frozenset({C.TREE_STRUCTURE}),
        "a static field or attribute whose values are booleans or None (a train/eval flag)",
        _mode, texts.mode_flag),
    AdviceRule(
        "field_value", frozenset({C.TREE_STRUCTURE}),
        "any other static field, attribute or aux data that took new values", _field,
        texts.field_value),
    AdviceRule(
        "none_or_array", frozenset({C.TREE_STRUCTURE}),
        "data that was None in some calls and an array in others", _none_or_array,
        texts.none_or_array),
    AdviceRule(
        "containers", frozenset({C.TREE_STRUCTURE}),
        "containers of data that changed (keys added or removed, lists that grow), not a "
        "model's or an optimizer's", _containers, texts.containers),
    AdviceRule(
        "same_passing", frozenset({C.ARG_PASSING}),
        "the same arguments passed positionally in some calls and by keyword in others (not "
        "an argument left to its default)", _same_arguments, texts.passing,
        "every argument passed the same way"),
    AdviceRule(
        "new_function", frozenset({C.NEW_FUNCTION}), "a new function object with the same code",
        _always, texts.new_function, "one function object kept"),
    AdviceRule(
        "derived", frozenset({C.DERIVED_JAXPR}),
        "a program derived from the jitted function by a transformation applied outside jit",
        _always, texts.derived),
    AdviceRule(
        "tracing_context", frozenset({C.TRACING_CONTEXT}),
        "a config flag or context manager that changed", _always, texts.context),
    AdviceRule(
        "placement", frozenset({C.SHARDING}),
        "a compile without a re-trace for a new placement, sharding or donation", _always,
        texts.sharding),
)

PER_FUNCTION = frozenset({C.WEAK_TYPE})  # codes advised once per function, over all paths


def rule_for(g: Group) -> AdviceRule | None:
    """The first rule of ``RULES`` that answers ``g``'s code and whose preconditions hold."""
    return next((r for r in RULES if g.code in r.codes and r.applies(g)), None)


def advise(g: Group) -> Advice | None:
    rule = rule_for(g)
    return None if rule is None else rule.advise(g)
