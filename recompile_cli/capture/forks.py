"""What a child made by ``os.fork`` (``multiprocessing`` with the fork start method) does with
the recordings it inherits from its parent.

The child is another process: the recording belongs to the parent. Its lock may have been held
by another thread of the parent at the moment of the fork (nobody would ever release it in the
child), and its events log is the parent's open file, which the child's events would corrupt
(the same sequence numbers, interleaved lines). So, in the child, each live recorder gets a new
lock and lets go of the events log (``Recorder.forked``); the parent is untouched. One
``os.register_at_fork`` callback serves every recorder, which is only held weakly.
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
