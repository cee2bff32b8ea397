"""The egress query's source: Spark plans journal offset ranges, each task moves its range to Kafka.

In the driver, `latestOffset` fixes each micro-batch as a set of per-partition offset ranges of the journal
(bounded by `spark.maxRecordsPerBatch`, shared fairly, see `journal.plan_batch`), and Spark writes them to
its checkpoint before the batch runs, so a batch replayed after a crash covers exactly the same records.
`partitions` makes one task per journal partition with records, and Spark runs them in parallel on its
executors. Each task runs `egress_task.run` on its range in its Python worker (read, deduplicate, route,
convert, write) and hands back a single summary row: records never cross between the JVM and Python.
What the egress and ingress sources share is in spark/range_source.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

from bridge_job.config import JobConfig
from bridge_job.egress import interval as egress_interval
from bridge_job.egress import task as egress_task
from bridge_job.faults.stops import BridgeStopped
from bridge_job.journal.reading import consumer_settings
from bridge_job.kafka.reading import watermarks
from bridge_job.kafka.topics import partitions_of
from bridge_job.spark.intervals import is_partition_key, next_interval
from bridge_job.spark.offsets import Offsets, plan_batch
from bridge_job.spark.range_source import PartitionRange, RangeReader, RangeSource


class EgressReader(RangeReader):
    """The journal's partitions, one range each."""

    RANGE = egress_task.run
    INTERVAL = egress_interval.run

    @property
    def config(self) -> JobConfig:
        return self._watched.loaded  # the journal a query reads is fixed when it starts

    @property
    def topic(self) -> str:
        return self.config.journal_topic

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return consumer_settings(self.config)

    def watermarks(self) -> tuple[Offsets, Offsets]:
        """Low and high watermarks of every journal partition."""
        # A leader being elected raises, to be asked again (patient_watermarks).
        partitions = partitions_of(self.consumer, self.topic, retriable_raises=True)
        if partitions is None:
            raise BridgeStopped(
                f"journal topic {self.topic} does not exist: create it or set kafka.createJournalTopic"
            )
        low: Offsets = {}
        high: Offsets = {}
        for partition in partitions:
            low[str(partition)], high[str(partition)] = watermarks(self.consumer, self.topic, partition)
        return low, high

    def locate(self, key: str) -> tuple[str, int] | None:
        return (self.topic, int(key)) if is_partition_key(key) else None

    def initialOffset(self) -> Offsets:
        low, high = self.patient_watermarks()
        reset = self.start_offsets()  # `jmsbridge reset-checkpoint`: clamped to what the journal holds
        if reset is not None:
            return {p: min(max(reset.get(p, low[p]), low[p]), high[p]) for p in low}
        return low

    def plan(self, start: Offsets, limit: ReadLimit) -> Offsets:
        self.check_binding(start)
        low, high = self.latest()
        if self.real_time:  # where each partition stands: the next interval's tasks begin there
            start = {**start, **self.progress({p: start.get(p, low[p]) for p in high})}
        self.check_range(start, low, high)  # another journal, or records lost to retention: stop
        self.refresh_binding(start, low)
        begin = {p: max(start.get(p, low[p]), low[p]) for p in high}
        if self.real_time:
            return {p: min(begin[p], high[p]) for p in high} | next_interval(start)
        if self._target is not None:  # nothing written after the query started (a new partition: none)
            high = {p: max(begin[p], min(high[p], self._target.get(p, begin[p]))) for p in high}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return plan_batch(begin, high, max_rows)

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[PartitionRange]:
        if self.real_time:
            seconds = self.task_seconds
            return [
                PartitionRange(self.topic, int(p), end[p], end[p], self.config_path, seconds, self.live)
                for p in sorted(filter(is_partition_key, end), key=int)
            ]
        return [
            PartitionRange(self.topic, int(p), self.floor(p, start.get(p, 0)), end[p], self.config_path)
            for p in sorted(end, key=int)
            if end[p] > self.floor(p, start.get(p, 0))
        ]


class EgressSource(RangeSource):
    """`spark.readStream.format("jmsbridge-egress").option("config", PATH)`: one summary row per task."""

    FORMAT = "jmsbridge-egress"
    SCHEMA = egress_task.SUMMARY_SCHEMA
    READER = EgressReader
