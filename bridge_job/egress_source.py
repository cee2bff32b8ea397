"""The egress query's source: Spark plans journal offset ranges, each task moves its range to Kafka.

In the driver, `latestOffset` fixes each micro-batch as a set of per-partition offset ranges of the journal
(bounded by `spark.maxRecordsPerBatch`, shared fairly, see `journal.plan_batch`), and Spark writes them to
its checkpoint before the batch runs, so a batch replayed after a crash covers exactly the same records.
`partitions` makes one task per journal partition with records, and Spark runs them in parallel on its
executors. Each task runs `egress_task.run` on its range in its Python worker (read, deduplicate, route,
convert, write) and hands back a single summary row: records never cross between the JVM and Python.

With the `availableNow` trigger the source fixes the journal's end offsets when the query starts
(`prepareForTriggerAvailableNow`) and Spark drains up to them in batches of the usual size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from bridge_job import egress_task
from bridge_job.config import JobConfig
from bridge_job.errors import BridgeStopped
from bridge_job.journal import Offsets, plan_batch
from bridge_job.journal_reading import consumer_settings
from bridge_job.loading import load_job_config


@dataclass(frozen=True)
class JournalRange(InputPartition):
    topic: str
    partition: int
    start: int
    end: int
    config_path: str


class EgressReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Planning in the driver; `read` in the tasks, which PySpark ships the pickled reader to (so it
    pickles to its config path alone: a task reads the config it needs from the file)."""

    def __init__(self, config_path: str) -> None:
        self.config_path = config_path
        self._config: JobConfig | None = None
        self._consumer: Consumer | None = None
        self._latest: Offsets | None = None
        self._target: Offsets | None = None  # availableNow: where to stop

    def __getstate__(self) -> dict[str, str]:
        return {"config_path": self.config_path}

    def __setstate__(self, state: dict[str, str]) -> None:
        self.config_path = state["config_path"]
        self._config, self._consumer, self._latest, self._target = None, None, None, None

    @property
    def config(self) -> JobConfig:
        if self._config is None:
            self._config = load_job_config([Path(self.config_path)])
        return self._config

    @property
    def topic(self) -> str:
        return self.config.journal_topic

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(consumer_settings(self.config))
        return self._consumer

    def watermarks(self) -> tuple[Offsets, Offsets]:
        """Low and high watermarks of every journal partition."""
        metadata = self.consumer.list_topics(self.topic, timeout=30)
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None:
            raise BridgeStopped(
                f"journal topic {self.topic} does not exist: create it or set kafka.createJournalTopic"
            )
        low: Offsets = {}
        high: Offsets = {}
        for partition in topic.partitions:
            lo, hi = self.consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=30, cached=False
            )
            low[str(partition)], high[str(partition)] = lo, hi
        return low, high

    def initialOffset(self) -> Offsets:
        return self.watermarks()[0]

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.config.bridge.spark.max_records_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.watermarks()[1]

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        low, high = self.watermarks()
        self._latest = high
        begin = {p: max(start.get(p, low[p]), low[p]) for p in high}
        if self._target is not None:  # nothing written after the query started (a new partition: none)
            high = {p: max(begin[p], min(high[p], self._target.get(p, begin[p]))) for p in high}
        lost = {p: (start[p], low[p]) for p in start if p in low and start[p] < low[p]}
        if lost:
            ranges = ", ".join(f"partition {p} offsets {a}..{b - 1}" for p, (a, b) in sorted(lost.items()))
            raise BridgeStopped(
                f"journal topic {self.topic} lost records before the bridge read them ({ranges}): "
                "raise its retention"
            )
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return plan_batch(begin, high, max_rows)

    def reportLatestOffset(self) -> Offsets:
        """For the journal lag in progress reports: what `latestOffset` saw, without asking again."""
        return self._latest if self._latest is not None else self.watermarks()[1]

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[JournalRange]:
        return [
            JournalRange(self.topic, int(p), start.get(p, 0), end[p], self.config_path)
            for p in sorted(end, key=int)
            if end[p] > start.get(p, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[int | bool, ...]]:
        assert isinstance(partition, JournalRange)
        p = partition
        yield egress_task.run(p.config_path, p.topic, p.partition, p.start, p.end).row()

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the checkpoint is the source of truth for progress, not Kafka."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class EgressSource(DataSource):
    """`spark.readStream.format("jmsbridge-egress").option("config", PATH)`: one summary row per task."""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-egress"

    def schema(self) -> str:
        return egress_task.SUMMARY_SCHEMA

    def streamReader(self, schema: StructType) -> EgressReader:
        return EgressReader(self.options["config"])
