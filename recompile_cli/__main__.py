"""``python -m recompile_cli`` and the ``recompile-cli`` console script.

Ctrl-C and SIGTERM are deferred (``exits.defer_signals``) before the application and its
libraries are imported, so that no signal interrupts an import (C extensions turn that into an
``ImportError`` traceback); a command that runs a target starts its measured process
(``cli.prestart``); then the application runs. Until ``exits`` itself is imported, a
signal is only noted here and handed over.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

_early: list[int] = []  # signals that came before ``exits`` was imported


def _note(signum: int, frame: Any) -> None:
    _early.append(signum)


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _note)
    from recompile_cli import exits

    exits.defer_signals(_early)
    from recompile_cli.cli import prestart

    prestart.start(sys.argv[1:])  # a run's measured process imports JAX while the options parse
    from recompile_cli.cli.app import main as run_app

    run_app()


if __name__ == "__main__":
    main()
