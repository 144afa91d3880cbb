"""The live status line (``cli.live``): on a terminal, one line at its bottom while the run
goes on (elapsed time, compiles, re-compiles, the last one's function and cause), erased at the
end; never in a pipe, under ``--quiet`` or in CI. Checked in a real pseudo-terminal, and in a
real terminal emulator (tmux) where one is installed."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pytest
from jax_support import PRIVATE_HOOKS

pytestmark = pytest.mark.measured_process  # process behaviour: real measured processes

# What a re-compile of PROGRAM is called: its cause, or "unknown" where the recording is
# public-only (JAX < 0.9 or --hook-mode public-only), in the live line as in the report.
CAUSE = {"private": "shape at x", "public-only": "unknown"}
SUMMARY = {"private": "train_step: 4 compiles, 3 re-compiles (shape)",
           "public-only": "train_step: 4 compiles, 3 re-compiles (unknown)"}
MODES = ["private", "public-only"] if PRIVATE_HOOKS else ["public-only"]

# Eight steps 0.3 s apart, cycling through four shapes: four compiles, three of them re-compiles
# caused by the shape of `x`.
PROGRAM = """
import time, jax, jax.numpy as jnp

@jax.jit
def train_step(x):
    return (x * 2).sum()

for step in range(8):
    train_step(jnp.ones((step % 4 + 1, 8)))
    print(f"step {step}", flush=True)
    time.sleep(0.3)
"""
ROWS, COLUMNS = 20, 120  # wide enough for the fullest form of the line


@pytest.fixture
def long_run(tmp_path: Path) -> Path:
    path = tmp_path / "long_run.py"
    path.write_text(textwrap.dedent(PROGRAM))
    return path


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    return {**env, "JAX_PLATFORMS": "cpu", "TERM": "xterm", **extra}


def in_a_terminal(*args: str, env: dict[str, str] | None = None) -> str:
    """What ``recompile-cli ARGS`` writes to a pseudo-terminal of ROWS x COLUMNS (stdout and
    stderr both)."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "recompile_cli", *args], stdin=secondary,
                            stdout=secondary, stderr=secondary, env=env or environment())
    os.close(secondary)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal's other end closed
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert proc.wait(timeout=300) == 0, bytes(seen).decode(errors="replace")
    return bytes(seen).decode(errors="replace")


@pytest.mark.parametrize("mode", MODES)
def test_the_live_line_shows_the_run_at_the_bottom_and_is_erased_at_the_end(long_run, mode):
    text = in_a_terminal("run", "--hook-mode", mode, str(long_run))
    region = f"\0337\033[1;{ROWS - 1}r\0338"  # everything else scrolls above the last row
    assert text.count(region) == 1
    lines = [part.split("\0338", 1)[0] for part in text.split(f"\033[{ROWS};1H\033[2K")[1:]]
    shown = [line for line in lines if line]
    assert shown and all(line.startswith("recompile-cli | ") for line in shown)
    assert all(len(line) < COLUMNS for line in shown)
    final = shown[-1]
    compiles = re.search(r"\| yours: (\d+) compiles, 3 re-compiles \| not yours: (\d+) \|",
                         final)
    assert compiles is not None and int(compiles.group(1)) == 4, final  # yours apart
    assert int(compiles.group(2)) >= 1  # JAX's own eager compiles, not counted as yours
    assert f"last: train_step ({CAUSE[mode]})" in final
    assert any("1 re-compile |" in line for line in shown)  # it counted as the run went on
    assert text.index(region) < text.index("step 0")  # up before the program printed
    erased = text.rindex(f"\033[{ROWS};1H\033[2K\0338")  # the last draw is an erase ...
    assert text.rindex("\0337\033[r\0338") < erased  # ... after the scroll region was reset
    assert text.index("Re-compilations by cost") > erased  # and the report comes after it


@pytest.mark.parametrize("how", ["--quiet", "CI", "GITHUB_ACTIONS", "dumb"])
def test_no_live_line_under_quiet_in_ci_or_on_a_dumb_terminal(long_run, how):
    env = environment(**({how: "true"} if how in ("CI", "GITHUB_ACTIONS") else {}))
    if how == "dumb":
        env["TERM"] = "dumb"
    text = in_a_terminal("run", *(["--quiet"] if how == "--quiet" else []), str(long_run),
                         env=env)
    assert "recompile-cli | " not in text and "\033[1;" not in text
    assert SUMMARY[MODES[0]] in text


def test_no_live_line_in_a_pipe(long_run):
    proc = subprocess.run([sys.executable, "-m", "recompile_cli", "run", str(long_run)],
                          capture_output=True, text=True, env=environment(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "recompile-cli | " not in proc.stderr and "\033" not in proc.stderr + proc.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (Debian package tmux)")
def test_in_a_real_terminal_the_line_stays_at_the_bottom_below_the_programs_output(long_run):
    session = f"recompile-cli-live-{os.getpid()}"
    command = (f"{sys.executable} -m recompile_cli run {long_run}; echo EXIT=$?; sleep 60")
    # ``env -i``: the program sees only these, not the tmux server's environment (which has
    # CI set when the tests run in CI, and a server already running has someone else's)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(COLUMNS), "-y",
                    str(ROWS), "env", "-i", *[f"{k}={v}" for k, v in environment().items()
                                        if k in ("PATH", "JAX_PLATFORMS", "TERM", "PYTHONPATH",
                                                 "HOME")],
                    "sh", "-c", command], check=True)
    try:
        during, after = _screen_while(session, "step 3"), _screen_while(session, "EXIT=0")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    assert during[-1].startswith("recompile-cli | "), during  # the last row
    assert "re-compile" in during[-1]
    assert any(row.startswith("step 3") for row in during[:-1])  # the program's output above
    assert not any(row.startswith("recompile-cli | ") for row in after), after  # erased


def _screen_while(session: str, text: str, seconds: float = 120) -> list[str]:
    """The screen's rows once ``text`` shows on it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows = subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        rows += [""] * (ROWS - len(rows))
        if any(text in row for row in rows):
            return rows
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never showed")
