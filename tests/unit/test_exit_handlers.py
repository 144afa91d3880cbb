"""A script's exit handlers, run at its end while the recorder records (``exit_handlers``):
taken from ``atexit`` while the script runs, called once, the last registered first; a failing
one is shown and the next called; ``os._exit`` in one ends them and is done after the run."""

from __future__ import annotations

import atexit
import os

from recompile_cli.capture.running import exit_handlers


def test_handlers_are_taken_and_run_once_last_first(capsys, monkeypatch):
    deferred: list[tuple[object, ...]] = []
    monkeypatch.setattr(exit_handlers, "_register", lambda *call: deferred.append(call))
    called: list[str] = []
    before, register = atexit._ncallbacks(), atexit.register

    def failing() -> None:
        raise ValueError("boom")

    with exit_handlers.captured() as handlers:
        atexit.register(called.append, "first")
        atexit.register(failing)
        atexit.register(called.append, "dropped")
        atexit.unregister(called.append)  # as atexit does: every registration of it
        atexit.register(lambda: called.append("last"))
    assert atexit._ncallbacks() == before  # none reached the interpreter's list
    assert atexit.register is register  # restored
    handlers.run()
    handlers.run()
    assert called == ["last"]
    assert "Exception ignored in atexit callback: <function" in capsys.readouterr().err
    assert deferred == []

    real_exit = os._exit
    with exit_handlers.captured() as handlers:
        atexit.register(called.append, "never")  # registered first: after the exit
        atexit.register(lambda: os._exit(7))
        atexit.register(called.append, "before")
    handlers.run()
    assert called == ["last", "before"] and os._exit is real_exit
    assert deferred == [(exit_handlers.exits.hard_exit, 7)]
