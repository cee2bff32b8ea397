"""A group's committed offsets while a transaction that commits them is left open, as a writer killed
mid-transaction leaves it, on Apache Kafka: a `read_committed` consumer waits for that transaction (up to
its timeout, two minutes in the bridge); `committed_offsets` (kafka/reading.py) answers at once with what
was committed before it, and once a successor fences the writer the wait is over for everyone."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bridge_job.kafka.reading import close_consumers, committed_offsets
from testbed.brokers import KafkaBroker
from tests.support.journal import transactional_writer


@pytest.fixture(autouse=True)
def clients() -> Iterator[None]:
    yield
    close_consumers()  # the one `committed_offsets` keeps, as a process of the job does


def transaction_left_open(
    kafka: KafkaBroker, transactional_id: str, topic: str, group: str, committed: int, open_at: int
) -> Producer:
    """A writer that committed `group` at `committed`, then began a transaction moving it to `open_at`
    and stopped there (the bridge's egress tasks commit their progress in their transactions)."""
    member = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group})
    metadata = member.consumer_group_metadata()
    member.close()
    writer = transactional_writer(kafka, transactional_id)
    for offset in (committed, open_at):
        writer.begin_transaction()
        writer.produce(topic, b"r")
        writer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], metadata, 30)
        if offset == committed:
            writer.commit_transaction(30)
    return writer


def test_committed_offsets_do_not_wait_for_a_transaction_left_open(kafka: KafkaBroker) -> None:
    topic, group = f"journal-{uuid.uuid4().hex[:8]}", f"reader-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic)
    settings = {"bootstrap.servers": kafka.bootstrap, "group.id": group, "isolation.level": "read_committed"}
    transactional_id = f"egress-{uuid.uuid4().hex[:8]}"
    writer = transaction_left_open(kafka, transactional_id, topic, group, committed=5, open_at=9)

    asked = time.monotonic()
    (found,) = committed_offsets(settings, [TopicPartition(topic, 0)], timeout=20)
    assert found.offset == 5
    assert time.monotonic() - asked < 10  # a stable-offsets read waits out the whole timeout

    stable = Consumer(settings)
    try:
        with pytest.raises(KafkaException, match="Timed out"):
            stable.committed([TopicPartition(topic, 0)], timeout=3)
        transactional_writer(kafka, transactional_id)  # its successor fences it: the transaction is aborted
        assert stable.committed([TopicPartition(topic, 0)], timeout=20)[0].offset == 5
    finally:
        stable.close()
        del writer
