"""A Spark streaming sink that writes rows (topic, key, value, headers) to Kafka with confluent-kafka.

Each task produces its rows with an idempotent producer (acks=all) and flushes before it reports
success, so a batch Spark commits is in Kafka. A failed delivery (topic missing, not authorized, ...)
fails the task with `BridgeStopped`, which stops the query: the batch is not committed, and after the
cause is fixed the job restarts and replays it. Producers are kept per Python worker process (Spark
reuses workers), so a batch does not pay for a new connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from confluent_kafka import Producer
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from bridge_job.header_blob import unpack_headers
from bridge_job.kafka_clients import BridgeStopped, KafkaConfig, delivery_failure, producer_config
from bridge_job.loading import WatchedConfig

FLUSH_TIMEOUT_SECONDS = 120.0

_producers: dict[tuple[tuple[str, object], ...], Producer] = {}


def producer_for(config: KafkaConfig) -> Producer:
    key = tuple(sorted(config.items()))
    producer = _producers.get(key)
    if producer is None:
        producer = _producers[key] = Producer(config)
    return producer


@dataclass
class Written(WriterCommitMessage):
    records: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, config_path: str) -> None:
        self.config_path = config_path

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        config = WatchedConfig(Path(self.config_path)).current()
        producer = producer_for(producer_config(config.bridge.kafka))
        failures: list[BridgeStopped] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None and len(failures) < 10:
                failures.append(delivery_failure(message.topic(), error))

        written = Written()
        for batch in iterator:
            columns = batch.to_pydict()
            for topic, key, value, headers in zip(
                columns["topic"], columns["key"], columns["value"], columns["headers"], strict=True
            ):
                pairs = unpack_headers(headers)
                while True:
                    try:
                        producer.produce(topic, value, key, headers=pairs, on_delivery=delivered)  # type: ignore[arg-type]
                        break
                    except BufferError:
                        producer.poll(0.1)  # the local queue is full: let deliveries drain
                written.per_topic[topic] = written.per_topic.get(topic, 0) + 1
                written.records += 1
            producer.poll(0)
            if failures:
                break
        remaining = producer.flush(FLUSH_TIMEOUT_SECONDS)
        if failures:
            raise failures[0]
        if remaining:
            raise BridgeStopped(
                f"{remaining} records not acknowledged by Kafka after {FLUSH_TIMEOUT_SECONDS:.0f}s "
                f"({config.bridge.kafka.bootstrap_servers} unreachable?)"
            )
        return written

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every record of the batch is acknowledged already (tasks flush before they succeed)."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Idempotent at-least-once writes cannot be withdrawn; the replayed batch writes them again."""


class KafkaSink(DataSource):
    """`df.writeStream.format("jmsbridge-kafka").option("config", PATH)`"""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-kafka"

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(self.options["config"])
