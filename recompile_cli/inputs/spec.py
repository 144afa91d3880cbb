"""The argument spec: YAML that lists the calls to make, validated completely before any JAX work.

``load_spec`` reads a file into frozen dataclasses (sweeps expanded, placeholders substituted);
an error names the file, the line and the field. Limits are checked before anything is
allocated: ``max_calls`` calls (``check_calls`` holds a warm-up and its workload to one sum) and
``max_array_bytes`` per array. Never imports JAX (``inputs.materialize`` builds the values).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from recompile_cli.errors import SpecError
from recompile_cli.inputs.fields import Invalid, Where, only_keys
from recompile_cli.inputs.jit_options import JIT_OPTIONS, parse_jit_options
from recompile_cli.inputs.yaml_doc import load_yaml, read_text

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
            "uint32": 4, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
            "complex64": 8, "complex128": 16}
DEFAULT_MAX_ARRAY_BYTES = 4 * 1024 ** 3  # one array of a spec: 4 GiB
DEFAULT_MAX_CALLS = 100_000  # calls of the target that one spec may make
__all__ = [
    "DEFAULT_MAX_ARRAY_BYTES",
    "DEFAULT_MAX_CALLS",
    "JIT_OPTIONS",
    "ArrayKind",
    "ArraySpec",
    "CallSpec",
    "Case",
    "Fill",
    "ScalarSpec",
    "Spec",
    "TupleSpec",
    "check_calls",
    "load_spec",
    "single_call",
]
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


class ArrayKind(StrEnum):
    """What an ``ArraySpec`` builds: ``{array: SHAPE}`` a jax.Array, ``{numpy: SHAPE}`` a numpy
    array."""

    ARRAY = "array"
    NUMPY = "numpy"


class Fill(StrEnum):
    """The values of a spec array (``fill:``); ``materialize`` says how each is drawn."""

    NORMAL = "normal"
    UNIFORM = "uniform"
    ZEROS = "zeros"
    ONES = "ones"
    ARANGE = "arange"


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """``{array: SHAPE}`` (a jax.Array) or ``{numpy: SHAPE}`` (a numpy array)."""

    kind: ArrayKind
    shape: tuple[int, ...]
    dtype: str
    fill: Fill
    seed: int


@dataclass(frozen=True, slots=True)
class ScalarSpec:
    """``{scalar: 2.0, dtype: float32}``: a strongly typed 0-d jax.Array."""

    value: Any
    dtype: str


@dataclass(frozen=True, slots=True)
class CallSpec:
    """``{call: "module:function", args: [...], kwargs: {...}}``: a value built by user code,
    once per spec entry (its calls, repeats and sweep values share the object wherever the
    factory's own arguments are the same); ``fresh: true`` builds a new one for every call."""

    ref: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    fresh: bool = False


@dataclass(frozen=True, slots=True)
class TupleSpec:
    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Case:
    """One call of the target: value specs for its arguments, and where it comes from.

    ``site`` is the spec entry (``spec.yaml calls[1]``), shared by a sweep's calls; ``label``
    adds the sweep values and repeat (``spec.yaml calls[1] n=17``).
    """

    index: int
    label: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    site: str = ""


@dataclass(frozen=True, slots=True)
class Spec:
    path: str
    jit_options: dict[str, Any]
    cases: tuple[Case, ...]


def single_call() -> Spec:
    """The spec used when none is given: one call without arguments."""
    return Spec("", {}, (Case(0, "call 1", (), {}, "call 1"),))


def after_warmup(warmup: Spec | None, spec: Spec) -> Spec:
    """One spec: the warm-up's calls, then the workload's (``spec``, whose jit options it
    keeps), numbered in that order."""
    if warmup is None:
        return spec
    cases = (*warmup.cases, *spec.cases)
    return replace(spec, cases=tuple(replace(c, index=i) for i, c in enumerate(cases)))


def load_spec(path: str | Path, *, max_array_bytes: int = DEFAULT_MAX_ARRAY_BYTES,
              max_calls: int = DEFAULT_MAX_CALLS, option: str = "--args") -> Spec:
    """Read and validate a spec file. Raises ``SpecError`` naming file, line and field.

    ``max_calls`` caps the calls the spec makes and ``max_array_bytes`` the size of each array,
    both checked before anything is expanded or allocated; ``option`` is how the user gave
    the file, named when it cannot be read."""
    path = Path(path)
    text = read_text(path, SpecError, "spec file", f" Pass an existing YAML file with {option}.")
    data = load_yaml(path, text, SpecError)
    try:
        return _parse(str(path), data, _Limits(max_array_bytes, max_calls))
    except Invalid as bad:
        raise SpecError(bad.located(path, text)) from None


def check_calls(specs: dict[str, Spec], max_calls: int = DEFAULT_MAX_CALLS) -> None:
    """``SpecError`` when the specs run one after the other (option -> spec, e.g. ``--warmup``
    and ``--args``) make more calls together than ``max_calls``, the limit each one is held to
    on its own."""
    total = sum(len(spec.cases) for spec in specs.values())
    if total > max_calls:
        parts = " and ".join(f"{option} {len(spec.cases):,}" for option, spec in specs.items())
        raise SpecError(f"The specs make {total:,} calls together ({parts}), more than the "
                        f"limit of {max_calls:,} calls, which holds for all the calls of one run. "
                        "Make fewer calls, or raise the limit (--max-calls).")


@dataclass(frozen=True, slots=True)
class _Limits:
    max_array_bytes: int = DEFAULT_MAX_ARRAY_BYTES
    max_calls: int = DEFAULT_MAX_CALLS


def _parse(path: str, data: Any, limits: _Limits = _Limits()) -> Spec:
    if data is None:  # an empty file, or an empty stdin: not a spec that means "no calls"
        raise Invalid((), "the spec is empty: give it a 'calls' list (docs/spec.md shows every "
                          "form), or leave --args out to call the target once without "
                          "arguments")
    if not isinstance(data, dict):
        raise Invalid((), "the spec must be a mapping with a 'calls' list")
    only_keys(data, ("jit", "defaults", "calls"), ())
    jit_options = parse_jit_options(data.get("jit"), ("jit",))
    raw_defaults = data.get("defaults")
    defaults = _defaults({} if raw_defaults is None else raw_defaults, ("defaults",))
    defaults["max_array_bytes"] = limits.max_array_bytes
    calls = data.get("calls")
    if calls is None:
        calls = [{}]
    if not isinstance(calls, list) or not calls:
        raise Invalid(("calls",), "must be a non-empty list of calls")
    plans = []
    total = 0
    for i, call in enumerate(calls):  # validate repeat and sweep, and count, before expanding
        where = ("calls", i)
        if call is None:
            call = {}
        if not isinstance(call, dict):
            raise Invalid(where, "each call must be a mapping with args/kwargs/repeat/sweep")
        only_keys(call, ("args", "kwargs", "repeat", "sweep"), where)
        repeat = call.get("repeat", 1)
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise Invalid((*where, "repeat"), f"must be a positive integer, got {repeat!r}")
        names, values = _sweep(call.get("sweep"), (*where, "sweep"))
        count = repeat * math.prod(_length(v) for v in values)
        total += count
        if total > limits.max_calls:
            raise Invalid(where, f"the spec makes {total:,} calls up to here (this entry: "
                                 f"{count:,}, repeat times every sweep combination), more than "
                                 f"the limit of {limits.max_calls:,} calls. Make fewer calls, "
                                 "or raise the limit (--max-calls)")
        plans.append((i, call, repeat, names, values))
    cases: list[Case] = []
    stem = Path(path).name
    for i, call, repeat, names, values in plans:
        where = ("calls", i)
        for combo in itertools.product(*values):
            binding = dict(zip(names, combo, strict=False))
            args_raw = _substitute(call.get("args", []), binding, (*where, "args"))
            kwargs_raw = _substitute(call.get("kwargs", {}), binding, (*where, "kwargs"))
            if not isinstance(args_raw, list):
                raise Invalid((*where, "args"), "must be a list of argument values")
            if not isinstance(kwargs_raw, dict):
                raise Invalid((*where, "kwargs"), "must be a mapping of name: value")
            for k in kwargs_raw:
                if not isinstance(k, str):
                    raise Invalid((*where, "kwargs", k), f"a keyword is a name, got {k!r}")
            args = tuple(_value(v, (*where, "args", j), defaults)
                         for j, v in enumerate(args_raw))
            kwargs = {str(k): _value(v, (*where, "kwargs", k), defaults)
                      for k, v in kwargs_raw.items()}
            swept = " ".join(f"{k}={v}" for k, v in binding.items())
            site = f"{stem} calls[{i}]"
            for r in range(repeat):
                label = site + (f" {swept}" if swept else "")
                if repeat > 1:
                    label += f" (repeat {r + 1}/{repeat})"
                cases.append(Case(len(cases), label, args, kwargs, site))
    return Spec(path=path, jit_options=jit_options, cases=tuple(cases))


def _defaults(raw: Any, where: Where) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Invalid(where, "must be a mapping of dtype/fill/seed")
    only_keys(raw, ("dtype", "fill", "seed"), where)
    out = {"dtype": "float32", "fill": Fill.NORMAL, "seed": 0}
    out.update(raw)
    _check_array_options(out, where)
    return out


def _sweep(raw: Any, where: Where) -> tuple[list[str], list[Any]]:
    """The sweep's names and, for each, its values: a list or a ``range`` (not expanded)."""
    if raw is None:
        return [], []
    if not isinstance(raw, dict) or not raw:
        raise Invalid(where, "must be a mapping of name: [values] or name: {range: [...]}")
    names, values = [], []
    for name, spec in raw.items():
        if isinstance(name, (dict, list)) or not re.fullmatch(r"\w+", str(name)):
            raise Invalid((*where, name), "a sweep variable is a name of letters, digits and "
                                           f"underscores (used as ${{name}}), got {name!r}")
        if isinstance(spec, dict):
            only_keys(spec, ("range",), (*where, name))
            bounds = spec.get("range")
            if (not isinstance(bounds, list) or not 1 <= len(bounds) <= 3
                    or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)):
                raise Invalid((*where, name, "range"),
                               "must be [stop], [start, stop] or [start, stop, step] integers")
            if len(bounds) == 3 and bounds[2] == 0:
                raise Invalid((*where, name, "range"), "step must not be 0")
            spec = range(*bounds)
            if _length(spec) == 0:
                raise Invalid((*where, name, "range"), f"is empty ({spec!r} has no values)")
        if not isinstance(spec, (list, range)) or not spec:
            raise Invalid((*where, name), "must be a non-empty list or {range: [...]}")
        names.append(str(name))
        values.append(spec)
    return names, values


def _length(values: Any) -> int:
    """``len`` that also works for ranges longer than ``sys.maxsize``."""
    if isinstance(values, range):
        step = values.step
        span = values.stop - values.start + (step - 1 if step > 0 else step + 1)
        return max(0, span // step)
    return len(values)


def _substitute(raw: Any, binding: dict[str, Any], where: Where) -> Any:
    if isinstance(raw, str):
        whole = _PLACEHOLDER.fullmatch(raw)
        if whole:
            return _lookup(whole.group(1), binding, where)
        return _PLACEHOLDER.sub(lambda m: str(_lookup(m.group(1), binding, where)), raw)
    if isinstance(raw, list):
        return [_substitute(v, binding, (*where, i)) for i, v in enumerate(raw)]
    if isinstance(raw, dict):
        return {k: _substitute(v, binding, (*where, k)) for k, v in raw.items()}
    return raw


def _lookup(name: str, binding: dict[str, Any], where: Where) -> Any:
    if name not in binding:
        known = ", ".join(binding) or "none"
        raise Invalid(where, f"placeholder ${{{name}}} is not defined by this call's sweep "
                              f"(defined: {known})")
    return binding[name]


_FORMS = ("array", "numpy", "scalar", "tuple", "dict", "call")


def _value(raw: Any, where: Where, defaults: dict[str, Any]) -> Any:
    if isinstance(raw, list):
        return [_value(v, (*where, i), defaults) for i, v in enumerate(raw)]
    if not isinstance(raw, dict):
        return raw  # a YAML scalar is passed as that Python value
    forms = [f for f in _FORMS if f in raw]
    if not forms:
        return {k: _value(v, (*where, k), defaults) for k, v in raw.items()}
    if len(forms) > 1:
        raise Invalid(where, f"has both {forms[0]!r} and {forms[1]!r}; a value is one form "
                              "(use {dict: {...}} for a dict with such keys)")
    form = forms[0]
    if form in (ArrayKind.ARRAY, ArrayKind.NUMPY):
        only_keys(raw, (form, "dtype", "fill", "seed"), where)
        options = {k: raw.get(k, defaults[k]) for k in ("dtype", "fill", "seed")}
        _check_array_options(options, where)
        shape = _shape(raw[form], (*where, form))
        _check_array_bytes(shape, options["dtype"], (*where, form),
                           defaults.get("max_array_bytes", DEFAULT_MAX_ARRAY_BYTES))
        return ArraySpec(ArrayKind(form), shape, options["dtype"], Fill(options["fill"]),
                         options["seed"])
    if form == "scalar":
        only_keys(raw, ("scalar", "dtype"), where)
        value = raw["scalar"]
        if not isinstance(value, (int, float, bool)):
            raise Invalid((*where, "scalar"), f"must be a number or a boolean, got {value!r}")
        dtype = raw.get("dtype", defaults["dtype"])
        _check_array_options({"dtype": dtype}, where)
        _check_scalar_fits(value, dtype, (*where, "scalar"))
        return ScalarSpec(value, dtype)
    if form == "tuple":
        only_keys(raw, ("tuple",), where)
        if not isinstance(raw["tuple"], list):
            raise Invalid((*where, "tuple"), "must be a list of values")
        return TupleSpec(tuple(_value(v, (*where, "tuple", i), defaults)
                               for i, v in enumerate(raw["tuple"])))
    if form == "dict":
        only_keys(raw, ("dict",), where)
        if not isinstance(raw["dict"], dict):
            raise Invalid((*where, "dict"), "must be a mapping")
        return {k: _value(v, (*where, "dict", k), defaults) for k, v in raw["dict"].items()}
    only_keys(raw, ("call", "args", "kwargs", "fresh"), where)
    ref = raw["call"]
    fresh = raw.get("fresh", False)
    if not isinstance(fresh, bool):
        raise Invalid((*where, "fresh"), f"must be true or false, got {fresh!r}: true builds "
                                           "a new object for every call, false (the default) "
                                           "one per spec entry")
    if not isinstance(ref, str) or ":" not in ref:
        raise Invalid((*where, "call"), f"must be 'module:function' or 'file.py:function', "
                                          f"got {ref!r}")
    args, kwargs = raw.get("args", []), raw.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise Invalid(where, "args must be a list and kwargs a mapping")
    for k in kwargs:
        if not isinstance(k, str):
            raise Invalid((*where, "kwargs", k), f"a keyword is a name, got {k!r}")
    return CallSpec(ref, tuple(_value(v, (*where, "args", i), defaults)
                               for i, v in enumerate(args)),
                    {k: _value(v, (*where, "kwargs", k), defaults) for k, v in kwargs.items()},
                    fresh)


def _shape(raw: Any, where: Where) -> tuple[int, ...]:
    dims = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise Invalid(where, f"a shape is a list of non-negative integers, got {raw!r}")
    return tuple(dims)


def _check_array_options(options: dict[str, Any], where: Where) -> None:
    if "dtype" in options and options["dtype"] not in DTYPES:
        raise Invalid((*where, "dtype"), f"unknown dtype {options['dtype']!r}; use one of "
                                           + ", ".join(DTYPES))
    if "fill" in options and options["fill"] not in tuple(Fill):
        raise Invalid((*where, "fill"), f"unknown fill {options['fill']!r}; use one of "
                                          + ", ".join(Fill))
    seed = options.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise Invalid((*where, "seed"), f"must be a non-negative integer, got {seed!r}")


def _check_scalar_fits(value: Any, dtype: str, where: Where) -> None:
    """An integer or boolean dtype takes only a whole number it can hold (JAX would raise an
    ``OverflowError`` building the call, or truncate 2.5); a float or complex dtype takes any
    number (an infinity is a value a program may be tested with)."""
    if dtype == "bool":
        if value not in (0, 1) or isinstance(value, float):
            raise Invalid(where, f"a bool scalar is true or false, got {value!r}")
        return
    if not dtype.startswith(("int", "uint")):
        return
    bits = 8 * ITEMSIZE[dtype]
    low, high = (0, 2 ** bits - 1) if dtype.startswith("u") else (-(2 ** (bits - 1)),
                                                                 2 ** (bits - 1) - 1)
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if not whole or not low <= value <= high:
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:20]}..."
        article = "an" if dtype.startswith("int") else "a"
        raise Invalid(where, f"{article} {dtype} scalar is a whole number from {low:,} to "
                             f"{high:,}, got {shown}")


def _check_array_bytes(shape: tuple[int, ...], dtype: str, where: Where, limit: int) -> None:
    size = ITEMSIZE[dtype] * math.prod(shape)
    if size > limit:
        raise Invalid(where, f"an array of shape {list(shape)} and dtype {dtype} takes "
                             f"{size:,} bytes ({size / 1024 ** 3:.3g} GiB), more than the limit "
                             f"of {limit:,} bytes per array. Use a smaller shape, or raise the "
                             "limit (--max-array-bytes)")
