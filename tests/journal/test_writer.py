"""The journal's transactional producer on Apache Kafka: fencing, markers, the guard.

Two writers with one bridge's config stand for the two instances of an active/standby pair: the one that
opens last owns the journal, and the other can neither commit what it had in flight nor write again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

from bridge_job.faults.stops import LeadershipLost
from bridge_job.formats.journal import EPOCH_HEADER, Epoch, JournalEntry, journal_record
from bridge_job.journal.writer import (
    JournalFenced,
    JournalWriter,
    Written,
    hard_failure,
    journal_transactional_id,
)
from bridge_job.message import JmsMessage
from testbed.brokers import KafkaBroker
from testbed.builders import config
from testbed.harness import Received, read_topics
from tests.support.journal import QUEUE, journalled_bridge

ACTIVE = Epoch("b/pod-b", "b", "2026-11-22T10:00:00.000000Z", 3)
ZOMBIE = Epoch("a/pod-a", "a", "2026-11-22T09:00:00.000000Z", 2)


def batch(topic: str, *bodies: str) -> list[Written]:
    return [(topic, journal_record(JmsMessage(QUEUE, body=b, message_id=f"ID:{b}")), 0) for b in bodies]


def bodies(records: list[Received]) -> list[object]:
    """The journal in offset order: message bodies, and `marker:<holder>` for epoch markers."""
    return [
        f"marker:{(r.header(EPOCH_HEADER) or b'').decode()}"
        if r.header(EPOCH_HEADER) is not None
        else JournalEntry(r.to_record()).message().body
        for r in records
    ]


def test_the_writer_that_opens_last_fences_the_other_and_its_open_transaction(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    config, _, _ = journalled_bridge(kafka, tmp_path)
    topic = config.journal_topic
    zombie = JournalWriter(config, partitions=1)
    zombie.open(ZOMBIE)
    assert zombie.write(batch(topic, "before the takeover"))

    # The zombie has a transaction in flight (produced, not committed) when the new active opens.
    zombie.producer.begin_transaction()
    zombie.producer.produce(topic, b"in flight", partition=0)
    zombie.producer.flush(10)
    active = JournalWriter(config, partitions=1)
    active.open(ACTIVE)
    assert active.write(batch(topic, "after the takeover"))

    with pytest.raises(KafkaException):
        zombie.producer.commit_transaction(10)
    zombie._ready = True  # as if its batch had started: the next write is refused, not retried
    with pytest.raises(JournalFenced, match="took over the journal"):
        zombie.write(batch(topic, "by the zombie"))

    records = read_topics(kafka, [topic], 4, settle=1.5)
    assert bodies(records) == [
        "marker:a/pod-a",
        "before the takeover",
        "marker:b/pod-b",
        "after the takeover",
    ]
    marker = json.loads(records[2].value or b"")
    assert marker | {"written": None} == {
        "holder": "b/pod-b",
        "instance": "b",
        "tenureStart": "2026-11-22T10:00:00.000000Z",
        "transitions": 3,
        "written": None,
    }


def test_a_writer_whose_lease_ran_out_never_takes_the_journal_back(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    config, _, _ = journalled_bridge(kafka, tmp_path)
    active = JournalWriter(config, partitions=1)
    active.open(ACTIVE)

    def lease_gone() -> None:
        raise LeadershipLost("no renewal succeeded for 6s")

    zombie = JournalWriter(config, partitions=1, still_active=lease_gone)
    with pytest.raises(LeadershipLost):
        zombie.open(ZOMBIE)
    assert active.write(batch(config.journal_topic, "still ours"))
    journal = read_topics(kafka, [config.journal_topic], 2, settle=1.0)
    assert bodies(journal) == ["marker:b/pod-b", "still ours"]


def test_a_marker_goes_to_every_partition_and_egress_sees_no_message_in_it(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    config, _, _ = journalled_bridge(kafka, tmp_path, partitions=3)
    JournalWriter(config, partitions=3).open(ACTIVE)
    for partition in range(3):
        (record,) = read_topics(kafka, [config.journal_topic], 1, settle=0.5, partition=partition)
        entry = JournalEntry(record.to_record(), partition)
        assert entry.is_marker and entry.message_id is None


def test_a_refused_transactional_id_is_a_hard_failure_that_says_what_to_grant() -> None:
    """No broker here enforces ACLs: the broker's answer is the error librdkafka raises for it."""
    refused = KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    stopped = hard_failure(refused, config(name="orders"), journal_transactional_id("orders", 2))
    assert stopped is not None and stopped.reason == (
        "not authorized to use the transactional id orders.jms-bridge.journal-2 (the journal is written in "
        "transactions): grant WRITE and DESCRIBE on transactional ids with the prefix orders.jms-bridge. to "
        "the bridge's principal"
    )


def test_the_journal_producer_is_transactional_without_re_bootstrapping() -> None:
    """As the egress's (kafka/writing.py `transactional_settings`): after every broker was down, a producer
    that re-bootstraps never sends the offsets of its next transaction, and the call hangs."""
    settings = JournalWriter(config(name="orders"), partitions=1).settings
    assert settings["metadata.recovery.strategy"] == "none"
    assert settings["transactional.id"] == "orders.jms-bridge.journal-0"
    assert settings["transaction.timeout.ms"] == "60000"
