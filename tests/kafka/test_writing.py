"""Kafka writes of an egress task across a broker restart, on an Apache Kafka of the test's own,
without Spark: the broker is stopped and started while the task's producer is kept, as in a Spark worker."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition

from bridge_job.egress import task as egress_task
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.journal.reading import journal_consumer
from bridge_job.kafka import writing
from bridge_job.kafka.clients import producer_config
from bridge_job.kafka.reading import close_consumers
from bridge_job.kafka.writing import Deliveries, Superseded, close_producers, write_transaction
from testbed.brokers import KafkaBroker
from testbed.harness import read_topics
from tests.support.journal import journal, journalled_bridge, order


@pytest.fixture
def own_kafka() -> Iterator[KafkaBroker]:
    broker = KafkaBroker().start()
    yield broker
    close_consumers()
    close_producers()
    broker.cleanup()


@pytest.mark.slow  # a broker of its own, restarted (25 s)
def test_exactly_once_carries_on_after_the_broker_restarted(own_kafka: KafkaBroker, tmp_path: Path) -> None:
    """Once its only broker was gone, librdkafka's default re-bootstrap left `send_offsets_to_transaction`
    hanging past its timeout after the broker came back; the task runs in a thread so that a hang fails."""
    job, path, topic = journalled_bridge(own_kafka, tmp_path, delivery="exactlyOnce")
    journal(own_kafka, job, *(order(seq) for seq in range(4)))
    egress_task.run(path, job.journal_topic, 0, 0, 2)
    own_kafka.stop()
    own_kafka.start()
    after = threading.Thread(target=egress_task.run, args=(path, job.journal_topic, 0, 2, 4), daemon=True)
    after.start()
    after.join(timeout=90)
    assert not after.is_alive(), "the transaction after the restart never completed"
    assert [r.key for r in read_topics(own_kafka, [topic], 4, settle=1.0)] == [b"0", b"1", b"2", b"3"]


@pytest.mark.slow  # a broker of its own, frozen until the transaction times out (20 s)
def test_a_transaction_that_never_returns_is_a_hard_failure_not_a_stall(
    own_kafka: KafkaBroker, tmp_path: Path
) -> None:
    """A stuck librdkafka call, made real with the re-bootstrap that egress turns off: the write gives up
    after its deadline with a stop that says so, and nothing of the stuck transaction is visible."""
    job, _, topic = journalled_bridge(own_kafka, tmp_path, delivery="exactlyOnce")
    stuck = {"transactional.id": f"{topic}-stuck", "metadata.recovery.strategy": "rebootstrap"}
    settings = producer_config(job.bridge.kafka) | stuck
    reader = journal_consumer(job)

    def write(seq: int, deadline: float) -> None:
        record = (topic, KafkaRecord(b"v", [], str(seq).encode()))
        write_transaction(settings, [record], reader, TopicPartition(job.journal_topic, 0, seq + 1), deadline)

    write(0, 60)
    own_kafka.stop()
    own_kafka.start()
    # A short deadline: the stuck transaction never returns, whatever it is given
    with pytest.raises(BridgeStopped, match=r"up to journal offset 2 did not finish within 3s: the Kafka"):
        write(1, 3)
    assert [r.key for r in read_topics(own_kafka, [topic], 1, settle=1.0)] == [b"0"]


def test_a_fenced_writer_whose_successor_wrote_past_its_range_writes_nothing(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """A frozen active's task, thawed after the other instance took its journal partition over: retrying
    with a new producer would fence the successor and write the range a second time."""
    job, _, topic = journalled_bridge(kafka, tmp_path, delivery="exactlyOnce")
    settings = producer_config(job.bridge.kafka) | {"transactional.id": f"{topic}-egress-0"}
    reader = journal_consumer(job)

    def record(seq: int) -> tuple[str, KafkaRecord]:
        return topic, KafkaRecord(b"v", [], str(seq).encode())

    write_transaction(settings, [record(0)], reader, TopicPartition(job.journal_topic, 0, 1), 60, begun=0)
    successor = Producer(settings)  # the other instance: the same transactional id fences the first
    successor.init_transactions(30)
    successor.begin_transaction()
    for seq in (1, 2, 3):
        successor.produce(topic, b"v", str(seq).encode())
    progress = [TopicPartition(job.journal_topic, 0, 4)]
    successor.send_offsets_to_transaction(progress, reader.consumer_group_metadata(), 30)
    successor.commit_transaction(30)

    with pytest.raises(Superseded):
        write_transaction(settings, [record(1)], reader, TopicPartition(job.journal_topic, 0, 2), 60, begun=1)
    assert [r.key for r in read_topics(kafka, [topic], 4, settle=1.0)] == [b"0", b"1", b"2", b"3"]


class _Record:
    def topic(self) -> str:
        return "orders"


def test_a_record_purged_from_a_failed_transaction_is_the_transactions_failure_not_its_own() -> None:
    """librdkafka purges a fenced transaction's queued records: the fencing is the cause, and it decides
    (Superseded or a retry), not a "cannot write to topic" stop. Outside a transaction a purge is a loss."""
    purged = KafkaError(KafkaError._PURGE_QUEUE)
    in_transaction = Deliveries(in_transaction=True)
    in_transaction(purged, _Record())
    assert in_transaction.failures == []
    plain = Deliveries()
    plain(purged, _Record())
    assert [str(failure) for failure in plain.failures] == [
        "jmsbridge hard failure: cannot write to topic orders: Local: Purged in queue"
    ]


@pytest.mark.parametrize("delivery", ["atLeastOnce", "exactlyOnce"])
def test_a_destination_topic_deleted_under_the_bridge_stops_it_naming_the_topic(
    kafka: KafkaBroker, tmp_path: Path, delivery: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client retries a write to a deleted topic as one yet to be made, until the record's timeout (the
    transaction's two minutes, or the patience); the task stops at once instead, saying what to do. (It
    asks after a write slow for 5 s, then again 5 s later; 1 s here.)"""
    monkeypatch.setattr(writing, "SLOW_WRITE_SECONDS", 1.0)
    job, path, topic = journalled_bridge(kafka, tmp_path, delivery=delivery)
    journal(kafka, job, *(order(seq) for seq in range(4)))
    egress_task.run(path, job.journal_topic, 0, 0, 2)
    kafka.delete_topics(topic)
    stopped: list[BaseException] = []

    def write_on() -> None:
        try:
            egress_task.run(path, job.journal_topic, 0, 2, 4)
        except BaseException as error:  # asserted below
            stopped.append(error)

    task = threading.Thread(target=write_on, daemon=True)
    task.start()
    task.join(timeout=60)  # well within the two minutes it waited
    assert not task.is_alive(), "the write to the deleted topic did not stop"
    assert [str(error) for error in stopped] == [
        f"jmsbridge hard failure: topic {topic} does not exist: create it or fix the route"
    ]
    assert isinstance(stopped[0], BridgeStopped)
