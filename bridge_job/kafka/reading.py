"""Reading a range of one Kafka topic partition, as the tasks of both directions do, and their consumers.

A task reads exactly the offsets its batch planned, so a replayed batch reads the same records
(`read_committed`: a record of an aborted transaction is never seen). Consumers are kept per Python
worker and unassigned after each range: an assigned consumer keeps fetching, and a broker that answers
empty fetches at once turns that into a busy loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from bridge_job.config import KafkaSpec
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.kafka.clients import client_config

# The client types the rest of the job holds (never builds: the functions here do).
__all__ = [
    "Consumer",
    "Message",
    "TopicPartition",
    "close_consumers",
    "committed_offset",
    "committed_offsets",
    "consumer_for",
    "consumer_settings",
    "first_record",
    "lag_of",
    "new_consumer",
    "read_messages",
    "read_range",
    "watermarks",
]

READ_STALL_SECONDS = 60.0
# How long one `consume` waits for the rest of a range. It waits for as many records as the range has
# offsets, and a range's markers are no records: every range that ends with one (each journal
# transaction's does) waits this long once, in a real-time task's loop, before its records move on.
CONSUME_WAIT_SECONDS = 0.001


def stall_for(patience_seconds: float) -> float:
    """How long a task's read may stall: the bridge's patience, and at least READ_STALL_SECONDS."""
    return max(patience_seconds, READ_STALL_SECONDS)


T = TypeVar("T")
Settings = Mapping[str, str | int | float | bool]

_consumers: dict[tuple[tuple[str, object], ...], Consumer] = {}


def consumer_settings(kafka: KafkaSpec, group: str) -> dict[str, str | int | float | bool]:
    """The settings of a consumer of the job in `group`: committed records only, and no offset committed
    or stored but by the job itself (in a transaction, or never)."""
    settings = client_config(kafka) | {
        "group.id": group,
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "isolation.level": "read_committed",
        # A task reads the offsets its batch planned: offsets the topic no longer holds are an error to
        # report, never a jump to its end or its beginning.
        "auto.offset.reset": "error",
        # Every read is of a range, and the client fetches on past its end: at the end of the log that
        # fetch waits for new records up to this long, and the next range's first fetch (on any of the
        # broker's partitions) waits behind it, also after a seek or a new assignment. Apache Kafka's
        # 500 ms default made a look-back of 30,000 records 4 to 8 times slower (docs/failover.md); at
        # 10 ms, reading one waiting record took 12 ms instead of 2.6, and a real-time task pays that
        # for each range it moves. The consumer is assigned only while it reads a range: a fetch a
        # millisecond for those few milliseconds.
        "fetch.wait.max.ms": 1,
    }
    # With a Python logger, a consumer's logs wait on its queue until it is polled, and the job's consumers
    # are polled only while they read a range: an outage's logs came late or never. Worse, a real-time
    # task's consumer that asked for its partition's end while Kafka restarted never reached Kafka again,
    # and the ingress stopped when its patience ran out with Kafka back (test_kafka_restarted_mid_stream
    # failed 4 times in 4 with the logger, passed 3 in 3 without). Without it librdkafka would write to
    # stderr, past the job's redaction and rate limit: a consumer logs nothing (the job's own outage lines
    # say what it waits for), unless `spec.kafka.properties` sets `log_level`; its error events still go
    # through `error_cb` (refusals.py).
    del settings["logger"]
    settings.setdefault("log_level", 0)
    return settings


def new_consumer(settings: Settings) -> Consumer:
    """A consumer of its own (closed by its caller)."""
    return Consumer(dict(settings))


def consumer_for(settings: Settings) -> Consumer:
    """This process's consumer with these settings."""
    key = tuple(sorted(settings.items()))
    consumer = _consumers.get(key)
    if consumer is None:
        consumer = _consumers[key] = new_consumer(settings)
    return consumer


def watermarks(consumer: Consumer, topic: str, partition: int, timeout: float = 30.0) -> tuple[int, int]:
    """The partition's low and high watermarks, asked of the broker (not the consumer's cached ones)."""
    low, high = consumer.get_watermark_offsets(
        TopicPartition(topic, partition), timeout=timeout, cached=False
    )
    return int(low), int(high)


def lag_of(
    consumer: Consumer, partitions: list[tuple[str, int]], timeout: float
) -> dict[tuple[str, int], int]:
    """Each partition's end minus what the consumer's group committed (from the start when nothing)."""
    lag: dict[tuple[str, int], int] = {}
    if not partitions:
        return lag
    for done in consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=timeout):
        low, high = watermarks(consumer, done.topic, done.partition, timeout)
        lag[(done.topic, done.partition)] = max(high - max(done.offset, low), 0)
    return lag


def committed_offset(consumer: Consumer, topic: str, partition: int, timeout: float) -> int:
    """The offset the consumer's group committed for the partition (negative: none)."""
    (done,) = consumer.committed([TopicPartition(topic, partition)], timeout=timeout)
    return int(done.offset)


def first_record(
    consumer: Consumer, topic: str, partition: int, offset: int, seconds: float = 10.0
) -> tuple[int, int, bytes, bytes] | None:
    """(offset, timestamp in ms, key, value) of the first record at or after `offset` (transaction markers
    are no records); None when none comes within `seconds`."""
    consumer.assign([TopicPartition(topic, partition, offset)])
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            return (
                int(message.offset() or 0),
                int(message.timestamp()[1]),
                message.key() or b"",
                message.value() or b"",
            )
        return None
    finally:
        consumer.unassign()


def committed_offsets(
    settings: Settings, partitions: list[TopicPartition], timeout: float
) -> list[TopicPartition]:
    """The offsets `settings`' group has committed for `partitions`, without waiting for a transaction.

    A `read_committed` consumer asks for stable offsets only (KIP-447): while a transaction that commits
    the group's offsets is open, Kafka answers UNSTABLE_OFFSET_COMMIT and the client asks again until its
    timeout. A writer killed with its transaction open leaves it so until its successor fences it or the
    transaction times out (2 minutes): a job starting again waited that long on its own checkpoint check.
    Asked without that, Kafka gives the offsets committed before the open transaction: what stands once
    it is aborted, and at most one transaction short if it commits (planning and checks take it as a
    floor; the egress tasks fence the former writer before they read where they begin)."""
    reader = consumer_for(dict(settings) | {"isolation.level": "read_uncommitted"})
    return list(reader.committed(partitions, timeout=timeout))


def close_consumers() -> None:
    """Close this process's consumers (a process that is done with the bridge)."""
    while _consumers:
        _consumers.popitem()[1].close()


def _gone(topic: str, partition: int, start: int, end: int) -> str:
    return (
        f"topic {topic} partition {partition}: offsets {start}..{end - 1} are gone from Kafka (deleted by "
        "the topic's retention, or by hand) before the bridge read them, and the messages they held with them"
    )


def read_range(
    consumer: Consumer,
    topic: str,
    partition: int,
    start: int,
    end: int,
    make: Callable[[KafkaRecord, int, int], T],
    stall_seconds: float = READ_STALL_SECONDS,
) -> list[T]:
    """`make(record, offset, timestamp_ms)` for every record of `topic`/`partition` from `start` up to
    `end` (exclusive). Offsets that stay unreadable for `stall_seconds` (Kafka unreachable, a transaction
    left open) stop the bridge."""

    def made(message: Message, offset: int, timestamp_ms: int) -> T:
        record = KafkaRecord(message.value(), message.headers() or [], message.key())  # type: ignore[arg-type]
        return make(record, offset, timestamp_ms)

    return read_messages(consumer, topic, partition, start, end, made, stall_seconds)


def read_messages(
    consumer: Consumer,
    topic: str,
    partition: int,
    start: int,
    end: int,
    make: Callable[[Message, int, int], T],
    stall_seconds: float = READ_STALL_SECONDS,
) -> list[T]:
    """`read_range` for whoever takes only part of each record: `make(message, offset, timestamp_ms)`
    with the client's message, whose value and headers become Python objects only when asked for."""
    found: list[T] = []
    if end <= start:
        return found
    consumer.assign([TopicPartition(topic, partition, start)])
    try:
        position = start
        progressed, wait = time.monotonic(), CONSUME_WAIT_SECONDS
        while position < end:
            messages = consumer.consume(num_messages=min(end - position, 10_000), timeout=wait)
            if not messages:
                # Transaction markers and the offsets of aborted transactions hold no record: the
                # consumer's position moves past them, and a range that ends with one (every
                # transaction's last offset) is read once the position reaches its end.
                current = consumer.position([TopicPartition(topic, partition)])[0].offset
                if current > position:
                    position, progressed, wait = current, time.monotonic(), CONSUME_WAIT_SECONDS
                    continue
                wait = min(wait * 2, 1.0)  # nothing comes: Kafka is slow or away
                if time.monotonic() - progressed >= stall_seconds:
                    raise BridgeStopped(
                        f"topic {topic} partition {partition}: offsets {position}..{end - 1} "
                        f"unreadable for {stall_seconds:.0f}s (spec.outages.patienceSeconds): is Kafka up?"
                    )
                continue
            progressed, wait = time.monotonic(), CONSUME_WAIT_SECONDS
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    if error.code() == KafkaError._AUTO_OFFSET_RESET:
                        raise BridgeStopped(f"{_gone(topic, partition, position, end)}: {error.str()}")
                    raise BridgeStopped(f"cannot read topic {topic} partition {partition}: {error.str()}")
                offset = message.offset() or 0
                if offset >= end:
                    position = end
                    break
                position = offset + 1
                found.append(make(message, offset, message.timestamp()[1]))
    finally:
        consumer.unassign()
    return found
