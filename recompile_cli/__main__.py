"""``python -m recompile_cli`` and the ``recompile-cli`` console script.

A command that runs a target starts its measured process first (``process.prestart``, which
imports next to nothing), so that it starts while this process does. Ctrl-C and SIGTERM
are deferred (``exits.defer_signals``) before the application and its libraries are imported,
so that no signal interrupts an import (C extensions turn that into an ``ImportError``
traceback); until ``exits`` itself is imported, a signal is only noted here and handed over.
Then the application runs, and the process ends as soon as its output is out
(``exits.end_now``): the interpreter's tear-down of the report's modules is skipped.
"""

from __future__ import annotations

import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_early: list[int] = []  # signals that came before ``exits`` was imported


def _note(signum: int, frame: Any) -> None:
    _early.append(signum)


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _note)
    from recompile_cli.process import prestart  # after the handlers: nothing before them

    prestart.start(sys.argv[1:])  # a run's measured process starts while the options parse
    from recompile_cli import exits  # after prestart, so that the measured child starts first

    exits.defer_signals(_early)
    from recompile_cli.cli.app import main as run_app  # heavy: only with signals deferred

    try:
        run_app()
    except SystemExit as exc:
        exits.end_now(exc.code)


if __name__ == "__main__":
    main()
