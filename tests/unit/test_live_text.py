"""The live status line's text (issue 43): your compiles apart from the rest, and on a narrow
terminal the last re-compile's function and cause kept whole, the least useful parts going
first."""

from __future__ import annotations

import io

import pytest

from recompile_cli.cli.live import LiveLine

LAST = "last: train_step (shape at batch['x'])"


def line(last: str | None = "train_step (shape at batch['x'])") -> LiveLine:
    live = LiveLine(io.StringIO(), clock=lambda: 12.34)
    live.compiles, live.user_compiles, live.recompiles, live.last = 40, 4, 3, last
    return live


@pytest.mark.parametrize(("width", "expected"), [
    (200, "recompile-cli | 0.0 s | yours: 4 compiles, 3 re-compiles | not yours: 36 | " + LAST),
    (80, "0.0 s | 4 yours, 3 again | " + LAST),
    (60, "4 yours, 3 again | " + LAST),
    (40, LAST),
    (20, "last: train_step ..."),
])
def test_the_parts_that_say_least_go_first_and_the_last_recompile_stays_whole(width, expected):
    assert line().text(width) == expected


def test_without_a_recompile_the_counts_show():
    assert line(last=None).text(60) == "0.0 s | yours: 4 compiles, 3 re-compiles | not yours: 36"
