"""A script's exit handlers, run while the recorder still records (``runner.run_script``).

Python runs the ``atexit`` handlers after the script, when the recording has ended: what they
compile would never be recorded or gated. While the script runs, ``captured`` takes every
handler registered through ``atexit.register`` (by the script, or a library it imports) and
keeps it out of the interpreter's list; ``Handlers.run`` then calls them as the interpreter
would, the last registered first, each failure shown as the interpreter shows it and the next
handler called, before the recording ends. Handlers registered before the script (a test
runner's), or by JAX or this tool (JAX's clean-up, the host check's watcher), stay the
interpreter's and run at its exit, as before.

A handler that calls ``os._exit(code)`` ends the handlers there, as it would have; the process
then ends with ``code`` once the recording is out, as the first handler of the interpreter's
exit (so the supervisor still reads "finished, then its process ended with ... (in its exit
handlers)", and ``os._exit(0)`` leaves the verdict to the gates).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from recompile_cli import exits
from recompile_cli.capture.code import stack
from recompile_cli.session.model import Owner

_Handler = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
_register = atexit.register  # the interpreter's, whatever a script does to the module


class _Exit(BaseException):
    """``os._exit`` called by a handler: the handlers end; the process ends after the run."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Handlers:
    """The exit handlers a script registered, in the order registered."""

    def __init__(self) -> None:
        self.registered: list[_Handler] = []

    def register(self, func: Callable[..., Any], /, *args: Any, **kwargs: Any
                 ) -> Callable[..., Any]:
        caller = sys._getframe(1).f_code.co_filename
        if caller.startswith(stack.OWN_DIR) or stack.owner_of(caller) == Owner.JAX:
            return _register(func, *args, **kwargs)  # JAX's and the tool's stay at exit
        self.registered.append((func, args, kwargs))
        return func

    def unregister(self, func: Callable[..., Any], /) -> None:
        self.registered = [h for h in self.registered if h[0] != func]

    def run(self) -> None:
        """Call every handler, the last registered first (once: they are then forgotten)."""
        handlers, self.registered = self.registered, []
        real_exit = os._exit

        def exit_now(code: int) -> None:
            raise _Exit(code)

        os._exit = exit_now  # type: ignore[assignment]
        try:
            for func, args, kwargs in reversed(handlers):
                try:
                    func(*args, **kwargs)
                except (_Exit, *exits.INTERRUPTIONS):
                    raise
                except BaseException as exc:  # as the interpreter shows it, then the next
                    print(f"Exception ignored in atexit callback: {func!r}", file=sys.stderr)
                    below = exc.__traceback__.tb_next if exc.__traceback__ else None
                    traceback.print_exception(type(exc), exc, below, file=sys.stderr)
        except _Exit as stop:
            _register(exits.hard_exit, stop.code)  # after the recording is out
        finally:
            os._exit = real_exit


@contextlib.contextmanager
def captured() -> Iterator[Handlers]:
    """``atexit.register`` and ``atexit.unregister`` keep the block's handlers in the
    ``Handlers`` yielded (``unregister`` also removes one registered before); restored after."""
    handlers = Handlers()
    register, unregister = atexit.register, atexit.unregister

    def unregister_both(func: Callable[..., Any], /) -> None:
        handlers.unregister(func)
        unregister(func)

    atexit.register, atexit.unregister = handlers.register, unregister_both
    try:
        yield handlers
    finally:
        atexit.register, atexit.unregister = register, unregister
