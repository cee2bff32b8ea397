"""The ingress query's source: Spark plans Kafka offset ranges, each task sends its range to JMS.

The egress source's discipline for the kafkaToJms routes' topics: in the driver, `latestOffset` fixes each
micro-batch as per-partition offset ranges (keys `topic:partition`), bounded by
`spark.maxRecordsPerBatch` and shared fairly (`journal.plan_batch`); Spark checkpoints them before the
batch runs, so a replayed batch covers the same records. One task per partition with records runs
`ingress_task.run` in its Python worker and hands back one summary row. Offsets live in the checkpoint
only; the bridge's consumer group commits nothing.

Routes change between batches: the topics are read from the config file at every `latestOffset`. A
partition seen for the first time is only placed, not read, in the batch that sees it: at its low
watermark when its route says `startingOffsets: earliest` or when its topic was already read (a
partition added to a topic), at its high watermark otherwise. A topic no route reads any more keeps its
position, so a route put back carries on where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import TopicPartition
from pyspark.sql.datasource import DataSource, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from bridge_job import ingress_task
from bridge_job.config import Direction, JobConfig, StartingOffsets
from bridge_job.errors import BridgeStopped
from bridge_job.journal import Offsets, plan_batch
from bridge_job.loading import WatchedConfig
from bridge_job.range_source import RangeReader


def key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def topic_partition(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


def starting_from_earliest(config: JobConfig) -> set[str]:
    """The topics a route asks to read from their start."""
    return {
        r.spec.kafka_topic
        for r in config.routes_for(Direction.KAFKA_TO_JMS)
        if r.spec.starting_offsets is StartingOffsets.EARLIEST
    }


def place_new(start: Offsets, low: Offsets, high: Offsets, earliest: set[str]) -> Offsets:
    """Where the partitions not in `start` begin."""
    known_topics = {topic_partition(k)[0] for k in start}
    placed: Offsets = {}
    for k in high:
        if k in start:
            continue
        topic = topic_partition(k)[0]
        placed[k] = low[k] if topic in earliest or topic in known_topics else high[k]
    return placed


@dataclass(frozen=True)
class TopicRange(InputPartition):
    topic: str
    partition: int
    start: int
    end: int
    config_path: str


class IngressReader(RangeReader):
    """The partitions of the topics the kafkaToJms routes read now, one range each."""

    def __init__(self, config_path: str) -> None:
        super().__init__(config_path)
        self._watched = WatchedConfig(Path(config_path))

    @property
    def config(self) -> JobConfig:
        return self._watched.current()

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return ingress_task.consumer_settings(self.config)

    def watermarks(self) -> tuple[Offsets, Offsets]:
        config = self.config
        topics = sorted({r.spec.kafka_topic for r in config.routes_for(Direction.KAFKA_TO_JMS)})
        low: Offsets = {}
        high: Offsets = {}
        if not topics:
            return low, high
        metadata = self.consumer.list_topics(timeout=30)
        for topic in topics:
            found = metadata.topics.get(topic)
            if found is None or found.error is not None:
                raise BridgeStopped(f"topic {topic}, read by a kafkaToJms route, does not exist: create it")
            for partition in found.partitions:
                lo, hi = self.consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=30, cached=False
                )
                low[key(topic, partition)], high[key(topic, partition)] = lo, hi
        return low, high

    def initialOffset(self) -> Offsets:
        return {}

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        low, high = self.latest()
        placed = place_new(start, low, high, starting_from_earliest(self.config))
        lost = {k: (start[k], low[k]) for k in start if k in low and start[k] < low[k]}
        if lost:
            ranges = ", ".join(f"{k} offsets {a}..{b - 1}" for k, (a, b) in sorted(lost.items()))
            raise BridgeStopped(
                f"records were deleted before the bridge read them ({ranges}): raise the topics' retention"
            )
        reading = {k: start[k] for k in high if k in start}
        latest = dict(high)
        if self._target is not None:  # nothing written after the query started
            latest = {k: max(reading.get(k, 0), min(high[k], self._target.get(k, 0))) for k in high}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = plan_batch(reading, {k: latest[k] for k in reading}, max_rows)
        return {**start, **end, **placed}

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[TopicRange]:
        ranges = []
        for k in sorted(end):
            if k in start and end[k] > start[k]:
                topic, partition = topic_partition(k)
                ranges.append(TopicRange(topic, partition, start[k], end[k], self.config_path))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[tuple[int | str, ...]]:
        assert isinstance(partition, TopicRange)
        p = partition
        yield ingress_task.run(p.config_path, p.topic, p.partition, p.start, p.end).row()


class IngressSource(DataSource):
    """`spark.readStream.format("jmsbridge-ingress").option("config", PATH)`: one summary row per task."""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-ingress"

    def schema(self) -> str:
        return ingress_task.SUMMARY_SCHEMA

    def streamReader(self, schema: StructType) -> IngressReader:
        return IngressReader(self.options["config"])
