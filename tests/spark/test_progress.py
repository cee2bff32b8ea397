"""Each batch's progress report is read once, and none is lost when several batches ran between reads."""

from __future__ import annotations

from types import SimpleNamespace

from bridge_job.spark.progress import BatchReports


class Query:
    """Stands in for a StreamingQuery: only the two report attributes BatchReports reads."""

    def __init__(self) -> None:
        self.reports: list[SimpleNamespace] = []
        self.recent_reads = 0

    def run(self, batch: int, second: int) -> None:
        self.reports.append(SimpleNamespace(batchId=batch, timestamp=f"2026-11-22T10:00:{second:02d}.000Z"))

    @property
    def lastProgress(self) -> SimpleNamespace | None:
        return self.reports[-1] if self.reports else None

    @property
    def recentProgress(self) -> list[SimpleNamespace]:
        self.recent_reads += 1
        return self.reports[-100:]


def batches(reports: BatchReports) -> list[int]:
    return [p.batchId for p in reports.new()]


def test_reports_are_read_once_each_and_gaps_are_filled_from_recent_ones() -> None:
    query = Query()
    reports = BatchReports(query)  # type: ignore[arg-type]
    assert batches(reports) == []
    query.run(0, 1)
    assert batches(reports) == [0]
    assert batches(reports) == []  # nothing new
    query.run(1, 2)
    assert batches(reports) == [1] and query.recent_reads == 0  # the cheap way while batches come singly
    query.run(2, 3)
    query.run(3, 4)
    query.run(4, 5)
    assert batches(reports) == [2, 3, 4] and query.recent_reads == 1
    query.run(5, 6)
    query.run(6, 7)  # an idle report (no data) carries the id of the batch that will run next
    assert batches(reports) == [5, 6]
    query.run(6, 8)  # which then runs
    assert batches(reports) == [6]


def test_a_restarted_query_starts_from_its_checkpointed_batch() -> None:
    query = Query()
    query.run(57, 1)
    assert batches(BatchReports(query)) == [57]  # type: ignore[arg-type]
