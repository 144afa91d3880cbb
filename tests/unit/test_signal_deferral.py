"""Ctrl-C and SIGTERM deferred from the command line's first line (issue 19): a signal that
comes while the tool starts or finishes waits for a clean point (``exits``). Each case runs in
a fresh interpreter, since it changes the process's signal handlers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run(body: str) -> subprocess.CompletedProcess[str]:
    code = "import os, signal\nfrom recompile_cli import exits\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)


def test_a_deferred_signal_waits_and_is_taken_once():
    proc = run("""
        exits.defer_signals()
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)  # the first one counts
        assert exits.pending_code() == 130
        assert exits.pending_code() is None
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


@pytest.mark.parametrize("sig, exception", [("SIGINT", "KeyboardInterrupt"),
                                            ("SIGTERM", "Terminated")])
def test_raise_pending_stops_before_the_target_starts(sig, exception):
    proc = run(f"""
        exits.defer_signals()
        os.kill(os.getpid(), signal.{sig})
        try:
            exits.raise_pending()
        except exits.INTERRUPTIONS as exc:
            print(type(exc).__name__)
    """)
    assert proc.stdout == f"{exception}\n", proc.stderr


def test_the_target_is_interruptible_and_the_report_phase_takes_a_deferred_signal():
    proc = run("""
        exits.defer_signals()
        try:
            with exits.sigterm_raises():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10**6):
                    pass
        except exits.Terminated:
            print("target stopped")
        os.kill(os.getpid(), signal.SIGINT)  # after the target: deferred
        with exits.deferred_signals() as received:
            pass
        print(received.code)
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    """)
    assert proc.stdout == "target stopped\n130\n", proc.stderr


def test_signals_noted_before_exits_was_imported_are_handed_over():
    proc = run("""
        exits.defer_signals([signal.SIGTERM])
        print(exits.pending_code())
    """)
    assert proc.stdout == "143\n", proc.stderr


@pytest.mark.parametrize("sig, exception", [("SIGINT", "KeyboardInterrupt"),
                                            ("SIGTERM", "Terminated")])
@pytest.mark.parametrize("where", ["gc callback", "__del__", "weakref callback"])
def test_an_interruption_python_would_swallow_still_stops_the_target(sig, exception, where):
    """A signal handled inside code whose exceptions Python only prints (JAX registers a
    ``gc.callbacks`` entry; ``__del__`` and weakref callbacks are the same) is not lost: it
    lands in the target's next line, with no 'Exception ignored' traceback."""
    proc = run(f"""
        import gc, weakref

        def slow(*args):
            os.kill(os.getpid(), signal.{sig})  # delivered here, where nothing can catch it
            for _ in range(1000):
                pass

        class Held:
            def __del__(self):
                slow()

        exits.defer_signals()
        try:
            with exits.sigterm_raises():
                if {where!r} == "gc callback":
                    gc.callbacks.append(slow)
                    gc.collect()
                elif {where!r} == "__del__":
                    Held()
                else:
                    class Referent:
                        pass
                    ref = weakref.ref(Referent(), slow)
                print("after the swallowing context")
                for _ in range(200):  # 10 s
                    time.sleep(0.05)
                print("never reached")
        except exits.INTERRUPTIONS as exc:
            print(type(exc).__name__)
        if slow in gc.callbacks:
            gc.callbacks.remove(slow)
        print(sys.unraisablehook is sys.__unraisablehook__)
    """.replace("import gc", "import gc, sys, time"))
    assert "never reached" not in proc.stdout
    assert proc.stdout.endswith(f"{exception}\nTrue\n"), proc.stdout + proc.stderr
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
