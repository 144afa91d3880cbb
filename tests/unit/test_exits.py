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
