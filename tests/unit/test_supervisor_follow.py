"""The supervisor's read loop (``process.supervisor._follow``) on real processes: it takes every
byte a child writes and returns once the child has ended, woken by the child's end (a Linux
pidfd) or, where there is none, by looking every few milliseconds; a process the child left
behind holding its pipe never keeps it waiting; the events stream is read in batches, from a
pipe large enough to hold what comes between them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from recompile_cli.process import supervisor

WATCHES = ["pidfd", "polling"]


def pidfd_works() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return False
    return True


def follow(code: str, watch: str, monkeypatch: pytest.MonkeyPatch,
           timeout: float | None = None, reads: list[bytes] | None = None,
           batched: bool = False) -> tuple[subprocess.Popen[bytes], bytes, float | None]:
    """Run ``code`` as the child whose stdout the loop reads (``batched``: in batches, as the
    events stream is); each chunk the loop took is appended to ``reads``."""
    if watch == "polling":
        monkeypatch.setattr(supervisor, "_end_watch", lambda process: None)
    elif not pidfd_works():
        pytest.skip("no pidfd here")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert process.stdout is not None
    taken: list[bytes] = [] if reads is None else reads
    fd = process.stdout.fileno()
    timed_out = supervisor._follow(process, {fd: taken.append}, supervisor._Signals(), None,
                                   timeout, time.monotonic(), batched=(fd,) if batched else ())
    process.stdout.close()
    return process, b"".join(taken), timed_out


@pytest.mark.parametrize("watch", WATCHES)
def test_every_byte_is_taken_and_the_exit_status_kept(watch, monkeypatch):
    process, taken, timed_out = follow(
        "import sys; sys.stdout.write('x' * 300000); sys.stdout.flush(); sys.exit(7)",
        watch, monkeypatch)
    assert (process.returncode, len(taken), timed_out) == (7, 300000, None)


@pytest.mark.parametrize("watch", WATCHES)
def test_a_process_left_holding_the_pipe_does_not_keep_the_loop(watch, monkeypatch):
    code = ("import subprocess, sys; print('before', flush=True); "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(p.pid, flush=True)")
    process, taken, _ = follow(code, watch, monkeypatch)
    lines = taken.decode().split()
    os.kill(int(lines[1]), signal.SIGKILL)
    assert (process.returncode, lines[0]) == (0, "before")


@pytest.mark.parametrize("watch", WATCHES)
def test_a_child_past_its_timeout_is_ended(watch, monkeypatch):
    process, _, timed_out = follow("import time; time.sleep(60)", watch, monkeypatch,
                                   timeout=0.5)
    assert (process.returncode, timed_out) == (-signal.SIGTERM, 0.5)


@pytest.mark.parametrize("watch", WATCHES)
def test_a_batched_source_is_read_in_batches_and_every_line_taken(watch, monkeypatch):
    """The events stream is read at most every ``BATCH`` seconds once it flows: a reader woken
    by every line costs the writer a wake-up per line. 200 lines written 2 ms apart come in far
    fewer reads than lines (unbatched, about one read per line), and none is lost."""
    code = ("import os, time\n"
            "for i in range(200):\n"
            "    os.write(1, b'line %d\\n' % i); time.sleep(0.002)\n")
    reads: list[bytes] = []
    _, taken, _ = follow(code, watch, monkeypatch, reads=reads, batched=True)
    assert taken.decode().splitlines() == [f"line {i}" for i in range(200)]
    assert len([chunk for chunk in reads if chunk]) <= 100


def test_the_events_pipe_holds_a_megabyte_where_linux_allows_it():
    """The pipe the child streams its events into holds ``spawn.EVENTS_PIPE_BYTES`` (1 MiB,
    thousands of events) so that batched reads never make the child wait (a system that caps
    pipes lower keeps its default: ``spawn._enlarge`` ignores the refusal)."""
    import fcntl

    from recompile_cli.process import spawn

    if not sys.platform.startswith("linux"):
        pytest.skip("pipe sizes are a Linux setting")
    with open("/proc/sys/fs/pipe-max-size") as limit:
        if int(limit.read()) < spawn.EVENTS_PIPE_BYTES:
            pytest.skip("this system caps pipes below 1 MiB")
    started = spawn.start(os.environ)
    try:
        assert fcntl.fcntl(started.log, fcntl.F_GETPIPE_SZ) == spawn.EVENTS_PIPE_BYTES
    finally:
        started.discard()
