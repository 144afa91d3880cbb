"""The runtime guard's configuration, without JAX: ``RECOMPILE_CLI_GUARD``'s syntax and the
arguments of ``recompile_cli.guard``. (The guard on real JAX: ``tests/integration/test_guard.py``.)
"""

from __future__ import annotations

import pytest

import recompile_cli
from recompile_cli.guards import ENV_VAR, GuardConfig, parse_guard_spec


@pytest.mark.parametrize(("text", "expected"), [
    ("", GuardConfig()),
    ("warn", GuardConfig()),
    ("raise", GuardConfig(on="raise")),
    ("log:3", GuardConfig(on="log", max_compiles=3)),
    ("raise:train_*=1, eval_*=2,warmup_calls=4",
     GuardConfig(on="raise", max_compiles={"train_*": 1, "eval_*": 2}, warmup_calls=4)),
    ("OFF", GuardConfig(enabled=False)),
])
def test_parse_guard_spec(text, expected):
    assert parse_guard_spec(text) == expected


@pytest.mark.parametrize("text", ["explode", "warn:x", "raise:f=-1", "warn:1.5", "log:=2"])
def test_parse_guard_spec_errors_name_the_variable(text):
    with pytest.raises(ValueError, match=ENV_VAR):
        parse_guard_spec(text)


def test_bad_arguments():
    with pytest.raises(ValueError, match="on="):
        recompile_cli.guard(on="shout")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a limit"):
        recompile_cli.guard(max_compiles=-1)


def test_guard_is_the_function_even_after_importing_the_module():
    import recompile_cli.guards

    assert isinstance(recompile_cli.guard(max_compiles=2), recompile_cli.Guard)
