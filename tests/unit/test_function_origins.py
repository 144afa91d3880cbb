"""Whose a function is and where its object was made, decided without JAX: a jit its own package
applied (as a decorator, or under another name) against a function exported plain; the line
that made a lambda, or that assigned a partial or the wrapper holding it; packages and the names
reports show (``package_of``, ``shown_name``)."""

from __future__ import annotations

import functools
import sys
import types

import pytest

from recompile_cli.analysis.report import package_of, shown_name
from recompile_cli.capture.code import origins
from recompile_cli.session.model import FunctionKind, Owner


class _Jitted:
    """Stands in for a jit wrapper: callable, with ``__wrapped__``."""

    def __init__(self, fun: object) -> None:
        self.__wrapped__ = fun

    def __call__(self, *args: object) -> None:
        return None


def _raw(x: int) -> int:
    return x


def _other(x: int) -> int:
    return x


@pytest.fixture
def module(monkeypatch):
    """A module whose functions' ``__module__`` and ``__qualname__`` lead back to it."""
    mod = types.ModuleType("fake_origin_lib")
    monkeypatch.setitem(sys.modules, mod.__name__, mod)

    def define(name: str) -> types.FunctionType:
        fun = types.FunctionType(_raw.__code__, {}, name)
        fun.__module__, fun.__qualname__ = mod.__name__, name
        return fun

    return mod, define


def test_a_decorated_jit_is_applied_by_its_package(module):
    mod, define = module
    helper = define("helper")
    mod.helper = _Jitted(helper)  # @jax.jit def helper
    assert origins.applied_by_its_package(helper)
    assert not origins.applied_by_its_package(mod.helper)  # the user's jax.jit(mod.helper)


def test_a_jit_exported_under_another_name_is_applied_by_its_package(module):
    mod, define = module
    mod._shift = shift = define("_shift")
    mod.shifted = _Jitted(shift)  # shifted = jax.jit(_shift)
    assert origins.applied_by_its_package(shift)


def test_plain_functions_closures_and_methods_are_not(module):
    mod, define = module
    mod.plain = plain = define("plain")
    assert not origins.applied_by_its_package(plain)

    def make():
        def update_fn(x: int) -> int:
            return x
        return update_fn

    assert not origins.applied_by_its_package(make())  # optax's update_fn: a closure

    class Model:
        @staticmethod
        def apply(x: int) -> int:
            return x

        def __call__(self, x: int) -> int:
            return x

    assert not origins.applied_by_its_package(Model().__call__)
    assert not origins.applied_by_its_package(Model.apply)  # staticmethod is no jit


def test_a_lambda_is_made_at_its_first_line():
    line = sys._getframe().f_lineno + 1
    fun = lambda x: x  # noqa: E731
    site = origins.creation_site(fun, FunctionKind.LAMBDA, None)
    assert site is not None and site.endswith(f"test_function_origins.py:{line}")


def test_a_partial_is_made_where_the_caller_assigned_it_or_its_wrapper():
    first = sys._getframe().f_lineno + 1
    g = functools.partial(_raw, 1)
    step = _Jitted(g)
    here = sys._getframe()
    site = origins.creation_site(g, FunctionKind.PARTIAL, here)
    assert site is not None and site.endswith(f"test_function_origins.py:{first}")
    # only the wrapper is held: the line that assigned the wrapper
    h = functools.partial(_other, 2)
    wrapper_line = sys._getframe().f_lineno + 1
    other = _Jitted(h)
    del h
    site = origins.creation_site(other.__wrapped__, FunctionKind.PARTIAL, sys._getframe())
    assert site is not None and site.endswith(f"test_function_origins.py:{wrapper_line}")
    # held by nothing the caller names, made elsewhere: not known
    hidden = [functools.partial(_raw, 3)]
    unknown = origins.creation_site(hidden[0], FunctionKind.PARTIAL, sys._getframe())
    assert unknown is None
    assert step.__wrapped__ is g


def test_packages_and_shown_names():
    lib = "/venv/lib/python3.11/site-packages/optax/_src/alias.py:10"
    assert package_of(Owner.USER, lib) == "optax"  # a library's function the user jitted
    assert package_of(Owner.LIBRARY, lib) == "optax"
    assert package_of(Owner.USER, "/home/me/train.py:3") == "user"
    assert shown_name("update_fn", Owner.USER, "optax") == "update_fn (optax)"
    assert shown_name("step", Owner.USER, "user") == "step"
    assert shown_name("sin", Owner.JAX, "jax") == "sin"
    assert shown_name("<lambda>", Owner.LIBRARY, "flax") == "<lambda> (flax)"

