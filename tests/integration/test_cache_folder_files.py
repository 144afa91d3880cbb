"""The persistent cache folder's own files are untrusted input (issue 29): recompile-cli keeps
each entry's exact compile time in ``DIR/recompile-cli/KEY``; a damaged or planted one is
skipped with a warning naming the file, never shown as a figure (the headline read
``15 hits (1.05e66 s saved)`` or ``(-525.044 s saved)``), a FIFO in its place does not hang the
run, and a planted link ``DIR/recompile-cli -> /elsewhere`` never makes the tool write outside
DIR. Real runs in subprocesses: JAX reads its cache settings once per process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jax_support import requires_private_hooks

from recompile_cli.capture.jax.programs.cache_key import TIMES_FOLDER

PROGRAM = """
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    return jnp.sin(x) * 2


for n in range(3, 7):
    f(jnp.ones(n))
"""


def run(folder: Path, cache: Path) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    environment.update(JAX_PLATFORMS="cpu", JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "run", "--compilation-cache",
                           str(cache), str(folder / "prog.py")], capture_output=True, text=True,
                          cwd=folder, env=environment, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def saved_seconds(text: str) -> float:
    found = re.search(r"persistent cache \S+: (\d+) hits \((\S+) s saved", text)
    assert found, text
    return float(found.group(2))


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM)
    first = run(tmp_path, tmp_path / "cache")
    assert "0 hits" in first
    assert list((tmp_path / "cache" / TIMES_FOLDER).iterdir())
    return tmp_path / "cache"


DAMAGED = ["7e64", "-35", "nan", "inf", "5000", "not a number", "1" * 100]


@requires_private_hooks
def test_a_damaged_exact_time_is_skipped_with_a_warning(cache):
    """Out of range, negative, not a number, or a figure that disagrees with JAX's own whole
    seconds for the entry (5000 s for a compile JAX stored as 0 s): each file gets one."""
    files = sorted((cache / TIMES_FOLDER).iterdir())
    assert len(files) >= len(DAMAGED)
    for i, path in enumerate(files):
        path.write_text(DAMAGED[i % len(DAMAGED)])
    text = run(cache.parent, cache)
    seconds = saved_seconds(text)
    assert 0 <= seconds < 60, text
    assert "from JAX's whole seconds" in text
    warnings = text[text.index("Warnings"):]
    shown = re.findall(rf"{TIMES_FOLDER}/\S+: the exact compile time it holds, (.*?), is not",
                       warnings)
    assert len(shown) == 5 and f"and {len(files) - 5} more stored values" in warnings, warnings
    assert "it was skipped" in warnings
    for content in DAMAGED:
        assert content[:20] not in text.replace(warnings, ""), content


@requires_private_hooks
def test_a_fifo_in_place_of_an_exact_time_does_not_hang_the_run(cache):
    path = next((cache / TIMES_FOLDER).iterdir())
    path.unlink()
    os.mkfifo(path)
    text = run(cache.parent, cache)  # the subprocess's timeout fails a hang
    assert f"{path.name}: recompile-cli's exact compile time was not read (not a regular file)" \
        in text


@requires_private_hooks
def test_a_planted_link_does_not_make_the_tool_write_outside_the_cache(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir()
    elsewhere.mkdir()
    (cache / TIMES_FOLDER).symlink_to(elsewhere)
    text = run(tmp_path, cache)
    assert list(elsewhere.iterdir()) == []
    assert (cache / TIMES_FOLDER).is_symlink()
    assert (f"{TIMES_FOLDER}: a link leads outside the cache folder" in text
            and "did not write its exact compile times there" in text), text
    assert text.count("a link leads outside") == 1  # once, not once per entry
