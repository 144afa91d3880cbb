"""What a child made by ``os.fork`` does with the recordings it inherits: the recording is the
parent's, so in the child each live recorder gets a new lock (the parent's may have been held
at the fork) and lets go of the events log, which the child's events would corrupt
(``Recorder.forked``); the parent is untouched. One ``os.register_at_fork`` callback serves
every recorder, each held weakly.
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol


class Forkable(Protocol):
    def forked(self) -> None:
        """Called in the child after a fork; must not raise."""


_live: weakref.WeakSet[Forkable] = weakref.WeakSet()


def track(recorder: Forkable) -> None:
    """Call ``recorder.forked()`` in every child forked while ``recorder`` is alive."""
    _live.add(recorder)


def _after_fork_in_child() -> None:
    for recorder in list(_live):
        try:
            recorder.forked()
        except Exception:  # never raise into the user's child process
            pass


if hasattr(os, "register_at_fork"):  # POSIX only
    os.register_at_fork(after_in_child=_after_fork_in_child)
