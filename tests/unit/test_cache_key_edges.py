"""Cache-key edges without JAX: large constants elided from the printed module and
hashed in their place (``cache_key_text.normalise(elided=...)``), and ``diff`` saying which run
has no cache keys and why."""

from __future__ import annotations

import msgspec
import pytest
from builders import ENV, event, session

from recompile_cli.analysis.cache.keys import diff_sessions
from recompile_cli.capture.jax.programs.cache_key_text import ELIDED, normalise
from recompile_cli.render.sections.cache_keys import comparison_lines
from recompile_cli.session.cache_key import CacheKeyInfo
from recompile_cli.session.model import HookMode

ASM = f"""module @jit_f {{
  func.func public @main(%arg0: tensor<4096xf32>) -> tensor<4096xf32> {{
    %cst = stablehlo.constant {ELIDED} : tensor<4096xf32> loc(#loc2)
    %0 = stablehlo.add %arg0, %cst : tensor<4096xf32> loc(#loc2)
    return %0 : tensor<4096xf32>
  }}
}}
#loc2 = loc("/work/a/prog.py":7:4)
"""


def test_an_elided_constant_gets_its_digest_back():
    a = normalise(ASM, elided=["sha256:0123456789abcdef:16384"])
    b = normalise(ASM, elided=["sha256:fedcba9876543210:16384"])
    (constant,) = a.constants
    assert (constant.value, constant.type, constant.site) == (
        "16384 bytes, sha256 01234567", "f32[4096]", "/work/a/prog.py:7")
    assert a.fingerprint == b.fingerprint  # values are not part of the fingerprint
    assert a.constants_digest != b.constants_digest and a.symbols_digest != b.symbols_digest


def test_an_elided_constant_without_a_digest_is_still_read():
    (constant,) = normalise(ASM).constants
    assert constant.type == "f32[4096]"


KEY = CacheKeyInfo(key="jit_f-abc", fingerprint="f", constants_digest="c", symbols_digest="s")


def keyed(**environment):
    env = msgspec.structs.replace(ENV, compilation_cache_dir="/tmp/cache", **environment)
    return msgspec.structs.replace(session([msgspec.structs.replace(event(), cache_key=KEY)]),
                               environment=env)


@pytest.mark.parametrize("old_env, why", [
    ({"hook_mode": HookMode.PUBLIC_ONLY}, "it was recorded with hook mode public-only (cache "
     "keys need the private hooks, JAX >= 0.9)"),
    ({"compilation_cache_dir": None}, "it ran without a persistent compilation cache "
     "(--compilation-cache DIR)"),
    ({}, "it was recorded by an earlier recompile-cli, which did not record cache keys, or "
     "without JAX's cache-key internals (see its warnings); record it again"),
])
def test_diff_says_which_run_has_no_keys_and_why(old_env, why):
    env = msgspec.structs.replace(ENV, **{"compilation_cache_dir": "/tmp/cache", **old_env})
    old = msgspec.structs.replace(session([event()]), environment=env)
    lines = comparison_lines(diff_sessions(old, keyed()))
    assert lines == ["Persistent compilation cache",
                     f"the OLD run has no cache keys, so key changes cannot be explained: {why}"]
    assert "NEW run" in comparison_lines(diff_sessions(keyed(), old))[1]
