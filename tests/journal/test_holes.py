"""What the offsets of a journal range without a committed record are (journal/holes.py): markers,
aborted transactions, or records gone from the log. The reads themselves are tested on Apache Kafka in
tests/journal_to_kafka/test_task.py."""

from __future__ import annotations

import pytest

from bridge_job.journal.holes import gone, holes


@pytest.mark.parametrize(
    ("start", "end", "offsets", "found"),
    [
        (0, 8, [0, 1, 3, 6], [(4, 5)]),  # a committed marker alone (2, 7) is no hole
        (0, 3, [], [(0, 2)]),
        (5, 6, [], []),
        (0, 6, [0, 1, 2, 3, 4], []),
        (10, 20, [10, 13, 17], [(11, 12), (14, 16), (18, 19)]),
    ],
)
def test_holes_are_runs_of_two_offsets_or_more_without_a_record(
    start: int, end: int, offsets: list[int], found: list[tuple[int, int]]
) -> None:
    assert holes(start, end, offsets) == found


@pytest.mark.parametrize(
    ("found", "uncommitted", "missing"),
    [
        ([(2, 5)], [3, 4], []),  # a commit marker, two aborted records, the abort marker
        ([(3, 5)], [3, 4], []),  # two aborted records and their marker
        ([(2, 5)], [], [(2, 5)]),  # nothing at all: gone
        ([(2, 9)], [2, 3, 8], [(4, 7)]),  # aborted records, then four offsets of nothing
        ([(0, 2), (10, 12)], [0, 1, 10], [(11, 12)]),
    ],
)
def test_offsets_without_any_record_two_in_a_row_are_gone(
    found: list[tuple[int, int]], uncommitted: list[int], missing: list[tuple[int, int]]
) -> None:
    """One transactional producer writes the journal at a time: read uncommitted, a run of offsets
    without a record is one marker long, and two in a row are records lost."""
    assert gone(found, uncommitted) == missing
