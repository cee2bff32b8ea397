"""Each micro-batch's progress report, once, read from a query as cheaply as Spark allows."""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming.query import StreamingQuery


class BatchReports:
    """Each micro-batch's progress report, once, read from the query as cheaply as Spark allows.

    `lastProgress` converts one report; `recentProgress` converts up to 100, and a Python
    StreamingQueryListener costs about 50 ms of JVM time per batch (PySpark rebuilds each event through
    dozens of py4j calls). So: read the last report often, and the recent ones only when batches were
    missed between two reads. Report timestamps are ISO-8601 in UTC, so they order as text.
    """

    def __init__(self, query: StreamingQuery) -> None:
        self.query = query
        self.last_timestamp = ""
        self.last_batch = -1

    def new(self) -> list[Any]:
        last = self.query.lastProgress
        if last is None or last.timestamp <= self.last_timestamp:
            return []
        reports = [last]
        if last.batchId > self.last_batch + 1:
            reports = [p for p in self.query.recentProgress if p.timestamp > self.last_timestamp]
        self.last_timestamp = reports[-1].timestamp
        self.last_batch = max(self.last_batch, *(p.batchId for p in reports))
        return reports
