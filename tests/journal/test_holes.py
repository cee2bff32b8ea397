"""The runs of offsets of a journal range without a committed record (journal/holes.py). The reads
themselves are tested on Apache Kafka in tests/egress/test_task.py."""

from __future__ import annotations

import pytest

from bridge_job.journal.holes import holes


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
