"""The messages of ``--check-hosts`` (``analysis.hosts.mismatch``) from hand-made entries, the
entries' wire format (``session.host_entries``) and the guard's ``check_hosts`` item."""

from __future__ import annotations

import pytest

from recompile_cli.analysis.hosts.mismatch import mismatch, missing
from recompile_cli.guards.config import parse_guard_spec
from recompile_cli.session.host_entries import Entry, decode_entry, encode_entry, entry_of
from recompile_cli.session.model import Change, Event, Leaf, Owner, Signature


def entry(process: int, seq: int, rows: int, function: str = "step", function_id: int = 7,
          changes: tuple[Change, ...] | None = None) -> Entry:
    signature = Signature(leaves={"batch['x']": Leaf((rows, 8), "float32"),
                                  "batch['y']": Leaf((rows, 1), "float32")},
                          function_id=function_id, created_at=f"/job/p{process}.py:1")
    event = Event(seq, function, "/job/train.py:5", Owner.USER, None, None, 0, True, True, 0.0,
                  signature=signature, lowering_changes=changes)
    return entry_of(event, process, seq)


def test_entries_round_trip_and_ignore_what_only_names_an_object_of_one_process():
    mine = entry(0, 3, 64)
    assert decode_entry(encode_entry(mine)) == mine
    assert decode_entry("{not an entry") is None
    other = entry(1, 3, 64, function_id=9)  # another process numbers its objects itself
    assert other.same_program(mine) and other.digest == mine.digest
    assert not entry(1, 3, 32).same_program(mine)
    lowered = entry(1, 3, 64, changes=(Change("in_shardings", "a", "b", "x"),))
    assert lowered.digest == mine.digest and not lowered.same_program(mine)


def test_agreeing_processes_give_no_message():
    assert mismatch({0: entry(0, 0, 64), 1: entry(1, 0, 64, function_id=2)}) is None


def test_different_programs_name_the_first_differing_argument_and_each_value():
    message = mismatch({0: entry(0, 1, 64), 1: entry(1, 1, 32), 2: entry(2, 1, 64)})
    assert message == (
        "recompile-cli --check-hosts: the processes compiled different programs of step "
        "(/job/train.py:5) at their 2nd checked compile. step: batch['x'] is f32[64,8] on "
        "processes 0, 2 and f32[32,8] on process 1. Every process stopped before running it, "
        "so that no collective runs with different programs.")


def test_different_functions_and_lowerings():
    message = mismatch({0: entry(0, 0, 64), 1: entry(1, 0, 64, function="eval")})
    assert message is not None
    assert ("at their 1st checked compile, process 0 compiled step (/job/train.py:5) and "
            "process 1 compiled eval (/job/train.py:5).") in message
    lowered = entry(1, 0, 64, changes=(Change("in_shardings", "P()", "P('b')", "x"),))
    message = mismatch({0: entry(0, 0, 64), 1: lowered})
    assert message is not None and "step: the same arguments, lowered differently" in message


def test_a_peer_that_never_compiled_is_named_with_the_program_it_still_runs():
    message = missing(entry(1, 1, 32), [0], {0: entry(0, 0, 64)}, 20)
    assert message == (
        "recompile-cli --check-hosts: process 1 compiled a new program of step "
        "(/job/train.py:5) at its 2nd checked compile of step, and process 0 compiled nothing "
        "within 20 s (--host-timeout): process 0 still runs the program of step compiled before. "
        "step: batch['x'] is f32[64,8] on process 0 and f32[32,8] on process 1. Every process "
        "stopped, so that no collective runs with different programs.")


def test_a_peer_with_nothing_known_is_named_with_what_this_process_compiled():
    message = missing(entry(0, 0, 64), [1, 2], {1: None, 2: None}, 60)
    assert message == (
        "recompile-cli --check-hosts: process 0 compiled step (/job/train.py:5) with "
        "batch['x'] f32[64,8], batch['y'] f32[64,1] at its 1st checked compile of step, and "
        "processes 1, 2 compiled nothing within 60 s (--host-timeout): they run another program, or are "
        "slow, stuck or gone (raise --host-timeout if compiles take longer). Every process "
        "stopped, so that no collective runs with different programs.")


def test_the_guard_variable_takes_check_hosts_seconds():
    assert parse_guard_spec("raise:check_hosts=20").host_timeout == 20.0
    assert parse_guard_spec("warn:train_*=1,check_hosts=5").host_timeout == 5.0
    assert parse_guard_spec("warn").host_timeout is None
    assert parse_guard_spec("warn:check_hosts=0").host_timeout is None
    for text in ("raise:check_hosts=86401", "raise:check_hosts=1e9", "raise:check_hosts=x"):
        with pytest.raises(ValueError, match=r"^RECOMPILE_CLI_GUARD=.*check_hosts=N"):
            parse_guard_spec(text)


def _lowered(process: int, program: str | None, context: dict[str, str]) -> Entry:
    signature = Signature(leaves={"x": Leaf((4, 4), "float32")})
    event = Event(0, "step", "/job/train.py:5", Owner.USER, None, None, 0, True, True, 0.0,
                  signature=signature, program_fingerprint=program)
    return entry_of(event, process, 0, context)


def test_the_same_arguments_lowered_to_different_programs_name_the_config_that_differs():
    default = {"jax_default_matmul_precision": "None", "jax_enable_x64": "False"}
    highest = {**default, "jax_default_matmul_precision": "'highest'"}
    zero = _lowered(0, "aaaaaaaaaaaaaaaa/00000000", default)
    one = _lowered(1, "bbbbbbbbbbbbbbbb/11111111", highest)
    assert zero.digest == one.digest and zero.fingerprint == one.fingerprint
    assert decode_entry(encode_entry(one)) == one
    message = mismatch({0: zero, 1: one})
    assert message is not None
    assert ("step: the same arguments lowered to different programs (aaaaaaaa on process 0; "
            "bbbbbbbb on process 1); JAX's configuration differs: jax_default_matmul_precision "
            "is None on process 0 and 'highest' on process 1.") in message
    # nothing exchanged explains it: said so
    quiet = mismatch({0: zero, 1: _lowered(1, "bbbbbbbbbbbbbbbb/11111111", default)})
    assert quiet is not None and "nothing the check exchanges differs" in quiet


def test_programs_are_compared_only_where_both_processes_know_them():
    # local programs of each process run on its own devices: only the module part counts
    same = mismatch({0: _lowered(0, "aaaaaaaaaaaaaaaa/00000000", {}),
                     1: _lowered(1, "aaaaaaaaaaaaaaaa/11111111", {})})
    assert same is None
    # an unknown program (past the fingerprint's bound, public-only) or an older peer's entry
    assert mismatch({0: _lowered(0, None, {}), 1: _lowered(1, "b" * 16 + "/1", {})}) is None
    assert mismatch({0: _lowered(0, "a" * 16, {}), 1: _lowered(1, "b" * 16 + "/1", {})}) is None
