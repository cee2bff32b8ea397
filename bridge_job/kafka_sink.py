"""A Spark streaming sink that writes rows (topic, key, value, headers) to Kafka with confluent-kafka.

`atLeastOnce`: each task produces its rows with an idempotent producer (acks=all) and flushes before it
reports success, so a batch Spark commits is in Kafka. A batch Spark replays after a crash is written
again (duplicates, never loss).

`exactlyOnce`: each task writes its rows in one Kafka transaction whose `transactional.id` is stable per
bridge and task partition, and commits, in the same transaction, a progress marker: the batch id as the
"offset" of a consumer group of its own (`<bridgeId>.jms-bridge.sink-<partition>`). A replayed batch
whose marker is already committed is skipped; one that is not was aborted with its transaction. Opening
the transactional id fences a crashed or partitioned former writer (a zombie) out.

A failed delivery (topic missing, not authorized, ...) fails the task with `BridgeStopped`, which stops
the query: the batch is not committed, and after the cause is fixed the job restarts and replays it.
Producers are kept per Python worker process (Spark reuses workers), so a batch does not pay for a new
connection.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from pyspark import TaskContext
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from bridge_job.config import Delivery, JobConfig, transactional_id_prefix
from bridge_job.header_blob import unpack_headers
from bridge_job.kafka_clients import (
    BridgeStopped,
    KafkaConfig,
    client_config,
    delivery_failure,
    producer_config,
)
from bridge_job.loading import WatchedConfig

log = logging.getLogger("jmsbridge.sink")

FLUSH_TIMEOUT_SECONDS = 120.0
TRANSACTION_TIMEOUT_SECONDS = 120.0

_producers: dict[tuple[tuple[str, object], ...], Producer] = {}


def producer_for(config: KafkaConfig) -> Producer:
    key = tuple(sorted(config.items()))
    producer = _producers.get(key)
    if producer is None:
        producer = Producer(config)
        if "transactional.id" in config:
            producer.init_transactions(TRANSACTION_TIMEOUT_SECONDS)  # fences any former writer
        _producers[key] = producer
    return producer


def forget_producer(config: KafkaConfig) -> None:
    _producers.pop(tuple(sorted(config.items())), None)


def fenced(error: KafkaException) -> bool:
    """Whether a producer lost its transactional id to a newer one (it must be replaced, not reused)."""
    kafka_error = error.args[0] if error.args else None
    fatal = bool(getattr(kafka_error, "fatal", lambda: False)())
    name = str(getattr(kafka_error, "name", lambda: "")())
    return fatal or name in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED", "_FATAL")


def sink_group(bridge_id: str, partition: int) -> str:
    return f"{transactional_id_prefix(bridge_id)}sink-{partition}"


@dataclass
class Written(WriterCommitMessage):
    records: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)
    skipped_replay: bool = False


class Deliveries:
    """Delivery reports of one task: the first few failures, as clear hard failures."""

    def __init__(self) -> None:
        self.failures: list[BridgeStopped] = []

    def __call__(self, error: Any, message: Any) -> None:
        if error is not None and len(self.failures) < 10:
            self.failures.append(delivery_failure(message.topic(), error))


def produce_rows(producer: Producer, batches: list[pa.RecordBatch], deliveries: Deliveries) -> Written:
    written = Written()
    for batch in batches:
        columns = batch.to_pydict()
        for topic, key, value, headers in zip(
            columns["topic"], columns["key"], columns["value"], columns["headers"], strict=True
        ):
            pairs = unpack_headers(headers)
            while True:
                try:
                    producer.produce(topic, value, key, headers=pairs, on_delivery=deliveries)  # type: ignore[arg-type]
                    break
                except BufferError:
                    producer.poll(0.1)  # the local queue is full: let deliveries drain
            written.per_topic[topic] = written.per_topic.get(topic, 0) + 1
            written.records += 1
        producer.poll(0)
        if deliveries.failures:
            raise deliveries.failures[0]
    return written


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, config_path: str) -> None:
        self.config_path = config_path

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        config = WatchedConfig(Path(self.config_path)).current()
        if config.bridge.delivery is Delivery.EXACTLY_ONCE:
            return self.write_transaction(config, list(iterator))
        producer = producer_for(producer_config(config.bridge.kafka))
        deliveries = Deliveries()
        written = produce_rows(producer, list(iterator), deliveries)
        remaining = producer.flush(FLUSH_TIMEOUT_SECONDS)
        if deliveries.failures:
            raise deliveries.failures[0]
        if remaining:
            raise BridgeStopped(
                f"{remaining} records not acknowledged by Kafka after {FLUSH_TIMEOUT_SECONDS:.0f}s "
                f"({config.bridge.kafka.bootstrap_servers} unreachable?)"
            )
        return written

    def write_transaction(self, config: JobConfig, batches: list[pa.RecordBatch]) -> Written:
        context = TaskContext.get()
        assert context is not None, "a sink task runs inside Spark"
        partition = context.partitionId()
        batch_id = int(context.getLocalProperty("streaming.sql.batchId") or -1)
        group = sink_group(config.bridge_id, partition)
        marker = TopicPartition(config.journal_topic, 0)
        kafka = config.bridge.kafka
        tracker = Consumer(client_config(kafka) | {"group.id": group, "enable.auto.commit": "false"})
        try:
            committed = tracker.committed([marker], timeout=30)[0].offset
            if committed > batch_id >= 0:
                log.info("batch %d was committed before a restart: not writing it again", batch_id)
                return Written(skipped_replay=True)
            settings = producer_config(kafka) | {
                "transactional.id": group,
                "transaction.timeout.ms": str(int(TRANSACTION_TIMEOUT_SECONDS * 1000)),
            }
            # Spark may run the next batch in another of its Python workers, whose producer for the same
            # transactional id fenced this one: a fenced producer is replaced once and the batch retried.
            for attempt in (1, 2):
                try:
                    return self._transaction(settings, batches, tracker, marker, batch_id)
                except KafkaException as error:
                    forget_producer(settings)
                    if attempt == 2 or not fenced(error):
                        raise BridgeStopped(
                            f"Kafka transaction of batch {batch_id} failed: {error}"
                        ) from None
                    log.info("transactional producer %s was fenced; retrying with a new one", group)
            raise AssertionError("unreachable")
        finally:
            tracker.close()

    def _transaction(
        self,
        settings: KafkaConfig,
        batches: list[pa.RecordBatch],
        tracker: Consumer,
        marker: TopicPartition,
        batch_id: int,
    ) -> Written:
        producer = producer_for(settings)
        deliveries = Deliveries()
        producer.begin_transaction()
        try:
            written = produce_rows(producer, batches, deliveries)
            progress = TopicPartition(marker.topic, marker.partition, batch_id + 1)
            producer.send_offsets_to_transaction(
                [progress], tracker.consumer_group_metadata(), TRANSACTION_TIMEOUT_SECONDS
            )
            producer.commit_transaction(TRANSACTION_TIMEOUT_SECONDS)
        except BaseException:
            try:
                producer.abort_transaction(TRANSACTION_TIMEOUT_SECONDS)
            except KafkaException:
                forget_producer(settings)
            if deliveries.failures:
                raise deliveries.failures[0] from None
            raise
        return written

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every record of the batch is acknowledged (or committed) already when its task succeeds."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once writes cannot be withdrawn; transactional ones were aborted by their task."""


class KafkaSink(DataSource):
    """`df.writeStream.format("jmsbridge-kafka").option("config", PATH)`"""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-kafka"

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(self.options["config"])
