"""A library class's mode switches: the attributes its own code branches on in Python.

A Python-bool flag of a library module (equinox ``Dropout(inference=...)``, flax
``nnx.BatchNorm(use_running_average=...)``) that one of its methods tests in an ``if``,
``while``, conditional expression or ``assert`` (directly or through a local made from it) picks
the traced program; it is recognised by that use, read from the class's source with ``ast``,
never by a list of names, and never in the user's own classes. Cache misses only, once per
(class, attribute).
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

from recompile_cli.capture.code.stack import owner_of
from recompile_cli.session.model import Owner

_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert)
# methods that never run while a call is traced: their branches build or describe the object
_NOT_CALLED = frozenset({"__init__", "__post_init__", "__repr__", "__str__", "__eq__",
                         "__hash__", "__setattr__", "__init_subclass__"})


@functools.lru_cache(maxsize=1024)
def mode_switch(kind: type, attribute: str) -> bool:
    """True when a class of a library (or of JAX) in ``kind``'s MRO branches on
    ``self.<attribute>`` in Python. Source that cannot be read says no."""
    for klass in getattr(kind, "__mro__", ()):
        if klass is object or not _library(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except Exception:  # no source (a C type, a class made at runtime), or odd source
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    _branches(method, attribute) for method in node.body
                    if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and method.name not in _NOT_CALLED):
                return True
    return False


def _library(klass: type) -> bool:
    try:
        path = inspect.getsourcefile(klass)
    except (TypeError, OSError):
        return False
    return path is not None and owner_of(path) != Owner.USER


def _branches(method: ast.FunctionDef | ast.AsyncFunctionDef, attribute: str) -> bool:
    """``method`` tests ``self.<attribute>``, or a local made from it, in a Python branch."""
    params = method.args.posonlyargs + method.args.args
    if not params:
        return False
    me = params[0].arg
    tainted: set[str] = set()

    def reads(node: ast.AST) -> bool:
        for item in ast.walk(node):
            if (isinstance(item, ast.Attribute) and item.attr == attribute
                    and isinstance(item.value, ast.Name) and item.value.id == me):
                return True
            if isinstance(item, ast.Name) and item.id in tainted:
                return True
        return False

    assignments = [n for n in ast.walk(method)
                   if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
                   and n.value is not None]
    grew = True
    while grew:  # locals made from the attribute, or from such locals
        grew = False
        for node in assignments:
            assert node.value is not None
            if not reads(node.value):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if not names <= tainted:
                tainted |= names
                grew = True
    tests = [n.test for n in ast.walk(method) if isinstance(n, _TESTS)]
    tests += [condition for n in ast.walk(method) if isinstance(n, ast.comprehension)
              for condition in n.ifs]
    return any(reads(test) for test in tests)
