"""The live status line of a long run: one line at the bottom of the terminal while ``run``,
``profile``, ``check`` or ``forecast`` goes on, erased when the run ends::

    recompile-cli | 12.3 s | yours: 4 compiles, 2 re-compiles | not yours: 10 | last: f (shape)

On a narrow terminal the parts that say least go first (the name, the compiles not yours, then
the words of the counts), so that the last re-compile's function and cause stay whole.

The supervisor (``process.supervisor``) feeds it the records the measured process streams
(``observe``) and calls ``tick`` between them; it redraws at most ``REFRESH`` times a second. It
costs the measured program nothing: it runs in the supervisor, from the stream that the
recorder writes on the miss path anyway. The cause shown is the first difference from the
closest earlier signature of that function (``analysis.causes.nearest``), as the report names it;
``unknown`` where there is no signature (a public-only recording: old JAX, or ``--hook-mode
public-only``), which the report calls it too.

The line lives in the terminal's last row, below a scroll region that holds everything else,
so that the target's own output (a progress bar of its own included) scrolls above it and the
two never overwrite each other. It is on only when stderr is a terminal, not under ``--quiet``,
not in CI (``CI`` or ``GITHUB_ACTIONS`` set) and not on a ``dumb`` terminal
(``cli.output.wants_live_line``).
"""

from __future__ import annotations

import os
import time
from typing import Any, TextIO

from recompile_cli.analysis.causes.explain import diff_signatures
from recompile_cli.analysis.causes.nearest import SignatureIndex
from recompile_cli.analysis.shorten import counted
from recompile_cli.render.escape import terminal
from recompile_cli.session import codec
from recompile_cli.session.model import Event, Owner, function_key

REFRESH = 4  # redraws per second, at most


class LiveLine:
    """The status line of one run on ``stream`` (a terminal); ``close`` erases it."""

    def __init__(self, stream: TextIO, clock: Any = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._drawn_at = 0.0
        self._rows = 0  # the terminal's height when the scroll region was set (0: not set)
        self._base: dict[str, str] = {}
        self._compiled: set[int] = set()  # ids of events seen compiled
        self._seen: set[str] = set()  # the user functions compiled before
        self._indexes: dict[str, SignatureIndex] = {}  # user function -> its signatures
        self.compiles = 0  # every compile: yours and not yours (eager operations, libraries)
        self.user_compiles = 0
        self.recompiles = 0
        self.last: str | None = None  # the last re-compile: function (cause at argument)

    # -- the stream ------------------------------------------------------------------------------
    def observe(self, record: Any) -> None:
        """Take one record of the events stream."""
        if isinstance(record, codec.LogHeader):
            self._base = dict(record.base_context)
        elif (isinstance(record, codec.LogEvent) and record.event.compiled
              and record.id not in self._compiled):
            self._compiled.add(record.id)
            self._compiled_event(record.event)
            self.tick(force=True)

    def _compiled_event(self, event: Event) -> None:
        self.compiles += 1
        if event.owner == Owner.USER:
            self.user_compiles += 1
        if event.depth or event.owner != Owner.USER:
            return
        key = function_key(event.function, event.defined_at)
        index = self._indexes.setdefault(key, SignatureIndex(self._base))
        if key in self._seen:
            self.recompiles += 1
            cause = None
            if event.signature is not None and index.signatures:
                old = index.signatures[index.nearest(event.signature)]
                cause = next(diff_signatures(event.signature, old, self._base), None)
            where = f" at {cause.argument}" if cause is not None and cause.argument else ""
            code = cause.code if cause is not None else "unknown"
            self.last = f"{event.function} ({code}{where})"
        self._seen.add(key)
        if event.signature is not None:
            index.add(event.signature)

    # -- the terminal ----------------------------------------------------------------------------
    def text(self, width: int) -> str:
        """The line, at most ``width`` characters: the first of its forms, from the fullest
        to the shortest, that fits; else the shortest, cut."""
        elapsed = f"{self._clock() - self._started:.1f} s"
        yours = (f"yours: {counted(self.user_compiles, 'compile')}, "
                 f"{counted(self.recompiles, 're-compile')}")
        others = f"not yours: {self.compiles - self.user_compiles}"
        last = f"last: {terminal(self.last)}" if self.last is not None else None
        short = f"{self.user_compiles} yours, {self.recompiles} again"
        forms = [["recompile-cli", elapsed, yours, others, last], [elapsed, yours, others, last],
                 [elapsed, yours, last], [elapsed, short, last], [short, last], [last]]
        lines = [" | ".join(part for part in form if part) for form in forms]
        fits = next((line for line in lines if line and len(line) <= width), None)
        if fits is not None:
            return fits
        line = next(line for line in reversed(lines) if line)
        return line[:max(width - 3, 0)] + "..."

    def tick(self, force: bool = False) -> None:
        """Redraw, unless the last redraw was less than 1/``REFRESH`` s ago."""
        now = self._clock()
        if not force and now - self._drawn_at < 1 / REFRESH:
            return
        self._drawn_at = now
        try:
            columns, rows = os.get_terminal_size(self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            return
        if rows < 3:
            return
        out = []
        if rows != self._rows:  # first draw, or the terminal was resized
            if not self._rows:  # a line of room, then keep the cursor above the last row
                out.append("\n\033[1A")
            out.append(f"\0337\033[1;{rows - 1}r\0338")
            self._rows = rows
        out.append(f"\0337\033[{rows};1H\033[2K{self.text(columns - 1)}\0338")
        self._write("".join(out))

    def close(self) -> None:
        """Erase the line and give the terminal its whole height back."""
        if self._rows:
            rows = self._rows
            self._rows = 0
            self._write(f"\0337\033[r\0338\0337\033[{rows};1H\033[2K\0338")

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            pass
