"""``merge`` of hostile reports (issue 19): sizes outside what a job can have are refused before
any work, and the same report twice (also a copy) or two reports of one process are refused."""

from __future__ import annotations

import tracemalloc

import msgspec
import pytest
from builders import f32_event, session

from recompile_cli.analysis.hosts.merge import MAX_PROCESSES, merge_reports
from recompile_cli.errors import MergeError


def process(index: int | None, count: int | None, wall: float = 1.0):
    made = session([f32_event(0, "step")], wall_seconds=wall)
    env = msgspec.structs.replace(made.environment, process_index=index, process_count=count)
    return msgspec.structs.replace(made, environment=env)


def test_a_process_count_of_a_billion_is_refused_without_a_large_allocation():
    tracemalloc.start()
    with pytest.raises(MergeError, match="1,000,000,000 processes"):
        merge_reports([("big.json", process(0, 10**9))])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10_000_000


@pytest.mark.parametrize("index, count", [(-1, 2), (10**12, None), (-5, None), (2, 2)])
def test_process_indexes_outside_the_job_are_refused(index, count):
    with pytest.raises(MergeError, match=r"process_index|damaged"):
        merge_reports([("p.json", process(index, count))])


def test_the_largest_job_merges_and_names_the_missing_processes_as_ranges():
    merged = merge_reports([("a.json", process(0, MAX_PROCESSES)),
                            ("b.json", process(5, MAX_PROCESSES, wall=2.0))])
    note = next(n for n in merged.notes if "missing" in n)
    assert f"1-4, 6-{MAX_PROCESSES - 1:,}".replace(",", "") in note.replace(",", "")


def test_the_same_report_twice_is_refused():
    one = process(None, None)
    with pytest.raises(MergeError, match="hold the same report"):
        merge_reports([("g.json", one), ("copy.json", msgspec.structs.replace(one))])
    indexed = process(0, 2)
    with pytest.raises(MergeError, match="one file was passed twice"):
        merge_reports([("g.json", indexed), ("copy.json", msgspec.structs.replace(indexed))])


def test_two_reports_of_one_process_are_refused():
    with pytest.raises(MergeError, match="both process 1"):
        merge_reports([("a.json", process(1, 2, wall=1.0)), ("b.json", process(1, 2, wall=2.0))])
