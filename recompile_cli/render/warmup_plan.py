"""A warm-up plan as Python source: ``warm_up(parallel=None)`` compiles every planned signature
with ``jitted.lower(*args).compile()`` on the user's own jitted functions.

This module owns the plan's syntax tree and its layout: a docstring, fixed helpers, one block
per function (a generator of ``(function, label, lower)``), ``BLOCKS``, what could not be
replayed (comments) and ``warm_up``. It must never make code out of text: what a session gives
becomes an ``ast.Constant``, a name checked by ``dotted`` or a comment through ``python_comment``;
``ast.unparse`` writes every node, and the source is parsed back and compared with the tree.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

from recompile_cli.analysis.shorten import counted
from recompile_cli.analysis.warmup.plan import (
    Plan,
    Planned,
    Unwritable,
    checked_value,
    dotted,
    literal,
    reference,
    unplayable_by_reason,
)
from recompile_cli.analysis.warmup.plan import check_placement as _check_placement
from recompile_cli.analysis.warmup.project import checked_files, imported_modules
from recompile_cli.render.escape import controls, python_comment, terminal
from recompile_cli.session.codec import indented
from recompile_cli.session.locations import parse, relative
from recompile_cli.session.model import Leaf
from recompile_cli.session.warmup import Node, NodeKind, Placement, Value, ValueKind

WIDTH = 96  # a call or container longer than this is written one item per line
UNBROKEN = "_array"  # a leaf stays on one line, its sharding included
_LOAD = ast.Load()
_LITERAL_TYPES = {str, bytes, bool, int, float, complex, type(None)}  # repr is a literal
_NO_ARGUMENTS = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
_Leaves = Iterator[tuple[tuple[str, Leaf], Placement | None]]


class _Note(ast.stmt):
    """A comment line: written as ``#`` and its text through ``python_comment``, never code."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


def render_plan(plan: Plan, source: str, folder: str | None = None,
                name: str = "warmup_plan.py") -> str:
    """The plan's source; ``source`` names the session it was made from, ``folder`` is where
    the plan is written as ``name`` (the files it may load are written relative to it).
    ``OutsideRoot`` (``analysis.warmup.project``) when the session names a file outside the
    recorded project root; the docstring names the root, every module the plan imports and
    every file it may load."""
    root, checked = checked_files(plan)  # OutsideRoot: no plan is written
    files = {dotted(module): _relative(path, folder) for module, path in checked.items()}
    blocks = list(_blocks(plan))
    first_calls = ast.Dict(
        [_first_call_key(members[0], folder) for members, _, _ in blocks],
        [_name(block.name) for _, _, block in blocks])
    sections: list[list[ast.stmt]] = [
        [ast.Expr(_docstring(plan, source, name, root, checked))],
        [_Note("The files of the modules below that may have to be loaded by path."),
         _assign("_FILES", _constant(dict(sorted(files.items()))))],
        *([note, block] for _, note, block in blocks),
        [_Note("Every block of a jitted object a module holds, in the order the run first "
               "compiled them."),
         _assign("BLOCKS", ast.List([_name(block.name) for members, _, block in blocks
                                     if members[0].importable], _LOAD))],
        [_Note("Every block by its function (name, file relative to this plan, line): what a"),
         _Note("first call of that function warms up (run --after-warmup on a script without"),
         _Note("a main guard, or a jit made inside a function)."),
         _assign("AT_FIRST_CALL", first_calls)],
        _unplayable(plan)]
    written = [_section(statements) for statements in sections]
    return "\n\n\n".join([written[0], _fixed(_HELPERS), *written[1:], _fixed(_WARM_UP)]) + "\n"


def _section(statements: list[ast.stmt]) -> str:
    """Statements as source; raises unless every name in them is an identifier, every constant
    of a literal's type, and the source parses back to what ``ast.unparse`` writes of them,
    notes left out (so no session's text, no layout and no comment makes code)."""
    module = ast.fix_missing_locations(ast.Module(statements, []))
    text = "\n".join(line for statement in statements for line in _written(statement, ""))
    for node in ast.walk(module):  # written: the notes go
        if isinstance(node, ast.Module | ast.FunctionDef):
            node.body = [statement for statement in node.body if not isinstance(statement, _Note)]
        if isinstance(node, ast.Constant) and type(node.value) not in _LITERAL_TYPES:
            raise Unwritable(f"a constant of type {type(node.value).__name__}")
        for field in ("id", "attr", "arg", "name"):  # Name, Attribute, keyword, FunctionDef
            word = getattr(node, field, None)
            if isinstance(word, str) and not dotted(word).isidentifier():
                raise Unwritable(f"{word!r} is not a name")
    if ast.dump(ast.parse(text)) != ast.dump(ast.parse(ast.unparse(module))):
        raise AssertionError("a plan's source that differs from its syntax tree")
    return text


@functools.cache
def _fixed(source: str) -> str:
    """Fixed source (nothing of a session's) as ``ast.unparse`` writes it: its top-level
    statements two blank lines apart, but imports together."""
    text, imports = "", False
    for statement in ast.parse(source).body:
        follows = imports and isinstance(statement, ast.Import | ast.ImportFrom)
        text += ("\n" if follows else "\n\n\n" if text else "") + ast.unparse(statement)
        imports = isinstance(statement, ast.Import | ast.ImportFrom)
    return text


def _written(stmt: ast.stmt, indent: str) -> list[str]:
    """``stmt`` as ``ast.unparse`` writes it, but a note as a comment, a def that holds notes
    statement by statement, and a yield of a tuple without its parentheses, the last item
    laid out by ``_laid``."""
    if isinstance(stmt, _Note):
        return [indent + "# " + python_comment(stmt.text)]
    if isinstance(stmt, ast.FunctionDef) and any(isinstance(s, _Note) for s in stmt.body):
        header = ast.FunctionDef(stmt.name, stmt.args, [ast.Pass()], [], lineno=0)
        return [indent + ast.unparse(header).split("\n")[0],
                *(line for s in stmt.body for line in _written(s, indent + "    "))]
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(value, ast.Yield) and isinstance(value.value, ast.Tuple):
        *first, last = value.value.elts
        laid = _laid(last, len(indent))
        return [indent + "yield " + "".join(ast.unparse(e) + ", " for e in first) + laid[0],
                *(indent + line for line in laid[1:])]
    return [indent + line for line in ast.unparse(ast.Module([stmt], [])).split("\n")]


def _laid(node: ast.expr, indent: int) -> list[str]:
    """``node`` as ``ast.unparse`` writes it when it fits in ``WIDTH`` at ``indent``, else a
    call or container one item per line, each laid out likewise (a lambda: its body)."""
    if isinstance(node, ast.Lambda):
        body = _laid(node.body, indent)
        return ["lambda: " + body[0], *body[1:]]
    flat = ast.unparse(node)
    head, items, tail = _items(node)
    if indent + len(flat) <= WIDTH or not items:
        return [flat]
    lines = [head]
    for prefix, item in items:
        inner = _laid(item, indent + 4)
        lines += ["    " + prefix + inner[0], *("    " + line for line in inner[1:])]
        lines[-1] += ","
    return [*lines, tail]


def _items(node: ast.expr) -> tuple[str, list[tuple[str, ast.expr]], str]:
    """A call or container as its opening, its items (each after its keyword or key), its end;
    no items for anything else, or a call of ``UNBROKEN``."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) != UNBROKEN:
        keywords = [(str(k.arg) + "=", k.value) for k in node.keywords]
        return ast.unparse(node.func) + "(", [("", a) for a in node.args] + keywords, ")"
    if isinstance(node, ast.Dict):
        pairs = zip(node.keys, node.values, strict=True)
        return "{", [(ast.unparse(k) + ": ", v) for k, v in pairs if k is not None], "}"
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        ends = "()" if isinstance(node, ast.Tuple) else "[]" if isinstance(node, ast.List) else "{}"
        return ends[0], [("", e) for e in node.elts], ends[1]
    return "", [], ""


def _relative(path: str, folder: str | None) -> str:
    try:
        return path if folder is None else os.path.relpath(path, folder)
    except ValueError:  # another drive (Windows)
        return path


def _docstring(plan: Plan, source: str, name: str, root: str, files: dict[str, str]
               ) -> ast.Constant:
    modules = imported_modules(plan)
    return ast.Constant(
        "Warm-up plan written by recompile-cli: compile every signature ahead of time.\n\n"
        "warm_up(parallel=None) calls jitted.lower(...).compile() for each signature below; a\n"
        "later call with the same signature then traces, lowers and compiles nothing.\n"
        "warm_up(parallel=N) compiles N signatures at a time in threads. Edit freely: each\n"
        "function is one block, each signature one yield.\n\n"
        f"    python {controls(name)} [N]  # warm up (in N threads)\n"
        f"    recompile-cli run --after-warmup {controls(name)} SCRIPT  # prove it covers it\n\n"
        f"Made from {controls(source)}; run: {controls(relative(plan.target) or plan.target)}"
        f" (jax {controls(plan.jax_version)}, {controls(plan.backend)}).\n"
        f"{counted(len(plan.planned), 'signature')} of "
        f"{counted(len(plan.functions()), 'function')}; {len(plan.unplayable)} not replayable "
        "(listed at the end).\n\n"
        + ("What it runs (read this before you run a plan you did not make): it imports the\n"
           "modules below, by name or, where a file is given, from that file (_FILES), and no\n"
           f"other of yours. Every file is inside the project root, {controls(root)}.\n"
           + "".join(f"    {module}" + (f"  {controls(files[module])}" if module in files
                                          else "") + "\n" for module in modules)
           if modules else "What it runs: no module of yours (no signature is planned).\n"))


def _blocks(plan: Plan) -> Iterator[tuple[list[Planned], _Note, ast.FunctionDef]]:
    """Each function's block: a note, then ``def _name(f=None):`` yielding its signatures
    (``f``: the jitted object, imported where a module holds it, else given by the first
    call that warms it up: ``def _name(f):``)."""
    names: set[str] = set()
    for members in plan.first_call_functions().values():
        first = members[0]
        name = block_name(first)
        while name in names:
            name += "_"
        names.add(name)
        defined = relative(first.key.partition("@")[2]) or "?"
        if first.importable:
            jitted = _call("_jitted", ast.Constant(dotted(first.module)),
                           ast.Constant(dotted(first.qualname)))
            given = ast.Compare(_name("f"), [ast.Is()], [ast.Constant(None)])
            head = [_assign("f", ast.IfExp(given, jitted, _name("f")))]
            arguments = ast.arguments(posonlyargs=[], args=[ast.arg("f")], kwonlyargs=[],
                                      kw_defaults=[], defaults=[ast.Constant(None)])
            note = ""
        else:
            head, note = [], ", warmed at its first call (no module holds its jit)"
            arguments = ast.arguments(posonlyargs=[], args=[ast.arg("f")], kwonlyargs=[],
                                      kw_defaults=[], defaults=[])
        body = [*head, *(s for planned in members for s in _signature(planned))]
        yield (members, _Note(f"-- {first.function} ({defined}): "
                              f"{counted(len(members), 'signature')}{note} --"),
               ast.FunctionDef(name, arguments, body, []))


def _first_call_key(planned: Planned, folder: str | None) -> ast.expr:
    """(function name, its file relative to the plan's folder, its line): how a first call
    finds its block."""
    found = parse(planned.key.partition("@")[2])
    if found is None:
        return _constant((planned.function, "", 0))
    return _constant((planned.function, _relative(found.path, folder), found.line))


def block_name(planned: Planned) -> str:
    """The name of the plan's block that holds ``planned``'s function (``_train_step``), as
    ``render_plan`` names it where no other block takes that name first."""
    qualname = planned.qualname or planned.function
    name = "_" + "".join(c if c.isalnum() or c == "_" else "_" for c in qualname)
    while name in _RESERVED or not name.isidentifier() or not name.isascii():
        name += "_"
    return name


def signature_source(planned: Planned) -> str:
    """The lines of one signature as a plan's block holds them (its comment, ``label = ...``,
    ``yield ...``), to add to that block: written and checked as ``render_plan`` writes every
    block (``Unwritable`` when a part cannot be)."""
    return _section(_signature(planned))


def _signature(planned: Planned) -> list[ast.stmt]:
    notes = [_Note(f"first compiled at {relative(planned.call_site) or 'an unknown call site'}"
                   f", {planned.compile_seconds:.3f} s")]
    if planned.context:
        settings = sorted(planned.context.items())
        notes.append(_Note(f"traced with {', '.join(f'{k}={v}' for k, v in settings)}: "
                           "run the plan with the same settings"))
    leaves = iter(zip(planned.leaves, planned.placements, strict=True))
    arguments = [(a, _value(a.static) if a.static is not None else _tree(iter(a.tree), leaves))
                 for a in planned.arguments]
    if next(leaves, None) is not None:
        raise ValueError("more leaves than the arguments' pytrees hold")
    lower = _call("f.lower", *(node for a, node in arguments if not a.keyword),
                  keywords=[(a.name, node) for a, node in arguments if a.keyword])
    triple = [ast.Constant(planned.function), _name("label"), ast.Lambda(_NO_ARGUMENTS, lower)]
    return [*notes, _assign("label", ast.Constant(planned.label)),
            ast.Expr(ast.Yield(ast.Tuple(triple, _LOAD)))]


def _tree(nodes: Iterator[Node], leaves: _Leaves | None) -> ast.expr:
    """The next pytree of ``nodes`` (pre-order), its leaves taken from ``leaves`` (None: a
    treedef's, each leaf written ``0``)."""
    node = next(nodes)
    kind = node.kind
    if kind == NodeKind.LEAF:
        if leaves is None:
            return ast.Constant(0)
        (_, leaf), placement = next(leaves)
        return _call(UNBROKEN, _constant(tuple(leaf.shape)), ast.Constant(leaf.dtype), keywords=[
            ("weak_type", ast.Constant(True) if leaf.weak_type else None),
            ("sharding", None if placement is None else _placement(placement))])
    if kind == NodeKind.NONE:
        return ast.Constant(None)
    children = [_tree(nodes, leaves) for _ in range(node.arity)]
    if kind in (NodeKind.TUPLE, NodeKind.LIST):
        return (ast.Tuple if kind == NodeKind.TUPLE else ast.List)(children, _LOAD)
    if kind == NodeKind.DICT and len(node.keys) == len(children):
        return ast.Dict([_value(key) for key in node.keys], children)
    if kind == NodeKind.NAMEDTUPLE:
        return _call("_namedtuple", _ref(node.type or ""), *children)
    if kind == NodeKind.CUSTOM:
        aux = ast.Constant(None) if node.aux is None else _value(node.aux)
        return _call("_node", _ref(node.type or ""), aux, *children)
    raise ValueError(f"a pytree node of kind {kind!r}")


def _placement(p: Placement) -> ast.expr:
    _check_placement(p)
    memory = [("memory_kind", None if p.memory_kind is None else ast.Constant(p.memory_kind))]
    if p.kind == "device":
        return _call("_device", ast.Constant(p.platform), ast.Constant(p.devices[0]),
                     keywords=memory)
    mesh = _call("_mesh", ast.Constant(p.platform), *(_constant(tuple(part)) for part in (
        p.devices, p.mesh_shape, p.axis_names, p.axis_types)))
    return _call("_named", mesh, _constant(literal(p.spec)), keywords=memory)


def _value(value: Value) -> ast.expr:
    checked_value(value)
    kind = value.kind
    if kind == ValueKind.LITERAL:
        return _constant(literal(value.text))
    if kind == ValueKind.REF:
        return _ref(value.text)
    if kind == ValueKind.DTYPE:
        return _call("jax.numpy.dtype", ast.Constant(value.text))
    if kind == ValueKind.TREEDEF:
        nodes = iter(value.nodes)
        return _call("_treedef", _tree(nodes, None))
    items = [_value(item) for item in value.items]
    if kind in (ValueKind.TUPLE, ValueKind.LIST):
        return (ast.Tuple if kind == ValueKind.TUPLE else ast.List)(items, _LOAD)
    if kind == ValueKind.DICT:
        return ast.Dict(list(items[::2]), items[1::2])
    if kind == ValueKind.MAPPING:
        return _call("_mapping", _ref(value.text), ast.Dict(list(items[::2]), items[1::2]))
    if kind == ValueKind.NAMEDTUPLE:
        return _call("_namedtuple", _ref(value.text), *items)
    return _call("_dataclass", _ref(value.text),
                 keywords=list(zip(value.names, items, strict=True)))


def _constant(value: Any) -> ast.expr:
    """A literal's value (``literal``) as ``ast.Constant`` nodes and containers of them."""
    if isinstance(value, dict):
        return ast.Dict([_constant(k) for k in value], [_constant(v) for v in value.values()])
    if not isinstance(value, tuple | list | set):
        return ast.Constant(value)  # ``_section`` checks that its type is a literal's
    elements = [_constant(item) for item in value]
    if isinstance(value, set):
        return ast.Set(elements) if value else _call("set")
    return ast.Tuple(elements, _LOAD) if isinstance(value, tuple) else ast.List(elements, _LOAD)


def _ref(text: str) -> ast.Call:
    module, qualname = reference(text)
    return _call("_ref", ast.Constant(module), ast.Constant(qualname))


def _call(function: str, *args: ast.expr,
          keywords: Sequence[tuple[str, ast.expr | None]] = ()) -> ast.Call:
    """A call of the dotted name ``function``; keywords whose value is None are left out."""
    return ast.Call(_name(function), list(args),
                    [ast.keyword(k, v) for k, v in keywords if v is not None])


def _name(text: str) -> ast.expr:
    """A dotted name as Name and Attribute nodes, each part checked to be an identifier."""
    first, *rest = dotted(text).split(".")
    node: ast.expr = ast.Name(first, _LOAD)
    for part in rest:
        node = ast.Attribute(node, part, _LOAD)
    return node


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([ast.Name(name, ast.Store())], value)


def _unplayable(plan: Plan) -> list[ast.stmt]:
    if not plan.unplayable:
        return [_Note("Not replayable: nothing; every compile of the run is planned.")]
    notes: list[ast.stmt] = [
        _Note("Not replayable (listed, not warmed up; a compile of one after the warm-up is"),
        _Note("reported with its cause):")]
    for reason, items in unplayable_by_reason(plan).items():
        notes += [_Note(f"- {reason}:"), *(_Note(
            f"    {item.function}: {counted(item.compiles, 'compile')}, first at "
            f"{relative(item.call_site) or 'an unknown call site'}") for item in items)]
    return notes


_RESERVED = {"_module", "_ref", "_jitted", "_array", "_key_dtype", "_devices", "_device",
             "_mesh", "_named", "_node", "_namedtuple", "_dataclass", "_Skip", "_HERE",
             "_FILES", "_same_file", "_loaded", "_treedef", "_mapping", "_NnxJitted", "_",
             "_compile", "_persistent_cache", "_claimed", "_compile_claimed"}

_HELPERS = '''import collections.abc
import dataclasses
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
    holder, _, _ = qualname.rpartition(".")
    wrapper = _ref(module, holder) if holder else None
    if type(wrapper).__module__.startswith("flax.nnx."):
        return _NnxJitted(f, wrapper)
    return f

class _NnxJitted:
    """The jax.jit object inside a flax.nnx.jit function, lowered as nnx.jit lowers it:
    inside flax.nnx's update context of its wrapper."""

    def __init__(self, jitted, wrapper):
        self.jitted, self.wrapper = jitted, wrapper

    def lower(self, *args, **kwargs):
        from flax.nnx import graph

        with graph.update_context(self.wrapper):
            return self.jitted.lower(*args, **kwargs)

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
    device = _devices(platform, [id])[0]
    return jax.sharding.SingleDeviceSharding(device, memory_kind=memory_kind)

def _mesh(platform, ids, shape, names, types):
    import numpy as np

    devices = np.array(_devices(platform, ids), dtype=object).reshape(shape)
    if not types:
        return jax.sharding.Mesh(devices, names)
    kinds = tuple(getattr(jax.sharding.AxisType, t) for t in types)
    return jax.sharding.Mesh(devices, names, axis_types=kinds)

def _named(mesh, spec, memory_kind=None):
    spec = jax.sharding.PartitionSpec(*spec)
    return jax.sharding.NamedSharding(mesh, spec, memory_kind=memory_kind)

def _node(kind, aux, *children):
    """A registered pytree node of type ``kind`` with static data ``aux``, made as JAX's own
    unflattening makes it."""
    tu = jax.tree_util
    kids = [tu.tree_structure(c) for c in children]
    treedef = tu.PyTreeDef.from_node_data_and_children(tu.default_registry, (kind, aux), kids)
    if aux is not None and treedef.node_data()[1] is None:
        # a NamedTuple registered with its own flattening (jax.example_libraries'
        # OptimizerState): JAX makes it a NamedTuple node, so unflatten it as registered
        from jax._src import tree_util as registered

        entry = getattr(registered, "_registry", {}).get(kind)
        if entry is not None:
            return entry.from_iter(aux, children)
    return tu.tree_unflatten(treedef, [leaf for c in children for leaf in tu.tree_leaves(c)])

def _namedtuple(kind, *fields):
    if not (isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")):
        raise TypeError(f"{kind!r} is not a NamedTuple")
    return kind(*fields)

def _dataclass(kind, **fields):
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        raise TypeError(f"{kind!r} is not a dataclass")
    return kind(**fields)

def _mapping(kind, items):
    if not (isinstance(kind, type) and issubclass(kind, collections.abc.Mapping)):
        raise TypeError(f"{kind!r} is not a Mapping")
    return kind(items)

def _treedef(tree):
    """The structure of ``tree``, whose leaves are placeholders (a treedef held as static
    data: jax.example_libraries' OptimizerState, equinox.filter_jit's static arguments)."""
    return jax.tree_util.tree_structure(tree)'''

_WARM_UP = '''def _compile(item):
    function, label, lower = item
    try:
        lower().compile()
    except _Skip as exc:
        return "skipped", (function, label, str(exc))
    except Exception as exc:
        return "failed", (function, label, f"{type(exc).__name__}: {exc}")
    return "compiled", (function, label)

def _persistent_cache(cache_dir):
    """Turn JAX's persistent compilation cache on at ``cache_dir`` (every compile written)."""
    cache_dir = os.path.abspath(cache_dir)
    if jax.config.jax_compilation_cache_dir != cache_dir:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        try:  # a cache JAX already looked at (or not) is looked at again (JAX 0.10, 0.12)
            from jax._src import compilation_cache

            compilation_cache.reset_cache()
        except Exception:
            pass
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return cache_dir

def _claimed(claims, index):
    try:
        os.close(os.open(os.path.join(claims, str(index)), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False

def _compile_claimed(work, claims):
    """Compile each signature no other process claimed first; the indexes compiled."""
    return [i for i, item in enumerate(work) if _claimed(claims, i) and _compile(item)]

def warm_up(parallel=None, processes=None, cache_dir=None):
    """Compile every signature of BLOCKS: one after the other, ``parallel`` at a time in
    threads (XLA releases the GIL while it compiles), or in ``processes`` processes.

    With ``processes=N`` (and ``cache_dir``, or JAX's compilation_cache_dir already set), N - 1
    other processes start and compile signatures into JAX's persistent compilation cache while
    this one compiles its own (each signature claimed by whichever process comes to it first);
    this process then loads the others' from the cache, so its in-memory caches hold every
    signature. Give the serving job the same absolute cache_dir.

    Returns {"compiled": [(function, label)], "skipped": [(function, label, reason)]}: what
    this machine cannot compile (devices it lacks) is skipped and listed. Raises RuntimeError
    naming every signature that failed to lower or compile, after trying all of them.
    """
    work = [item for block in BLOCKS for item in block()]
    if processes is not None and processes > 1 and len(work) > 1:
        import subprocess
        import tempfile

        cache_dir = cache_dir or jax.config.jax_compilation_cache_dir
        if not cache_dir:
            raise ValueError("warm_up(processes=N) needs cache_dir= (or JAX's "
                             "compilation_cache_dir): the processes share their compiles there")
        cache_dir = _persistent_cache(cache_dir)
        with tempfile.TemporaryDirectory(prefix="warmup_claims_") as claims:
            command = [sys.executable, os.path.abspath(__file__), "--claims", claims, cache_dir]
            others = [subprocess.Popen(command) for _ in range(processes - 1)]
            try:
                _compile_claimed(work, claims)
            finally:
                for other in others:
                    other.wait()
    if parallel is not None and parallel > 1:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            results = list(pool.map(_compile, work))
    else:
        results = [_compile(item) for item in work]
    done = {"compiled": [], "skipped": [], "failed": []}
    for status, detail in results:
        done[status].append(detail)
    failed = [f"{function}({label}): {error}" for function, label, error in done["failed"]]
    if failed:
        raise RuntimeError("the warm-up could not compile " + "; ".join(failed))
    return {"compiled": done["compiled"], "skipped": done["skipped"]}

if __name__ == "__main__":
    if sys.argv[1:2] == ["--claims"]:  # one of warm_up(processes=N)'s other processes
        _persistent_cache(sys.argv[3])
        _compile_claimed([item for block in BLOCKS for item in block()], sys.argv[2])
        sys.exit(0)
    found = warm_up(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    compiled, skipped = found["compiled"], found["skipped"]
    print(f"warm-up: {len(compiled)} signatures compiled, {len(skipped)} skipped")
    for function, label, reason in skipped:
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
    for members in plan.first_call_functions().values():
        first = members[0]
        if not first.importable:
            site = relative(first.call_site) or "an unknown call site"
            lines.append(f"- {terminal(first.function)}: {counted(len(members), 'signature')} "
                         f"warmed at its first call (no module holds its jit), first compiled "
                         f"at {terminal(site)}")
    if not plan.planned and not plan.at_first_call:
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
        "at_first_call": [{"function": p.function, "defined_at": p.key.partition("@")[2] or None,
                           "signature": p.label, "call_site": p.call_site}
                          for p in plan.at_first_call],
        "planned": [{"function": p.function, "defined_at": p.key.partition("@")[2] or None,
                     "module": p.module, "qualname": p.qualname, "signature": p.label,
                     "call_site": p.call_site, "compile_seconds": p.compile_seconds}
                    for p in plan.planned],
        "not_replayable": [{"function": u.function, "owner": u.owner, "signature": u.label,
                            "call_site": u.call_site, "compiles": u.compiles,
                            "reason": u.reason} for u in plan.unplayable],
    })
