"""Reading the journal: the records of one partition between two offsets, with confluent-kafka.

Egress tasks read the ranges the driver planned; a replayed batch reads exactly the same records
(`read_committed`: a record of an aborted journal transaction is never seen). A consumer is kept per
Python worker and unassigned after each range: an assigned consumer keeps fetching, and a broker that
answers empty fetches at once turns that into a busy loop.
"""

from __future__ import annotations

from collections.abc import Collection

from confluent_kafka import Consumer, KafkaError, TopicPartition

from bridge_job.config import JobConfig, journal_reader_group
from bridge_job.errors import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.journal import JournalEntry
from bridge_job.kafka_clients import client_config

READ_STALL_SECONDS = 60.0
LOOKBACK_CHUNK = 2_000
LOOKBACK_MAX_CHUNK = 64_000

_consumers: dict[tuple[tuple[str, object], ...], Consumer] = {}


def consumer_settings(config: JobConfig) -> dict[str, str | int | float | bool]:
    return client_config(config.bridge.kafka) | {
        "group.id": journal_reader_group(config.bridge_id),
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "isolation.level": "read_committed",
        "fetch.max.bytes": str(64 * 1024 * 1024),
    }


def journal_consumer(config: JobConfig) -> Consumer:
    """The journal consumer of this process for the bridge's Kafka settings."""
    settings = consumer_settings(config)
    key = tuple(sorted(settings.items()))
    consumer = _consumers.get(key)
    if consumer is None:
        consumer = _consumers[key] = Consumer(settings)
    return consumer


def close_consumers() -> None:
    """Close this process's journal consumers (a process that is done with the bridge)."""
    while _consumers:
        _consumers.popitem()[1].close()


def read_range(consumer: Consumer, topic: str, partition: int, start: int, end: int) -> list[JournalEntry]:
    """Every record of `topic`/`partition` from `start` up to `end` (exclusive)."""
    entries: list[JournalEntry] = []
    if end <= start:
        return entries
    consumer.assign([TopicPartition(topic, partition, start)])
    try:
        position = start
        stalled = 0.0
        while position < end:
            messages = consumer.consume(num_messages=min(end - position, 10_000), timeout=1.0)
            if not messages:
                # Offsets of aborted transactions and transaction markers hold no record to read.
                current = consumer.position([TopicPartition(topic, partition)])[0].offset
                position = max(position, current)
                stalled += 1.0
                if stalled >= READ_STALL_SECONDS and position < end:
                    raise BridgeStopped(
                        f"journal {topic}/{partition}: offsets {position}..{end - 1} "
                        f"unreadable for {READ_STALL_SECONDS:.0f}s"
                    )
                continue
            stalled = 0.0
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise BridgeStopped(f"cannot read journal {topic}/{partition}: {error.str()}")
                offset = message.offset() or 0
                if offset >= end:
                    position = end
                    break
                position = offset + 1
                record = KafkaRecord(message.value(), message.headers() or [], message.key())  # type: ignore[arg-type]
                entries.append(JournalEntry(record, partition, offset, message.timestamp()[1]))
    finally:
        consumer.unassign()
    return entries


def find_earlier(
    consumer: Consumer, topic: str, partition: int, before: int, ids: Collection[str], not_before_ms: int
) -> set[str]:
    """Which of `ids` the partition holds before offset `before`, looking back no further than records
    written at `not_before_ms`. Reads backwards in growing chunks and stops once every id is found: the
    original of a redelivered message is usually only a batch or two back."""
    wanted = set(ids)
    found: set[str] = set()
    low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30, cached=False)
    end, chunk = before, LOOKBACK_CHUNK
    while wanted and end > low:
        start = max(low, end - chunk)
        entries = read_range(consumer, topic, partition, start, end)
        hits = {e.message_id for e in entries if e.message_id in wanted and e.timestamp_ms >= not_before_ms}
        found |= hits
        wanted -= hits
        if entries and entries[0].timestamp_ms < not_before_ms:
            break
        end, chunk = start, min(chunk * 2, LOOKBACK_MAX_CHUNK)
    return found
