"""The ingress query's source: Spark plans Kafka offset ranges, each task sends its range to JMS.

The egress source's discipline for the kafkaToJms routes' topics: in the driver, `latestOffset` fixes each
micro-batch as per-partition offset ranges (keys `topic:partition`), bounded by
`spark.maxRecordsPerBatch` and shared fairly (`journal.plan_batch`); Spark checkpoints them before the
batch runs, so a replayed batch covers the same records. One task per partition with records runs
`ingress_task.run` in its Python worker and hands back one summary row. Offsets live in the checkpoint
only; the bridge's consumer group commits nothing.

Routes change between batches: the topics are read from the config file at every `latestOffset`, a
route's `kafkaTopic` naming one topic or matching several (`*`, `>`). A partition seen for the first time
is only placed, not read, in the batch that sees it: at its low watermark when its route says
`startingOffsets: earliest`, when its topic was already read (a partition added to a topic), or when a
pattern already in effect found it (a topic created since); at its high watermark otherwise. Patterns in
effect are remembered in the offsets too (`/<pattern>: 0`). A topic no route reads any more keeps its
position, so a route put back carries on where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

from bridge_job.config import Direction, JobConfig, StartingOffsets, is_topic_pattern
from bridge_job.faults.stops import BridgeStopped
from bridge_job.ingress import interval as ingress_interval
from bridge_job.ingress import task as ingress_task
from bridge_job.kafka.reading import Consumer, watermarks
from bridge_job.kafka.topics import existing_partitions
from bridge_job.routing.routes import address_matches
from bridge_job.spark.intervals import is_partition_key, next_interval
from bridge_job.spark.offsets import Offsets, plan_batch
from bridge_job.spark.range_source import PartitionRange, RangeReader, RangeSource

PATTERN_MARK = "/"


def key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def topic_partition(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


def starting_from_earliest(config: JobConfig) -> list[str]:
    """The topics (names or patterns) a route asks to read from their start."""
    return [
        r.spec.topic
        for r in config.routes_for(Direction.KAFKA_TO_JMS)
        if r.spec.starting_offsets is StartingOffsets.EARLIEST
    ]


def pattern_key(pattern: str) -> str:
    """The offsets entry that marks a topic pattern as in effect (`/` is in no topic name)."""
    return f"{PATTERN_MARK}{pattern}"


def place_new(start: Offsets, low: Offsets, high: Offsets, earliest: Sequence[str]) -> Offsets:
    """Where the partitions not in `start` begin: at their start when their route asks so, when their topic
    is already read (a partition added), or when a pattern in effect before found the topic (one created
    since); at their end otherwise."""
    known_topics = {topic_partition(k)[0] for k in start if is_partition_key(k)}
    known_patterns = [k.removeprefix(PATTERN_MARK) for k in start if k.startswith(PATTERN_MARK)]
    placed: Offsets = {}
    for k in high:
        if k in start:
            continue
        topic = topic_partition(k)[0]
        from_start = topic in known_topics or any(
            address_matches(p, topic) for p in [*earliest, *known_patterns]
        )
        placed[k] = low[k] if from_start else high[k]
    return placed


def topic_patterns(config: JobConfig) -> list[str]:
    return [r.spec.topic for r in config.routes_for(Direction.KAFKA_TO_JMS) if is_topic_pattern(r.spec.topic)]


def read_topics(config: JobConfig, existing: Iterable[str]) -> list[str]:
    """The topics the kafkaToJms routes read now: their names, and the existing topics their patterns
    match (Kafka's internal `__` topics aside). A named topic that does not exist stops the bridge."""
    names = config.source_topics()
    patterns = [n for n in names if is_topic_pattern(n)]
    existing = set(existing)
    missing = sorted(n for n in names if n not in patterns and n not in existing)
    if missing:
        raise BridgeStopped(
            f"topic {', '.join(missing)}, read by a kafkaToJms route, does not exist: create it"
        )
    matched = {t for t in existing if not t.startswith("__") and any(address_matches(p, t) for p in patterns)}
    return sorted((names - set(patterns)) | matched)


def source_partitions(consumer: Consumer, config: JobConfig, timeout: float = 30) -> list[tuple[str, int]]:
    """The partitions of the topics the kafkaToJms routes read now (`read_topics`), in one metadata
    request."""
    existing = existing_partitions(consumer, timeout)
    return [(t, p) for t in read_topics(config, list(existing)) for p in existing[t]]


class IngressReader(RangeReader):
    """The partitions of the topics the kafkaToJms routes read now, one range each."""

    RANGE = ingress_task.run
    INTERVAL = ingress_interval.run

    @property
    def config(self) -> JobConfig:
        return self._watched.current()

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return ingress_task.consumer_settings(self.config)

    def watermarks(self) -> tuple[Offsets, Offsets]:
        config = self.config
        low: Offsets = {}
        high: Offsets = {}
        if not config.routes_for(Direction.KAFKA_TO_JMS):
            return low, high
        for topic, partition in source_partitions(self.consumer, config):
            low[key(topic, partition)], high[key(topic, partition)] = watermarks(
                self.consumer, topic, partition
            )
        return low, high

    def locate(self, key: str) -> tuple[str, int] | None:
        return topic_partition(key) if is_partition_key(key) else None

    def initialOffset(self) -> Offsets:
        reset = self.start_offsets()  # `jmsbridge reset-checkpoint`: the partitions' positions
        return reset if reset is not None else {}

    def plan(self, start: Offsets, limit: ReadLimit) -> Offsets:
        self.check_binding(start)
        low, high = self.latest()
        if self.real_time:  # where each partition stands: the next interval's tasks begin there
            start = {**start, **self.progress({k: o for k, o in start.items() if k in high})}
        self.check_range(start, low, high)  # another topic, or records lost to retention: stop
        self.refresh_binding(start, low)
        placed = place_new(start, low, high, starting_from_earliest(self.config))
        reading = {k: max(start[k], low[k]) for k in high if k in start}  # past lost records, if skipped
        patterns = {pattern_key(t): 0 for t in topic_patterns(self.config)}
        if self.real_time:
            position = {k: min(o, high[k]) for k, o in reading.items()}
            return {**start, **position, **placed, **patterns, **next_interval(start)}
        latest = dict(high)
        if self._target is not None:  # nothing written after the query started
            latest = {k: max(reading.get(k, 0), min(high[k], self._target.get(k, 0))) for k in high}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = plan_batch(reading, {k: latest[k] for k in reading}, max_rows)
        return {**start, **end, **placed, **patterns}

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[PartitionRange]:
        if self.real_time:  # every partition read now, the ones placed by this planning too
            read_now = self._latest if self._latest is not None else self.latest()[1]
            seconds = self.task_seconds
            return [
                PartitionRange(*topic_partition(k), end[k], end[k], self.config_path, seconds, self.live)
                for k in sorted(end)
                if k in read_now
            ]
        ranges = []
        for k in sorted(end):
            if k in start and is_partition_key(k) and end[k] > self.floor(k, start[k]):
                topic, partition = topic_partition(k)
                begin = self.floor(k, start[k])
                ranges.append(PartitionRange(topic, partition, begin, end[k], self.config_path))
        return ranges


class IngressSource(RangeSource):
    """`spark.readStream.format("jmsbridge-ingress").option("config", PATH)`: one summary row per task."""

    FORMAT = "jmsbridge-ingress"
    SCHEMA = ingress_task.SUMMARY_SCHEMA
    READER = IngressReader
