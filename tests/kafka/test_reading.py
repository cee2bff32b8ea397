"""Reading a range `read_committed` around an aborted transaction, on the suite's Apache Kafka.

An aborted transaction is what a failover leaves in the journal: the former active is fenced with its
transaction open (frozen, killed, cut off), the new active's producer of the same `transactional.id`
aborts it and writes on with the same producer id. A task must skip the aborted records and read every
committed one, whatever offset its range begins at.
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from bridge_job.kafka.reading import read_range
from testbed.brokers import KafkaBroker
from testbed.harness import eventually
from testbed.topic_log import TopicLog
from tests.support.journal import transactional_writer


def transaction(
    producer: Producer, topic: str, values: list[str], commit: bool = True, key: bool = False
) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value.encode(), value.encode() if key else None)
    if commit:
        producer.commit_transaction(30)
    else:
        assert producer.flush(10) == 0  # written, left open: the writer is frozen or gone


def fenced_writer_journal(kafka: KafkaBroker) -> tuple[str, dict[int, str]]:
    """A topic written as a failover writes the journal: a committed transaction, one left open by the
    former writer, then two of its successor (same id): (topic, {offset: value} of the committed records)."""
    topic = f"fenced-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic)
    former = transactional_writer(kafka, f"{topic}-writer")
    transaction(former, topic, ["a0", "a1"])
    transaction(former, topic, ["open0", "open1"], commit=False)
    successor = transactional_writer(kafka, f"{topic}-writer")  # aborts the former's open transaction
    transaction(successor, topic, ["b0", "b1"])
    transaction(successor, topic, ["c0", "c1"])
    everything = values(kafka, topic, 0)
    assert sorted(everything.values()) == ["a0", "a1", "b0", "b1", "c0", "c1"]
    return topic, everything


def values(kafka: KafkaBroker, topic: str, start: int) -> dict[int, str]:
    """The committed records a task's read returns from `start` to the end: {offset: value}."""
    group = f"reader-{uuid.uuid4().hex}"
    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap, "group.id": group, "isolation.level": "read_committed"}
    )
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        found = read_range(consumer, topic, 0, start, end, lambda r, offset, _: (offset, r.value), 10.0)
        return {offset: bytes(value or b"").decode() for offset, value in found}
    finally:
        consumer.close()


def test_a_range_that_begins_before_the_abort_skips_the_aborted_records_only(kafka: KafkaBroker) -> None:
    topic, everything = fenced_writer_journal(kafka)
    aborted_from = min(o for o, v in everything.items() if v == "b0") - 3  # open0, open1, their marker
    for start in range(aborted_from + 1):
        assert values(kafka, topic, start) == {o: v for o, v in everything.items() if o >= start}


def test_a_range_that_begins_after_the_abort_reads_the_successors_committed_records(
    kafka: KafkaBroker,
) -> None:
    """Kafka lists an aborted transaction in a fetch only when its abort marker is at or after the fetch
    offset: a read that begins past the marker drops none of the successor's records (the same producer
    id)."""
    topic, everything = fenced_writer_journal(kafka)
    first_of_successor = min(o for o, v in everything.items() if v == "b0")
    assert values(kafka, topic, first_of_successor) == {
        o: v for o, v in everything.items() if o >= first_of_successor
    }


def test_the_scenarios_topic_log_reads_every_committed_record_around_a_fenced_writer(
    kafka: KafkaBroker,
) -> None:
    """testbed/topic_log.py, as the failover scenario reads its topics while instances are killed
    and frozen: read after each step, a writer fenced with its transaction open in between."""
    topic = f"log-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic)
    log = TopicLog(kafka.bootstrap, topic)

    def keys() -> list[str]:
        return [bytes(r.key or b"").decode() for r in log.records]

    def read(expected: list[str]) -> None:
        """Looks until the log holds `expected`: a commit returns before its markers are written, and the
        last stable offset passes the transaction only then."""

        def caught_up() -> bool:
            log.catch_up()
            return keys() == expected

        eventually(caught_up, 30, f"{expected} in the log")

    former = transactional_writer(kafka, f"{topic}-writer")
    transaction(former, topic, ["a0", "a1"], key=True)
    read(["a0", "a1"])
    transaction(former, topic, ["open0", "open1"], commit=False, key=True)
    log.catch_up()  # the open transaction's records are past the last stable offset
    assert keys() == ["a0", "a1"]
    successor = transactional_writer(kafka, f"{topic}-writer")
    transaction(successor, topic, ["b0", "b1"], key=True)
    read(["a0", "a1", "b0", "b1"])
    transaction(successor, topic, ["c0", "c1"], key=True)
    read(["a0", "a1", "b0", "b1", "c0", "c1"])
    log.close()
