"""Exit codes and signals (``exits``): which code wins, and real SIGINT/SIGTERM sent to this
process while a block runs."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from recompile_cli import exits
from recompile_cli.exits import ExitCode, Terminated


def test_the_codes_are_the_documented_ones():
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3, 130, 143]


@pytest.mark.parametrize("kwargs, code", [
    ({}, 0),
    ({"gate_held": False}, 1),
    ({"gate_held": False, "unwritten": True}, 2),
    ({"gate_held": False, "unwritten": True, "failed": True}, 3),
    ({"failed": True, "interrupted": ExitCode.SIGTERM}, 143),
])
def test_the_worst_outcome_decides_the_exit_code(kwargs, code):
    assert exits.exit_code(**kwargs) == code


def test_sigterm_raises_terminated_in_the_block_and_the_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), exits.sigterm_raises():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("signum, code, text", [
    (signal.SIGINT, 130, "interrupted by Ctrl-C (SIGINT)"),
    (signal.SIGTERM, 143, "terminated by SIGTERM"),
])
def test_a_deferred_signal_waits_for_the_block_and_gives_its_code(signum, code, text):
    before = signal.getsignal(signum)
    with exits.deferred_signals() as received:
        os.kill(os.getpid(), signum)
        os.kill(os.getpid(), signal.SIGINT)  # a second signal does not replace the first
    assert received.code == code and exits.interruption_text(received.code) == text
    assert signal.getsignal(signum) is before


def test_interruptions_map_to_their_codes():
    assert exits.interruption_code(KeyboardInterrupt()) == ExitCode.SIGINT
    assert exits.interruption_code(Terminated()) == ExitCode.SIGTERM


def test_off_the_main_thread_nothing_is_installed():
    seen = []

    def body():
        with exits.sigterm_raises(), exits.deferred_signals() as received:
            seen.append(received.code)

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [None] and signal.getsignal(signal.SIGTERM) is before


# ``exits.end_now``, as the console script ends: in a real process, since it ends the process.
END_NOW = """
import atexit, sys, threading, time
from recompile_cli import exits
atexit.register(lambda: print("exit handler ran", flush=True))
sys.stdout.write("unflushed output")  # in the buffer of a pipe: end_now must flush it
case = sys.argv[1]
if case == "thread":  # a thread still running: the plain exit waits for it, so must end_now
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread done", flush=True))).start()
exits.end_now({"zero": 0, "none": None, "gate": 1, "text": "a message", "big": 300,
               "thread": 3}[case])
"""


@pytest.mark.parametrize("case, code, err", [
    ("zero", 0, ""), ("none", 0, ""), ("gate", 1, ""), ("text", 1, "a message\n"),
    ("big", 300 & 0xFF, ""), ("thread", 3, ""),
])
def test_end_now_ends_as_a_plain_exit_would(case, code, err):
    """Exit handlers run and the output is flushed before the process ends; a code that is not
    an exit status, or a thread still running, gets the plain ``SystemExit`` and its meaning."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", END_NOW, case], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == code
    assert done.stdout.startswith("unflushed output")
    assert "exit handler ran" in done.stdout
    assert ("thread done" in done.stdout) == (case == "thread")
    assert done.stderr == err
