"""Reading the journal: the entries of one partition between two offsets (kafka/reading.py), and the
backwards search for the original of a redelivered message.
"""

from __future__ import annotations

from collections.abc import Collection

from bridge_job.config import JobConfig, journal_reader_group
from bridge_job.formats import KafkaRecord
from bridge_job.formats.journal import JournalEntry, message_id_of
from bridge_job.kafka import reading as kafka_reading
from bridge_job.kafka.reading import Consumer, Message, close_consumers, watermarks

__all__ = ["close_consumers", "consumer_settings", "find_earlier", "journal_consumer", "read_range"]

LOOKBACK_CHUNK = 2_000
LOOKBACK_MAX_CHUNK = 64_000


def consumer_settings(config: JobConfig) -> dict[str, str | int | float | bool]:
    """The journal reader group's consumer, fetching up to 64 MiB at a time."""
    settings = kafka_reading.consumer_settings(config.bridge.kafka, journal_reader_group(config.bridge_id))
    return settings | {"fetch.max.bytes": str(64 * 1024 * 1024)}


def journal_consumer(config: JobConfig) -> Consumer:
    """The journal consumer of this process for the bridge's Kafka settings."""
    return kafka_reading.consumer_for(consumer_settings(config))


def read_range(
    consumer: Consumer,
    topic: str,
    partition: int,
    start: int,
    end: int,
    stall_seconds: float = kafka_reading.READ_STALL_SECONDS,
) -> list[JournalEntry]:
    """Every journal entry of `topic`/`partition` from `start` up to `end` (exclusive)."""

    def entry(record: KafkaRecord, offset: int, timestamp_ms: int) -> JournalEntry:
        return JournalEntry(record, partition, offset, timestamp_ms)

    return kafka_reading.read_range(consumer, topic, partition, start, end, entry, stall_seconds)


def find_earlier(
    consumer: Consumer,
    topic: str,
    partition: int,
    before: int,
    ids: Collection[str],
    not_before_ms: int,
    timeout: float = 30.0,
    stall_seconds: float = kafka_reading.READ_STALL_SECONDS,
) -> set[str]:
    """Which of `ids` the partition holds before offset `before`, looking back no further than records
    written at `not_before_ms`. Reads backwards in growing chunks and stops once every id is found: the
    original of a redelivered message is usually only a batch or two back. `timeout` for the question of
    where the partition begins, `stall_seconds` for each read.

    After a crash none of them is usually there (the former active never journalled what it had taken),
    and the whole window is read: only each record's key (the message id) and time are taken from it."""
    wanted = set(ids)
    found: set[str] = set()
    low, _ = watermarks(consumer, topic, partition, timeout)
    end, chunk = before, LOOKBACK_CHUNK
    while wanted and end > low:
        start = max(low, end - chunk)
        keys = kafka_reading.read_messages(consumer, topic, partition, start, end, _key_at, stall_seconds)
        hits = {key for key, written_ms in keys if key in wanted and written_ms >= not_before_ms}
        found |= hits
        wanted -= hits
        if keys and keys[0][1] < not_before_ms:
            break
        end, chunk = start, min(chunk * 2, LOOKBACK_MAX_CHUNK)
    return found


def _key_at(message: Message, offset: int, timestamp_ms: int) -> tuple[str | None, int]:
    """A record's message id and time."""
    return message_id_of(message.key()), timestamp_ms
