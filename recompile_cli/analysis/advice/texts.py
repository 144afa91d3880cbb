"""The text of each kind of advice (but padding's, in ``padding``) and its predicted compiles.

One builder per rule of ``rules``: each takes a ``Group`` whose preconditions the rule checked
and returns an ``Advice``. A prediction is the number of distinct signatures the recorded
calls would have had under the fix (``predict``); it is printed only where it saves compiles.
"""

from __future__ import annotations

import re

from recompile_cli.analysis.advice import predict
from recompile_cli.analysis.advice.groups import (
    KEY_WORDS,
    Advice,
    Group,
    compared_by_text,
    key_impl,
    listed,
    number,
    raw_key,
    without_address,
)
from recompile_cli.analysis.causes.nearest import top_name
from recompile_cli.analysis.shorten import shown
from recompile_cli.session.locations import relative
from recompile_cli.session.model import CauseCode, FunctionKind, Leaf, StaticClass
from recompile_cli.session.structures import (
    ATTR,
    LEAF,
    split_note,
    treedef_text,
)


def dtype(g: Group) -> Advice:
    first = g.leaves[0]
    text, after = g.fix(predict.compiles_after(g.distinct, predict.one_dtype(
        g.argument or "", first.dtype)))
    return Advice(
        f"`{g.argument}` reached {g.name} with different dtypes ({listed(g.values())}). Cast "
        f"it once before the call, e.g. `{g.argument}.astype(jnp.{first.dtype})` (the dtype "
        f"seen first){text}." + g.also(saves=after is not None), after)


def prng_keys(g: Group) -> Advice:
    impls = list(dict.fromkeys(filter(None, map(key_impl, g.leaves))))
    if not any(raw_key(leaf) for leaf in g.leaves):
        return Advice(
            f"`{g.argument}` reached {g.name} as typed PRNG keys of different implementations "
            f"({listed([leaf.short for leaf in g.leaves])}); each compiles once. Create every "
            "key with the same implementation (the same `impl=` of `jax.random.key`, or one "
            "`jax_default_prng_impl`)."
            + g.also())
    paths = [p for p in g.table.paths if _mixed_keys(g, p)]
    after = (predict.compiles_after(g.distinct, predict.typed_keys(
        paths, impls[0], KEY_WORDS[impls[0]])) if len(impls) == 1 and impls[0] in KEY_WORDS
        else None)
    text, after = g.fix(after)
    typed = next(leaf.short for leaf in g.leaves if key_impl(leaf))
    raw = next(leaf.short for leaf in g.leaves if raw_key(leaf))
    return Advice(
        f"`{g.argument}` reached {g.name} both as a typed PRNG key ({typed}, made by "
        f"`jax.random.key`) and as a raw uint32 key ({raw}, made by `jax.random.PRNGKey`); "
        "each key type compiles once, and padding cannot merge them. Use one key type everywhere: "
        "`jax.random.key`, or convert where the two meet with "
        "`jax.random.wrap_key_data(raw)` (raw -> typed) or `jax.random.key_data(key)` "
        f"(typed -> raw){text}." + g.also(
            [(code, p) for p in paths for code in (CauseCode.SHAPE, CauseCode.DTYPE)],
            saves=after is not None), after)


def _mixed_keys(g: Group, path: str) -> bool:
    values = [v for v in g.table.leaves(path) if v is not None]
    return (any(v[1].startswith("key<") for v in values)
            and any(v[1] == "uint32" for v in values))


def weak_paths(g: Group) -> list[str]:
    """The leaves of the function that were weakly typed in some calls and not in others, with
    the same dtype."""
    found = []
    for path in g.table.paths:
        kinds = {(v[1], v[2]) for v in g.table.leaves(path) if v is not None}
        if any((dt, not weak) in kinds for dt, weak in kinds):
            found.append(path)
    return found


def weak_types(g: Group) -> Advice:
    paths = weak_paths(g)
    weak = _leaf(g, paths[0], weak=True)
    strong = _leaf(g, paths[0], weak=False)
    one = len(paths) == 1
    it, it_is, was = ("it", "it is", "was") if one else ("them", "they are", "were")
    example = {"int32": "1", "int64": "1", "bool": "True"}.get(weak.dtype, "1.0")
    typed = f"jnp.{weak.dtype}"
    scalars = _python_scalars(g, paths)
    if scalars is True:
        origin = (f"{it_is.capitalize()} {'a Python scalar' if one else 'Python scalars'} in "
                  f"the weakly typed calls: pass {it} with a dtype at every call, e.g. "
                  f"`{typed}({example})` or `jnp.asarray(value, dtype={typed})`")
    else:
        origin = (f"{it_is.capitalize()} {'a weakly typed array' if one else 'weakly typed arrays'}"
                  f", made from a Python scalar without a dtype (`jnp.array({example})`) or "
                  "computed from one" if scalars is False else
                  "A weakly typed value is a Python scalar, or an array made from one without a "
                  f"dtype (`jnp.array({example})`)")
        origin += (f": give {it} a dtype where {it_is} created, e.g. "
                   f"`jnp.array({example}, dtype={typed})` or `{typed}({example})`")
    followers = "" if one else " (values computed from them, e.g. an optimizer's state, follow)"
    text, after = g.fix(predict.compiles_after(g.distinct, predict.strong_types(paths)))
    return Advice(
        f"{_names(paths)} {was} weakly typed ({weak.short}) in some calls of {g.name} and "
        f"strongly typed ({strong.short}) in others; JAX compiles each once. {origin}"
        f"{followers}{text}." + g.also(saves=after is not None), after)


def _leaf(g: Group, path: str, weak: bool) -> Leaf:
    return next(sig.leaves[path] for sig in g.distinct
                if path in sig.leaves and sig.leaves[path].weak_type == weak)


def _python_scalars(g: Group, paths: list[str]) -> bool | None:
    """True if every weakly typed value of ``paths`` was a Python scalar, False if none was,
    None where that is unknown or mixed."""
    kinds: set[bool] = set()
    for event in g.traces:
        sig = event.signature
        if sig is None or sig.python_scalars is None:
            return None
        kinds.update(path in sig.python_scalars for path in paths
                     if path in sig.leaves and sig.leaves[path].weak_type)
    return kinds.pop() if len(kinds) == 1 else None


def _example(values: list[str]) -> str:
    """The first of ``values``, shortened, and how many there are."""
    more = f", ... ({len(values)} in all)" if len(values) > 1 else ""
    return shown(values[0], 60) + more


def _names(paths: list[str], limit: int = 2) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


# -- static arguments ---------------------------------------------------------------------------
_IDENTITY = re.compile(r"\b([\w.]+)\.__eq__ is identity")  # in a cause's detail


def static_identity(g: Group) -> Advice:
    """Values that print the same but compare unequal: a class with identity ``__eq__``."""
    classes = [sig.static_classes[g.argument or ""] for sig in g.distinct
               if g.argument in sig.static_classes]
    named = [c.type for c in classes if c.type] + [
        m.group(1) for c in g.causes if (m := _IDENTITY.search(c.detail))]
    why = f"{named[0]}.__eq__ is identity" if named else "its class compares by identity"
    text, after = g.fix(_kept(g))
    return Advice(
        f"{_static(g)} `{g.argument}` of {g.name} is a new object in each call that prints "
        f"the same ({_example(g.statics())}) but compares unequal ({why}), so each new object "
        "compiles again. Keep one instance (create it once, "
        "outside the loop), or give the class value equality (e.g. a frozen dataclass)"
        f"{text}." + g.also(saves=after is not None), after)


def _static(g: Group) -> str:
    return "static argument" if g.whole_static else "static value"


def _kept(g: Group) -> int | None:
    """The compiles with one object kept for the static ``argument`` (values with the same text
    then equal); None for a part of a static value, whose other parts are not known."""
    if not g.whole_static:
        return None
    return predict.compiles_after(g.distinct, predict.static_as(g.argument or "",
                                                                without_address))


def type_pairs(g: Group) -> list[tuple[StaticClass, str, StaticClass, str]]:
    """(earlier class, its stored text, later class, its stored text) for each value of the
    whole static argument ``argument`` equal to an earlier one but of another type, in order."""
    name = g.argument or ""
    seen: dict[int, tuple[StaticClass, str]] = {}
    pairs = []
    for sig in g.distinct:
        klass = sig.static_classes.get(name)
        if klass is None or name not in sig.static:
            continue
        pairs += [(*seen[n], klass, sig.static[name]) for n in klass.equal_to if n in seen]
        seen.setdefault(klass.number, (klass, sig.static[name]))
    return pairs


def static_type(g: Group) -> Advice:
    """Equal values of different types (``2`` and ``np.int64(2)``) of a static argument."""
    pairs = type_pairs(g)
    merged: dict[int, tuple[int, str]] = {}
    for earlier, text, later, _ in pairs:
        merged[later.number] = merged.get(earlier.number, (earlier.number, text))
    fix, after = g.fix(predict.compiles_after(g.distinct, predict.static_classes_as(
        g.argument or "", merged)))
    shown_pairs = listed([f"{shown(treedef_text(a), 40)} ({ka.type}) and "
                          f"{shown(treedef_text(b), 40)} ({kb.type})"
                          for ka, a, kb, b in pairs], 3)
    return Advice(
        f"static argument `{g.argument}` of {g.name} took equal values of different types "
        f"({shown_pairs}); JAX keys a static argument on its type as well as its value, so "
        "each type compiles once. Give it one type where it is passed, e.g. "
        f"`{pairs[0][2].convert}({g.argument})`{fix}." + g.also(saves=after is not None),
        after)


def static_function(g: Group) -> Advice:
    """A function object re-created for each call and passed as a static argument."""
    text, after = g.fix(_kept(g))
    return Advice(
        f"{_static(g)} `{g.argument}` of {g.name} is (or holds) a new function object in each "
        f"call ({_example(g.statics())}): a lambda or `functools.partial` created in the loop. A "
        "function cannot be passed as a traced array; define it once, outside the loop, and "
        f"pass that same object{text}." + g.also(saves=after is not None), after)


def static_object(g: Group) -> Advice:
    """An object without value equality re-created for each call (its text differs only by a
    memory address)."""
    text, after = g.fix(_kept(g))
    return Advice(
        f"{_static(g)} `{g.argument}` of {g.name} is a new object in each call that differs "
        f"only by its address ({_example(g.statics())}): its class compares by identity. Keep "
        "one instance (create it once, outside the loop), or give the class value equality "
        f"(e.g. a frozen dataclass){text}." + g.also(saves=after is not None), after)


def static_number(g: Group) -> Advice:
    """A static number that takes several values (a static argument, or a part of one)."""
    values = g.statics()
    after = (predict.compiles_after(g.distinct, predict.without_static(g.argument or ""))
             if g.whole_static else None)  # a part of one: what else it holds is not known
    if after is None:
        fix = "; otherwise narrow the values it can take."
    elif after < g.compiles:
        fix = f": {g.compiles} compiles -> {after}; otherwise narrow the values it can take."
    elif g.remaining():  # named by ``also``
        fix = "."
    else:
        fix = (". That alone would not reduce the compiles, since something else changed in "
               "the same calls.")
    return Advice(
        f"{_static(g)} `{g.argument}` of {g.name} took {len(values)} values ({listed(values)}); "
        "each new value compiles again. If it is used only in arithmetic or branches (not as a "
        "shape, a Python loop bound or a Python `if`), pass it as a traced array instead and "
        f"branch with `jax.lax.cond` / `jnp.where`{fix}"
        + g.also(saves=after is not None and after < g.compiles),
        after if after is not None and after < g.compiles else None)


# -- pytree structures --------------------------------------------------------------------------
def field_object(g: Group) -> Advice:
    """Static data (a static field, aux data) holding a new object in each call."""
    name = top_name(g.argument or "")
    text, after = g.fix(predict.compiles_after(
        g.distinct, predict.structure_as(name, compared_by_text)))
    functions = any(g.functions())
    what = (f"`{g.argument}`, static data of `{name}`," if g.argument != name else
            f"the static data of `{name}` (a static field or aux data)")
    return Advice(
        f"{what} is part of the cache key and holds a new object in each call with the same "
        f"contents ({_example(g.values())}), e.g. an optimizer or a function rebuilt every "
        "epoch. Create it once, outside the loop, and reuse it" + (
            "" if functions else " (or give its class value equality, e.g. a frozen dataclass)")
        + f"{text}." + g.also(saves=after is not None), after)


def library_mode(g: Group) -> Advice:
    """A library module's mode switch: a Python bool its code branches on."""
    path = g.argument or ""
    holder = [split_note(line)[0] for line in g.lines(path.rpartition(".")[0])]
    of = f" of `{holder[0]}`" if holder else ""
    return Advice(
        f"`{path}` is the mode switch{of} (a bool it branches on): {_readings(g)}"
        + _mode_also(g))


def mode_flag(g: Group) -> Advice:
    return Advice(
        f"`{g.argument}` took the values {listed(g.values(), 3)} between calls of {g.name}: a "
        "static field or attribute of the argument (e.g. a model switched between train and "
        f"eval mode) is part of the cache key. {_readings(g)}" + _mode_also(g))


_FLAGS = ("True", "False", "None")


def _mode_also(g: Group) -> str:
    """``also`` for a mode flag: the other flags that changed with it are switched by the same
    call (``model.train()``), named but no reason to say the fix removes nothing."""
    flags = [(c.code, c.argument) for causes in g.changes for c in causes
             if c.before in _FLAGS and c.after in _FLAGS]
    return g.also(flags) if g.remaining(flags) else g.also(saves=True)


# A mode flag's name -> the mode its True value means (equinox ``inference``, flax
# ``deterministic`` and ``use_running_average``; a user's ``training``).
_TRUE_MEANS = {"deterministic": "eval", "use_running_average": "eval", "inference": "eval",
               "eval": "eval", "is_eval": "eval", "evaluation": "eval", "eval_mode": "eval",
               "train": "train", "training": "train", "is_training": "train",
               "train_mode": "train", "is_train": "train"}


def _readings(g: Group) -> str:
    """The fact (the function ran in both modes, each compiled once) and both readings: one
    mode meant (and how to set it before the call: ``model.train()``), or both."""
    path = g.argument or ""
    name = path.rpartition(".")[2]
    notes = g.notes()
    kind = notes[0].kind if notes else ""
    model = top_name(path)
    if kind == ATTR:  # a Flax NNX module: its train() and eval() set every switch
        calls = {"train": f"call `{model}.train()`", "eval": f"call `{model}.eval()`"}
    elif kind == LEAF:  # an equinox module, partitioned by filter_jit
        calls = {"train": f"use `{model} = eqx.nn.inference_mode({model}, value=False)`",
                 "eval": f"use `{model} = eqx.nn.inference_mode({model})`"}
    else:
        calls = {}
    true_means = _TRUE_MEANS.get(name)
    both = "if both modes are intended, this is expected"
    if true_means is None or not calls:
        how = f" ({calls['train']} or {calls['eval']})" if calls else ""
        return (f"{g.name} ran with {listed(g.values(), 3)}, each compiled once. To run in "
                f"one mode, set `{name}` the same before every call{how}; {both}.")
    train = "False" if true_means == "eval" else "True"
    evaluate = "True" if train == "False" else "False"
    return (f"{g.name} ran in training (`{name}={train}`) and evaluation mode "
            f"(`{evaluate}`), each compiled once. To train, {calls['train']} before it; to "
            f"evaluate, {calls['eval']}; {both}.")


def field_value(g: Group) -> Advice:
    """Any other static field, attribute or aux data that took new values."""
    values = g.values()
    numbers = all(map(number, values))
    return Advice(
        f"`{g.argument}` is static (a static field, attribute or aux data: part of the pytree "
        f"structure) and took the values {listed(values, 3)} between calls of {g.name}; each "
        "new value compiles once. Expected if it changes on purpose (e.g. a mode); otherwise "
        "keep it fixed between calls" + (
            ", or, if it is used only in arithmetic (not as a shape or in a Python `if`), make "
            "it a data field (a pytree leaf)" if numbers else "") + "." + g.also())


def none_or_array(g: Group) -> Advice:
    return Advice(
        f"`{g.argument}` held None in some calls of {g.name} and an array in others "
        f"({listed(g.values(), 3)}); each structure compiles once. Pass an array in every "
        "call (e.g. zeros, with a mask or a flag array saying it is unused)." + g.also())


def containers(g: Group) -> Advice:
    return Advice(
        f"the pytree structure of `{g.argument}` changed between calls of {g.name} "
        f"({listed(g.values(), 3)}). Keep containers the same (same dict keys, same list "
        "lengths); pad or mask instead of adding or removing entries." + g.also())


# -- calls ----------------------------------------------------------------------------------------
def passing(g: Group) -> Advice:
    text, after = g.fix(predict.compiles_after(g.distinct, predict.same_passing))
    how = f" (e.g. always `{g.argument}=...` by keyword)" if g.argument else ""
    return Advice(
        f"called with its arguments passed in different ways ({listed(g.values(), 2)}); JAX "
        "keys its cache on how arguments are passed. Pass them the same way in every call"
        f"{how}{text}." + g.also(saves=after is not None), after)


_NEW_OBJECT = {
    FunctionKind.LAMBDA:
        "the lambda defined at {defined_at} is created anew for every call; define it once, "
        "outside the loop (or use a named module-level function)",
    FunctionKind.CLOSURE:
        "{name} is defined inside another function (at {defined_at}) and a new one is made on "
        "every call; build it once, or move it to module level and pass what it captures as "
        "arguments",
    FunctionKind.PARTIAL:
        "a new functools.partial of {name} is made before every call ({where}); create it once "
        "outside the loop, or pass the bound values as (static) arguments",
    FunctionKind.BOUND_METHOD:
        "jax.jit(obj.{name}) wraps a new bound method every time ({where}); jit it once outside "
        "the loop, or jit the plain function and pass the object's data as arguments",
    FunctionKind.FUNCTION:
        "a new function object is created for every call ({where}); hoist the `jax.jit(...)` "
        "out of the loop",
}


def new_function(g: Group) -> Advice:
    event = g.events[0]
    sig = event.signature
    kind = sig.function_kind if sig else FunctionKind.FUNCTION
    where = (f"made at {relative(sig.created_at)}" if sig and sig.created_at else
             f"called at {relative(event.call_site)}")  # the line that makes it, where known
    what = _NEW_OBJECT[kind].format(name=g.name, defined_at=relative(event.defined_at),
                                    where=where)
    text, after = g.fix(predict.compiles_after(g.distinct, predict.same_function))
    return Advice(f"traced {_times(len(g.events))} more as a new function object: {what}"
                  f"{text}." + g.also(saves=after is not None), after)


def derived(g: Group) -> Advice:
    """A jaxpr a transformation derived from the jitted function, compiled apart from it."""
    return Advice(
        f"{g.name} was compiled again without a re-trace, for a program a transformation "
        "derived from it (`jax.grad`, `jax.value_and_grad`, `jax.vjp`, `jax.vmap` or "
        "`checkify` applied to the jitted function outside jit). Jit the transformed function "
        f"once and call that (`grad_{g.name} = jax.jit(jax.grad({g.name}))`), or apply the "
        "transformation inside your jitted step, so it compiles once per signature as one "
        "program." + g.also())


def context(g: Group) -> Advice:
    return Advice(
        f"the tracing context `{g.argument}` changed between calls of {g.name} "
        f"({listed(g.values(), 2)}). Set such config flags and context managers once, outside "
        "the loop." + g.also())


def sharding(g: Group) -> Advice:
    what = f"`{g.argument}`" if g.argument else "its inputs"
    return Advice(
        f"compiled again without a re-trace because {what} arrived with a different placement "
        "or donation (e.g. committed to a device by `jax.device_put`). Place inputs the same "
        "way at every call." + g.also())


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
