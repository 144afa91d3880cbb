"""Exceptions raised in the user's code while a recording runs, seen as they are raised, whether
or not the program catches them (Python >= 3.12).

A call that JAX refuses (``capture.jax.arguments.refusals``) raises in JAX's C++ dispatch, where no
hook runs; a program that catches the error leaves no trace of it. ``sys.monitoring``'s ``RAISE``
event (PEP 669, Python 3.12+) reports every exception as it arrives in a Python frame, and
costs nothing until one is raised: no cached call of a jitted function passes through it.
``RaiseWatch`` takes a free tool id, hands each exception raised in a user frame to its callback
with that frame and instruction, and gives the id back. On Python 3.11 there is no such event:
``RaiseWatch`` does nothing, and a refused call is seen only when its error reaches the recorder
(uncaught) or passes a counted call (``--count-calls``). The callback never raises.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from recompile_cli.capture.code.stack import is_user_file

OnRaise = Callable[[BaseException, types.FrameType, int], None]
_TOOL_IDS = (4, 3)  # ids no standard tool claims (0: debugger, 1: coverage, 2: profilers)


class RaiseWatch:
    """``start()`` / ``stop()``: ``on_raise(exc, frame, offset)`` for each exception raised in
    a user frame in between (Python >= 3.12; nothing on 3.11)."""

    def __init__(self, on_raise: OnRaise) -> None:
        self._on_raise = on_raise
        self._tool: int | None = None

    @property
    def active(self) -> bool:
        return self._tool is not None

    def start(self) -> None:
        monitoring: Any = getattr(sys, "monitoring", None)
        if monitoring is None or self._tool is not None:
            return
        for tool in _TOOL_IDS:
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "recompile-cli")
                monitoring.register_callback(tool, monitoring.events.RAISE, self._raised)
                monitoring.set_events(tool, monitoring.events.RAISE)
                self._tool = tool
                return

    def stop(self) -> None:
        monitoring: Any = getattr(sys, "monitoring", None)
        tool, self._tool = self._tool, None
        if monitoring is None or tool is None:
            return
        try:
            monitoring.set_events(tool, 0)
            monitoring.register_callback(tool, monitoring.events.RAISE, None)
            monitoring.free_tool_id(tool)
        except Exception:  # someone freed it meanwhile
            pass

    def _raised(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        try:
            if is_user_file(code.co_filename):
                frame = sys._getframe(1)
                if frame.f_code is code:
                    self._on_raise(exc, frame, offset)
        except Exception:  # never into the user's program
            pass
