"""A warm-up plan as Python source: ``warm_up(parallel=None)`` compiles every planned signature
with ``jitted.lower(*args).compile()`` on the user's own jitted functions.

The plan is plain Python a user can read, commit and edit: a few helpers, then one block per
function (a generator of ``(label, lower)`` pairs, with a comment naming the call site that
first compiled each signature and its compile seconds), the list of blocks, what could not be
replayed and why (comments), and ``warm_up``. It imports only the standard library and JAX.

What comes from the session reaches the source only as checked names (``planning.dotted``:
identifiers joined by dots, also as parts of the helpers' own names), literals that read back
as themselves (``planning.literal``), numbers and string literals (``escape.python_string``), or
comments (``escape.python_comment``); every part is checked again here as it is written, so no
session, however made, can write code that its plan then runs beyond importing and reading the
names it gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.warmup.plan import (
    Plan,
    Planned,
    checked_value,
    dotted,
    literal,
    reference,
    unplayable_by_reason,
)
from recompile_cli.analysis.warmup.plan import check_placement as _check_placement
from recompile_cli.render.escape import python_comment, python_string, terminal
from recompile_cli.session.codec import indented
from recompile_cli.session.locations import relative
from recompile_cli.session.model import Leaf
from recompile_cli.session.warmup import Argument, Node, NodeKind, Placement, Value, ValueKind

WIDTH = 96  # a call or container longer than this is written one item per line


def render_plan(plan: Plan, source: str, folder: str | None = None,
                name: str = "warmup_plan.py") -> str:
    """The plan's source; ``source`` names the session it was made from, ``folder`` is where
    the plan is written as ``name`` (the files it may load are written relative to it)."""
    files: dict[str, str] = {}
    for planned in plan.planned:
        for module, path in planned.files.items():
            files.setdefault(dotted(module), _relative(path, folder))
    blocks = list(_blocks(plan))
    lines = [*_header(plan, source, name), "", *_HELPERS.splitlines(), ""]
    pairs = ", ".join(f"{python_string(k)}: {python_string(v)}" for k, v in sorted(files.items()))
    lines.append("# The files of the modules below that may have to be loaded by path.")
    lines.append(f"_FILES = {{{pairs}}}")
    lines += ["", ""]
    for block in blocks:
        lines += [*block.lines, "", ""]
    lines.append("# Every block, in the order the run first compiled them.")
    lines.append(f"BLOCKS = [{', '.join(block.name for block in blocks)}]")
    lines += ["", *_unplayable(plan), "", *_WARM_UP.splitlines()]
    return "\n".join(lines).rstrip("\n") + "\n"


def _relative(path: str, folder: str | None) -> str:
    if folder is None:
        return path
    try:
        return os.path.relpath(path, folder)
    except ValueError:  # another drive (Windows)
        return path


def _header(plan: Plan, source: str, name: str) -> list[str]:
    count = len(plan.planned)
    functions = len(plan.functions())
    return [
        '"""Warm-up plan written by recompile-cli: compile every signature ahead of time.',
        "",
        "warm_up(parallel=None) calls jitted.lower(...).compile() for each signature below; a",
        "later call with the same signature then traces, lowers and compiles nothing.",
        "warm_up(parallel=N) compiles N signatures at a time in threads. Edit freely: each",
        "function is one block, each signature one yield.",
        "",
        f"    python {_shown_name(name)} [N]  # warm up (in N threads)",
        f"    recompile-cli run --after-warmup {_shown_name(name)} SCRIPT  # prove it covers it",
        '"""',
        f"# made from {python_comment(source)}",
        f"# run: {python_comment(relative(plan.target) or plan.target)}"
        f" (jax {python_comment(plan.jax_version)}, {python_comment(plan.backend)})",
        f"# {count} signature{'s' if count != 1 else ''} of {functions} "
        f"function{'s' if functions != 1 else ''}; {len(plan.unplayable)} not replayable "
        "(listed at the end)",
    ]


def _shown_name(name: str) -> str:
    """The plan's file name in its docstring: only a plain file name is shown as it is."""
    plain = name.replace("_", "").replace("-", "").replace(".", "")
    return name if plain.isalnum() and plain.isascii() else "PLAN.py"


@dataclass
class _Block:
    name: str
    lines: list[str] = field(default_factory=list)


def _blocks(plan: Plan) -> Iterator[_Block]:
    names: set[str] = set()
    for members in plan.functions().values():
        first = members[0]
        name = "_" + dotted(first.qualname).replace(".", "_")
        while name in names or name in _RESERVED:
            name += "_"
        names.add(name)
        block = _Block(name)
        count = len(members)
        block.lines.append(f"# -- {python_comment(first.function)} "
                           f"({python_comment(relative(first.key.partition('@')[2]) or '?')}): "
                           f"{count} signature{'s' if count != 1 else ''} --")
        block.lines.append(f"def {name}():")
        module, qualname = dotted(first.module), dotted(first.qualname)
        block.lines.append(f"    f = _jitted({python_string(module)}, {python_string(qualname)})")
        for planned in members:
            block.lines += _signature(planned)
        yield block


def _signature(planned: Planned) -> list[str]:
    site = relative(planned.call_site) or "an unknown call site"
    lines = [f"    # first compiled at {python_comment(site)}, "
             f"{planned.compile_seconds:.3f} s"]
    if planned.context:
        settings = ", ".join(f"{k}={v}" for k, v in sorted(planned.context.items()))
        lines.append(f"    # traced with {python_comment(settings)}: run the plan with the same "
                     "settings")
    leaves = iter(zip(planned.leaves, planned.placements, strict=True))
    items: list[tuple[str, _Expr | str]] = []
    for argument in planned.arguments:
        prefix = f"{dotted(argument.name)}=" if argument.keyword else ""
        items.append((prefix, _argument(argument, leaves)))
    if next(leaves, None) is not None:
        raise ValueError("more leaves than the arguments' pytrees hold")
    call = _Expr("f.lower(", items, ")").lines(4)
    lines.append(f"    label = {python_string(planned.label)}")
    lines.append(f"    yield {python_string(planned.function)}, label, lambda: {call[0]}")
    lines += [f"    {line}" for line in call[1:]]
    return lines


@dataclass
class _Expr:
    """An expression written flat when it fits, else one item per line."""

    head: str
    items: list[tuple[str, _Expr | str]]
    tail: str

    def flat(self) -> str:
        parts = [prefix + (item if isinstance(item, str) else item.flat())
                 for prefix, item in self.items]
        single = "," if self.head == "(" and len(parts) == 1 else ""
        return self.head + ", ".join(parts) + single + self.tail

    def lines(self, indent: int) -> list[str]:
        flat = self.flat()
        if indent + len(flat) <= WIDTH or not self.items:
            return [flat]
        out = [self.head]
        for prefix, item in self.items:
            if isinstance(item, str):
                out.append(f"    {prefix}{item},")
                continue
            inner = item.lines(indent + 4)
            out.append(f"    {prefix}{inner[0]}")
            out += [f"    {line}" for line in inner[1:]]
            out[-1] += ","
        out.append(self.tail)
        return out


def _argument(argument: Argument,
              leaves: Iterator[tuple[tuple[str, Leaf], Placement | None]]) -> _Expr | str:
    if argument.static is not None:
        return _value(argument.static)
    nodes = iter(argument.tree)
    return _tree(nodes, leaves)


def _tree(nodes: Iterator[Node], leaves: Iterator[tuple[tuple[str, Leaf], Placement | None]]
          ) -> _Expr | str:
    node = next(nodes)
    kind = node.kind
    if kind == NodeKind.LEAF:
        (_, leaf), placement = next(leaves)
        return _leaf(leaf, placement)
    if kind == NodeKind.NONE:
        return "None"
    children = [_tree(nodes, leaves) for _ in range(node.arity)]
    if kind == NodeKind.TUPLE:
        return _Expr("(", [("", c) for c in children], ")")
    if kind == NodeKind.LIST:
        return _Expr("[", [("", c) for c in children], "]")
    if kind == NodeKind.DICT:
        keys = [_flat(_value(key)) for key in node.keys]
        return _Expr("{", [(f"{key}: ", c) for key, c in zip(keys, children, strict=True)], "}")
    cls = _ref(node.type or "")
    if kind == NodeKind.NAMEDTUPLE:
        return _Expr("_namedtuple(", [("", cls), *(("", c) for c in children)], ")")
    if kind == NodeKind.CUSTOM:
        aux = "None" if node.aux is None else _value(node.aux)
        return _Expr("_node(", [("", cls), ("", aux), *(("", c) for c in children)], ")")
    raise ValueError(f"a pytree node of kind {kind!r}")


def _leaf(leaf: Leaf, placement: Placement | None) -> str:
    parts = [_ints(leaf.shape), python_string(leaf.dtype)]
    if leaf.weak_type:
        parts.append("weak_type=True")
    if placement is not None:
        parts.append(f"sharding={_placement(placement)}")
    return f"_array({', '.join(parts)})"


def _placement(placement: Placement) -> str:
    _check_placement(placement)
    memory = "" if placement.memory_kind is None else \
        f", memory_kind={python_string(placement.memory_kind)}"
    platform = python_string(placement.platform)
    if placement.kind == "device":
        return f"_device({platform}, {int(placement.devices[0])}{memory})"
    ids = _ints(placement.devices)
    shape = _ints(placement.mesh_shape)
    names = _tuple([python_string(n) for n in placement.axis_names])
    types = _tuple([python_string(t) for t in placement.axis_types])
    spec = repr(literal(placement.spec))
    return f"_named(_mesh({platform}, {ids}, {shape}, {names}, {types}), {spec}{memory})"


def _ints(values: tuple[int, ...]) -> str:
    return _tuple([str(int(v)) for v in values])


def _tuple(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _ref(text: str) -> str:
    module, qualname = reference(text)
    return f"_ref({python_string(module)}, {python_string(qualname)})"


def _value(value: Value) -> _Expr | str:
    checked_value(value)
    kind = value.kind
    if kind == ValueKind.LITERAL:
        return repr(literal(value.text))
    if kind == ValueKind.REF:
        return _ref(value.text)
    if kind == ValueKind.DTYPE:
        return f"jax.numpy.dtype({python_string(value.text)})"
    items = [_value(item) for item in value.items]
    if kind == ValueKind.TUPLE:
        return _Expr("(", [("", item) for item in items], ")")
    if kind == ValueKind.LIST:
        return _Expr("[", [("", item) for item in items], "]")
    if kind == ValueKind.DICT:
        pairs = [(f"{_flat(items[i])}: ", items[i + 1]) for i in range(0, len(items), 2)]
        return _Expr("{", pairs, "}")
    if kind == ValueKind.NAMEDTUPLE:
        return _Expr("_namedtuple(", [("", _ref(value.text)), *(("", i) for i in items)], ")")
    fields = [(f"{dotted(name)}=", item) for name, item in zip(value.names, items, strict=True)]
    return _Expr("_dataclass(", [("", _ref(value.text)), *fields], ")")


def _flat(item: _Expr | str) -> str:
    return item if isinstance(item, str) else item.flat()


def _unplayable(plan: Plan) -> list[str]:
    if not plan.unplayable:
        return ["# Not replayable: nothing; every compile of the run is planned."]
    lines = ["# Not replayable (listed, not warmed up; a compile of one after the warm-up is",
             "# reported with its cause):"]
    for reason, items in unplayable_by_reason(plan).items():
        lines.append(f"# - {python_comment(reason)}:")
        for item in items:
            site = relative(item.call_site) or "an unknown call site"
            compiles = counted(item.compiles, "compile")
            lines.append(f"#     {python_comment(item.function)}: {compiles}, first at "
                         f"{python_comment(site)}")
    return lines


_RESERVED = {"_module", "_ref", "_jitted", "_array", "_key_dtype", "_devices", "_device",
             "_mesh", "_named", "_node", "_namedtuple", "_dataclass", "_Skip", "_HERE",
             "_FILES", "_same_file", "_loaded"}

_HELPERS = '''import dataclasses
import importlib
import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import jax

_HERE = os.path.dirname(os.path.abspath(__file__))


class _Skip(Exception):
    """A signature this machine cannot compile (its devices are missing)."""


def _same_file(a, b):
    if not a or os.path.basename(a) != os.path.basename(b):
        return False
    try:
        return os.path.abspath(a) == b or os.path.samefile(a, b)
    except OSError:
        return False


_loaded = {}


def _module(name):
    """The module ``name``. One that _FILES names is the module loaded from that file, under
    any name (the running script, ``__main__``, first), else imported, else loaded from it."""
    file = _FILES.get(name)
    if file is None:
        return sys.modules.get(name) or importlib.import_module(name)
    if name in _loaded:
        return _loaded[name]
    file = os.path.normpath(os.path.join(_HERE, file))
    running = sys.modules.get("__main__")
    for module in [running, sys.modules.get(name), *list(sys.modules.values())]:
        if module is not None and _same_file(getattr(module, "__file__", None), file):
            _loaded[name] = module
            return module
    if name != "__main__":
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            if "." in name:
                raise
    if name not in _loaded:
        stem = os.path.splitext(os.path.basename(file))[0]
        label = stem if stem.isidentifier() and stem not in sys.modules else "_warmup_" + stem
        spec = importlib.util.spec_from_file_location(label, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[label] = module
        sys.path.insert(0, os.path.dirname(file))
        spec.loader.exec_module(module)
        _loaded[name] = module
    return _loaded[name]


def _ref(module, qualname):
    obj = _module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _jitted(module, qualname):
    f = _ref(module, qualname)
    if not hasattr(f, "lower"):
        raise TypeError(f"{module}:{qualname} is not a jitted function (it has no .lower)")
    return f


def _key_dtype(name):
    for impl in ("threefry2x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32",
                 "threefry4x32"):
        try:
            dtype = jax.eval_shape(lambda: jax.random.key(0, impl=impl)).dtype
        except Exception:
            continue
        if str(dtype) == name:
            return dtype
    raise _Skip(f"no PRNG implementation here has the key dtype {name}")


def _array(shape, dtype, weak_type=False, sharding=None):
    if dtype.startswith("key<"):
        dtype = _key_dtype(dtype)
    return jax.ShapeDtypeStruct(shape, dtype, weak_type=weak_type, sharding=sharding)


def _devices(platform, ids):
    try:
        here = {d.id: d for d in jax.devices(platform)}
    except RuntimeError:
        raise _Skip(f"needs {platform} devices; this machine has none") from None
    missing = [i for i in ids if i not in here]
    if missing:
        raise _Skip(f"needs {platform} devices {list(ids)}; this machine has {len(here)}")
    return [here[i] for i in ids]


def _device(platform, id, memory_kind=None):
    return jax.sharding.SingleDeviceSharding(_devices(platform, [id])[0],
                                             memory_kind=memory_kind)


def _mesh(platform, ids, shape, names, types):
    import numpy as np

    devices = np.array(_devices(platform, ids), dtype=object).reshape(shape)
    if not types:
        return jax.sharding.Mesh(devices, names)
    kinds = tuple(getattr(jax.sharding.AxisType, t) for t in types)
    return jax.sharding.Mesh(devices, names, axis_types=kinds)


def _named(mesh, spec, memory_kind=None):
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec),
                                      memory_kind=memory_kind)


def _node(kind, aux, *children):
    """A registered pytree node of type ``kind`` with static data ``aux``, made as JAX's own
    unflattening makes it."""
    tu = jax.tree_util
    treedef = tu.PyTreeDef.from_node_data_and_children(
        tu.default_registry, (kind, aux), [tu.tree_structure(c) for c in children])
    return tu.tree_unflatten(treedef, [leaf for c in children for leaf in tu.tree_leaves(c)])


def _namedtuple(kind, *fields):
    if not (isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")):
        raise TypeError(f"{kind!r} is not a NamedTuple")
    return kind(*fields)


def _dataclass(kind, **fields):
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        raise TypeError(f"{kind!r} is not a dataclass")
    return kind(**fields)'''

_WARM_UP = '''def warm_up(parallel=None):
    """Compile every signature of BLOCKS: one after the other, or ``parallel`` at a time in
    threads (XLA releases the GIL while it compiles).

    Returns {"compiled": [(function, label)], "skipped": [(function, label, reason)]}: what
    this machine cannot compile (devices it lacks) is skipped and listed. Raises RuntimeError
    naming every signature that failed to lower or compile, after trying all of them.
    """
    work = [item for block in BLOCKS for item in block()]

    def one(item):
        function, label, lower = item
        try:
            lower().compile()
        except _Skip as exc:
            return "skipped", (function, label, str(exc))
        except Exception as exc:
            return "failed", (function, label, f"{type(exc).__name__}: {exc}")
        return "compiled", (function, label)

    if parallel is not None and parallel > 1:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            results = list(pool.map(one, work))
    else:
        results = [one(item) for item in work]
    done = {"compiled": [], "skipped": [], "failed": []}
    for status, detail in results:
        done[status].append(detail)
    if done["failed"]:
        raise RuntimeError("the warm-up could not compile " + "; ".join(
            f"{function}({label}): {error}" for function, label, error in done["failed"]))
    return {"compiled": done["compiled"], "skipped": done["skipped"]}


if __name__ == "__main__":
    found = warm_up(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"warm-up: {len(found['compiled'])} signatures compiled, "
          f"{len(found['skipped'])} skipped")
    for function, label, reason in found["skipped"]:
        print(f"  skipped {function}({label}): {reason}")'''


# -- what the warmup command prints ---------------------------------------------------------------
def summary_text(plan: Plan, written: str, source: str) -> str:
    """The terminal summary of a plan written to ``written``: its signatures per function, then
    what is not replayable and why (the same list as the plan's comments and the JSON's)."""
    functions = plan.functions()
    lines = [f"recompile-cli warmup: wrote {terminal(written)} from {terminal(source)}: "
             f"{counted(len(plan.planned), 'signature')} of "
             f"{counted(len(functions), 'function')}"]
    for members in functions.values():
        first = members[0]
        site = relative(first.call_site) or "an unknown call site"
        lines.append(f"- {terminal(first.function)}: {counted(len(members), 'signature')}, first "
                     f"compiled at {terminal(site)}")
    if not plan.planned:
        lines.append("- nothing to warm up: no compile of the run can be replayed")
    if plan.unplayable:
        lines += ["", "Not replayable (not in the plan):"]
        for reason, items in unplayable_by_reason(plan).items():
            names = ", ".join(f"{terminal(i.function)} ({i.compiles})" for i in items[:12])
            more = f", ... {len(items) - 12} more" if len(items) > 12 else ""
            lines.append(f"- {terminal(reason)}: {names}{more}")
    return "\n".join(lines) + "\n"


def summary_json(plan: Plan, written: str, source: str) -> str:
    """The same summary as JSON (``plan``, ``session``, ``planned``, ``not_replayable``)."""
    return indented({
        "plan": written, "session": source, "target": plan.target,
        "jax_version": plan.jax_version, "backend": plan.backend,
        "signatures": len(plan.planned), "functions": len(plan.functions()),
        "planned": [{"function": p.function, "defined_at": p.key.partition("@")[2] or None,
                     "module": p.module, "qualname": p.qualname, "signature": p.label,
                     "call_site": p.call_site, "compile_seconds": p.compile_seconds}
                    for p in plan.planned],
        "not_replayable": [{"function": u.function, "owner": u.owner, "signature": u.label,
                            "call_site": u.call_site, "compiles": u.compiles,
                            "reason": u.reason} for u in plan.unplayable],
    })
