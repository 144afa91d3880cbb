"""``--check-hosts``' exchange (``capture.hosts.host_check``) between processes simulated by threads
over an in-memory store, without JAX: only programs that span processes are exchanged, numbered
per function; and every message it raises or prints is inert (``host_guard``)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from recompile_cli import options
from recompile_cli.analysis.hosts import mismatch as host_mismatch
from recompile_cli.capture.hosts.host_check import HostCheck, HostsDiverged
from recompile_cli.capture.jax import distributed
from recompile_cli.render.escape import terminal
from recompile_cli.session.host_entries import entry_of
from recompile_cli.session.model import Event, Leaf, Owner, Signature

HOSTILE = "evil\x1b[31m\n::error::pwned\r\x07"


@dataclass
class Store:
    """``jax_distributed.Store``'s methods over one dict shared by the simulated processes."""

    data: dict[str, str]
    index: int
    count: int = 2
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alive(self) -> bool:
        return True

    def put(self, key: str, value: str) -> bool:
        with self.lock:
            if key in self.data:
                return False
            self.data[key] = value
            return True

    def get(self, key: str) -> str | None:
        with self.lock:
            return self.data.get(key)

    def wait(self, key: str, seconds: float) -> str | None:
        deadline = time.monotonic() + seconds
        while (found := self.get(key)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return found

    def under(self, prefix: str) -> list[tuple[str, str]]:
        with self.lock:
            return [(k, v) for k, v in self.data.items() if k.startswith(prefix)]


@dataclass
class Lowered:
    """What ``_pjit_lower`` returns, as far as ``distributed.spans_processes`` reads it."""

    class Devices:
        def __init__(self, spans: bool) -> None:
            self.is_fully_addressable = not spans

    spans: bool

    @property
    def _device_list(self) -> Any:
        return Lowered.Devices(self.spans)


def event(function: str, rows: int, static: str = "1") -> Event:
    signature = Signature(leaves={"x": Leaf((rows, 8), "float32")}, static={"mode": static})
    return Event(0, function, "/job/train.py:5", Owner.USER, None, None, 0, True, True, 0.0,
                 signature=signature)


def host_check(timeout: float) -> HostCheck:
    """The check as the front doors make it (``process.child``, ``guards.watch``)."""
    return HostCheck(timeout, host_mismatch.mismatch, host_mismatch.missing, shown=terminal)


def mismatch(entries):
    """The mismatch message as every front door shows it (``shown=terminal``)."""
    found = host_mismatch.mismatch(entries)
    return None if found is None else terminal(found)


def missing(*args):
    return terminal(host_mismatch.missing(*args))


def checks(timeout: float = 5.0) -> tuple[dict[str, str], list[HostCheck]]:
    data: dict[str, str] = {}
    made = []
    for i in range(2):
        check = host_check(timeout)
        check._prefix = "test"  # the same check on every simulated process
        check._store = Store(data, i)  # type: ignore[assignment]
        made.append(check)
    return data, made


def compile_(check: HostCheck, compiled: Event, spans: bool) -> None:
    """What a process does at a compile: the lowering hook notes it, the compile checks it."""
    distributed.note(compiled.function, Lowered(spans))
    check(compiled)


def job(*processes: list[tuple[Event, bool]], timeout: float = 5.0
        ) -> tuple[dict[str, str], list[BaseException | None]]:
    """Run each process's compiles in a thread of its own; what each raised (None: nothing)."""
    data, made = checks(timeout)
    raised: list[BaseException | None] = [None] * len(processes)

    def run(i: int) -> None:
        try:
            for compiled, spans in processes[i]:
                compile_(made[i], compiled, spans)
        except BaseException as exc:
            raised[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(processes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return data, raised


def test_a_program_on_one_process_alone_is_not_exchanged_and_stops_nothing():
    """The reviewer's case: a metrics helper jitted on process 0 only (three programs of it),
    then the job's step on both: nothing raised, nothing of the helper in the store."""
    helper = [(event("metrics", rows), False) for rows in (1, 2, 3)]
    data, raised = job([*helper, (event("step", 64), True)], [(event("step", 64), True)])
    assert raised == [None, None]
    assert len(data) == 2 and "test/stop" not in data  # one entry of step per process


def test_compiles_are_numbered_per_function():
    data, raised = job([(event("step", 64), True), (event("step", 32), True)],
                       [(event("step", 64), True), (event("step", 32), True)])
    assert raised == [None, None]
    entries = sorted(k.rsplit("/", 1)[1] for k in data)
    assert entries == ["0", "0", "1", "1"]  # step's 1st and 2nd compile, on each process


def test_a_new_program_compiled_by_one_process_alone_stops_it_naming_both_programs():
    """The hard case: process 1 compiles a second program of step; process 0 runs its first
    one (it compiles nothing more), so process 1 waits the timeout and stops the job."""
    data, raised = job([(event("step", 64), True)],
                       [(event("step", 64), True), (event("step", 32), True)], timeout=0.5)
    assert raised[0] is None and isinstance(raised[1], HostsDiverged)
    message = str(raised[1])
    assert message == data["test/stop"]
    assert ("process 1 compiled a new program of step (/job/train.py:5) at its 2nd checked "
            "compile of step, and process 0 compiled nothing within 0.5 s") in message
    assert "x is f32[64,8] on process 0 and f32[32,8] on process 1." in message


def inert(text: str) -> bool:
    return (not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in text)
            and all(not line.lstrip().startswith("::") for line in text.splitlines()))


def test_messages_from_hostile_names_and_values_are_inert():
    a = entry_of(event(HOSTILE, 64, static=HOSTILE), 0, 0)
    b = entry_of(event(HOSTILE, 64, static="2"), 1, 0)
    diverged = mismatch({0: a, 1: b})
    assert diverged is not None and inert(diverged)
    assert "evil\\x1b[31m\\n::error::pwned" in diverged  # shown, escaped
    for text in (missing(a, [1], {1: b}, 5), missing(a, [1], {1: None}, 5)):
        assert inert(text) and "\\x1b[31m" in text


def test_a_hostile_message_read_from_the_store_is_raised_inert():
    data, (check, _) = checks()
    data["test/stop"] = f"recompile-cli --check-hosts: {HOSTILE}"  # a peer's, however made
    with pytest.raises(HostsDiverged) as info:
        compile_(check, event("step", 64), True)
    assert inert(str(info.value)) and "::error::pwned" in str(info.value)


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), 1e308, "60", True])
def test_a_bad_timeout_is_refused_before_the_check_is_made(timeout):
    with pytest.raises((TypeError, ValueError), match=r"^host_timeout="):
        options.host_timeout(timeout)
