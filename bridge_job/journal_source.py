"""A Spark streaming source over the journal topic (PySpark Python data source, confluent-kafka).

Each micro-batch is a set of per-partition offset ranges fixed by the driver (`latestOffset`), so a batch
that Spark replays after a crash reads exactly the same records. `maxRecordsPerBatch` bounds a batch;
the `availableNow` trigger is honoured because Spark then asks with `ReadAllAvailable`.

Rows are produced as Arrow record batches (faster than Python tuples), the Kafka headers packed into
one binary column (see header_blob).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from bridge_job.config import JobConfig, journal_reader_group
from bridge_job.header_blob import pack_headers
from bridge_job.journal import Offsets, plan_batch
from bridge_job.kafka_clients import BridgeStopped, client_config
from bridge_job.loading import load_job_config

SCHEMA = (
    "partition INT, offset BIGINT, timestamp TIMESTAMP, message_id STRING, key BINARY, value BINARY, "
    "headers BINARY"
)
ARROW_SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("message_id", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.binary()),  # packed, see header_blob
    ]
)
ARROW_CHUNK = 4096
READ_STALL_SECONDS = 60.0


def journal_consumer(config: JobConfig) -> Consumer:
    return Consumer(
        client_config(config.bridge.kafka)
        | {
            "group.id": journal_reader_group(config.bridge_id),
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "isolation.level": "read_committed",
            "fetch.max.bytes": str(64 * 1024 * 1024),
        }
    )


@dataclass(frozen=True)
class JournalRange(InputPartition):
    topic: str
    partition: int
    start: int
    end: int
    config_path: str


class JournalReader(DataSourceStreamReader):
    def __init__(self, config_path: str) -> None:
        self.config_path = config_path
        self.config = load_job_config([Path(config_path)])
        self.topic = self.config.journal_topic
        self._consumer: Consumer | None = None

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = journal_consumer(self.config)
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

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        low, high = self.watermarks()
        begin = {p: max(start.get(p, low[p]), low[p]) for p in high}
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
        return self.watermarks()[1]

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[JournalRange]:
        return [
            JournalRange(self.topic, int(p), start.get(p, 0), end[p], self.config_path)
            for p in sorted(end, key=int)
            if end[p] > start.get(p, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, JournalRange)
        config = load_job_config([Path(partition.config_path)])
        consumer = journal_consumer(config)
        try:
            yield from read_range(consumer, partition)
        finally:
            consumer.close()

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the checkpoint is the source of truth for progress, not Kafka."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def read_range(consumer: Consumer, part: JournalRange) -> Iterator[pa.RecordBatch]:
    consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
    rows: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
    position = part.start
    stalled = 0.0
    while position < part.end:
        messages = consumer.consume(num_messages=min(part.end - position, 10_000), timeout=1.0)
        if not messages:
            current = consumer.position([TopicPartition(part.topic, part.partition)])[0].offset
            position = max(position, current)
            stalled += 1.0
            if stalled >= READ_STALL_SECONDS and position < part.end:
                raise BridgeStopped(
                    f"journal {part.topic}/{part.partition}: offsets {position}..{part.end - 1} "
                    f"unreadable for {READ_STALL_SECONDS:.0f}s"
                )
            continue
        stalled = 0.0
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise BridgeStopped(f"cannot read journal {part.topic}/{part.partition}: {error.str()}")
            offset = message.offset() or 0
            if offset >= part.end:
                position = part.end
                break
            position = offset + 1
            key = message.key()
            if isinstance(key, str):
                key = key.encode()
            rows["partition"].append(part.partition)
            rows["offset"].append(offset)
            rows["timestamp"].append(message.timestamp()[1] * 1000)
            rows["message_id"].append(None if key is None else key.decode("utf-8", "replace"))
            rows["key"].append(key)
            rows["value"].append(message.value())
            headers: list[tuple[str, bytes]] = message.headers() or []  # type: ignore[assignment]
            rows["headers"].append(pack_headers(headers))
            if len(rows["offset"]) >= ARROW_CHUNK:
                yield _batch(rows)
    if rows["offset"]:
        yield _batch(rows)


def _batch(rows: dict[str, list[Any]]) -> pa.RecordBatch:
    batch = pa.RecordBatch.from_pydict(rows, schema=ARROW_SCHEMA)
    for column in rows.values():
        column.clear()
    return batch


class JournalSource(DataSource):
    """`spark.readStream.format("jmsbridge-journal").option("config", PATH)`"""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-journal"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> JournalReader:
        return JournalReader(self.options["config"])
