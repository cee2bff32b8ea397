"""One egress task in-process, on Apache Kafka, without Spark: what a Spark task does
with its journal range, checked by reading the destination topics as a user would."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bridge_job.config import journal_reader_group
from bridge_job.egress import task as egress_task
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats.journal import Epoch, journal_record
from bridge_job.journal.reading import LOOKBACK_CHUNK
from bridge_job.journal.writer import JournalWriter
from bridge_job.kafka.reading import close_consumers
from bridge_job.kafka.writing import close_producers
from bridge_job.message import JmsMessage, Property
from testbed.brokers import KafkaBroker
from testbed.harness import read_topics
from tests.support.journal import QUEUE, journal, journalled_bridge, order, transactional_writer


@pytest.fixture(autouse=True, scope="module")
def clients() -> Iterator[None]:
    """The task keeps its Kafka clients per process, as in a Spark worker: close them after the module."""
    yield
    close_consumers()
    close_producers()


def test_a_range_is_routed_converted_and_written(kafka: KafkaBroker, tmp_path: Path) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, *(order(seq) for seq in range(5)))
    summary = egress_task.run(path, job.journal_topic, 0, 1, 4)  # the middle three only
    assert (summary.records, summary.published, summary.duplicates, summary.replayed) == (3, 3, 0, False)
    records = read_topics(kafka, [topic], 3, settle=0.5)
    assert [r.key for r in records] == [b"1", b"2", b"3"]  # in journal order
    assert all(r.header("jmsbridge.origin") == job.bridge_id.encode() for r in records)


def test_an_epoch_marker_is_counted_not_routed(kafka: KafkaBroker, tmp_path: Path) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, order(0))
    JournalWriter(job, partitions=1).open(Epoch("b/pod-b", "b"))  # a takeover between two messages
    journal(kafka, job, order(1))
    summary = egress_task.run(path, job.journal_topic, 0, 0, 4)  # 0, the marker, its commit, 1
    assert (summary.records, summary.markers, summary.published, summary.skipped) == (2, 1, 2, 0)
    assert [r.key for r in read_topics(kafka, [topic], 2, settle=0.5)] == [b"0", b"1"]


def test_a_redelivery_whose_original_is_in_an_earlier_range_is_dropped(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, order(0), order(1), order(2), order(1, redelivered=True), order(3))
    egress_task.run(path, job.journal_topic, 0, 0, 3)
    summary = egress_task.run(path, job.journal_topic, 0, 3, 5)
    assert (summary.records, summary.duplicates, summary.published) == (2, 1, 1)
    assert [r.key for r in read_topics(kafka, [topic], 4, settle=0.5)] == [b"0", b"1", b"2", b"3"]


def test_the_look_back_finds_an_original_chunks_back_and_keeps_a_message_never_journalled(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """After a crash: one redelivered message was journalled long before (three look-back chunks back),
    the other never was (the former active took it and died): the first is dropped, the second written."""
    job, path, topic = journalled_bridge(kafka, tmp_path)
    earlier = 3 * LOOKBACK_CHUNK
    journal(kafka, job, *(order(seq) for seq in range(earlier)))
    journal(kafka, job, order(0, redelivered=True), order(earlier, redelivered=True), order(earlier + 1))
    summary = egress_task.run(path, job.journal_topic, 0, earlier, earlier + 3)
    assert (summary.records, summary.duplicates, summary.published) == (3, 1, 2)
    written = [r.key for r in read_topics(kafka, [topic], 2, settle=0.5)]
    assert written == [str(earlier).encode(), str(earlier + 1).encode()]


def test_an_original_older_than_the_dedup_window_does_not_count(kafka: KafkaBroker, tmp_path: Path) -> None:
    job, path, _ = journalled_bridge(kafka, tmp_path, spark={"dedupWindowSeconds": 60})
    now = int(time.time() * 1000)
    journal(kafka, job, order(0), order(1), timestamp_ms=now - 3_600_000)
    journal(kafka, job, order(1, redelivered=True), timestamp_ms=now)
    summary = egress_task.run(path, job.journal_topic, 0, 2, 3)
    assert (summary.duplicates, summary.published) == (0, 1)


def test_fail_policy_stops_before_anything_of_the_range_is_written(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, order(0), order(1, kind="unknown"), order(2))
    with pytest.raises(BridgeStopped, match=r"message ID:1 from queue://orders.in .*NoRoute.*policy fail"):
        egress_task.run(path, job.journal_topic, 0, 0, 3)
    assert read_topics(kafka, [topic], 0, settle=1.0) == []


def test_exactly_once_commits_progress_with_the_records_and_skips_a_replay(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path, delivery="exactlyOnce")
    journal(kafka, job, *(order(seq) for seq in range(4)))
    first = egress_task.run(path, job.journal_topic, 0, 0, 4)
    replay = egress_task.run(path, job.journal_topic, 0, 0, 4)  # Spark replays the batch after a crash
    assert (first.published, first.replayed) == (4, False)
    assert (replay.published, replay.replayed) == (0, True)
    assert [r.key for r in read_topics(kafka, [topic], 4, settle=1.0)] == [b"0", b"1", b"2", b"3"]
    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": journal_reader_group(job.bridge_id)})
    try:
        (progress,) = reader.committed([TopicPartition(job.journal_topic, 0)], timeout=10)
    finally:
        reader.close()
    assert progress.offset == 4  # the reader group's offset is the progress, visible to Kafka tools


def test_exactly_once_after_a_writer_killed_mid_transaction_goes_on_at_once_and_writes_each_record_once(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """A writer killed with its transaction open (records written, the reader group's progress sent) holds
    that progress back until the transaction times out, two minutes: its successor's task waited that
    long before it read where to begin. It fences the former writer first, which aborts the transaction."""
    job, path, topic = journalled_bridge(kafka, tmp_path, delivery="exactlyOnce")
    journal(kafka, job, *(order(seq) for seq in range(4)))
    assert egress_task.run(path, job.journal_topic, 0, 0, 2).published == 2
    killed = Producer(egress_task.transactional_writer(job, 0))  # the same id, as a killed worker had it
    killed.init_transactions(30)
    killed.begin_transaction()
    for seq in (b"2", b"3"):
        killed.produce(topic, b"never committed", seq)
    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": journal_reader_group(job.bridge_id)})
    progress = [TopicPartition(job.journal_topic, 0, 4)]
    killed.send_offsets_to_transaction(progress, reader.consumer_group_metadata(), 30)
    reader.close()
    killed.flush(30)
    close_producers()  # this process's producer was fenced by the killed one: a new worker starts over

    began = time.monotonic()
    summary = egress_task.run(path, job.journal_topic, 0, 2, 4)
    assert time.monotonic() - began < 30  # not the transaction's two minutes
    assert (summary.published, summary.replayed) == (2, False)
    records = read_topics(kafka, [topic], 4, settle=1.0)
    assert [(r.key, r.value) for r in records][2:] == [(b"2", b"order 2"), (b"3", b"order 3")]
    assert [r.key for r in records] == [b"0", b"1", b"2", b"3"]


def test_a_record_too_large_for_its_topic_is_a_soft_failure(kafka: KafkaBroker, tmp_path: Path) -> None:
    """The topic's max.message.bytes is learned before producing: the large record is dead-lettered without
    its body (its size in a header), and the record behind it is published."""
    from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

    dead_letters = f"dlq-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(dead_letters)
    routing = {"onSoftFailure": "deadLetter", "deadLetterTopic": dead_letters}
    job, path, topic = journalled_bridge(kafka, tmp_path, routing=routing)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    limit = ConfigResource("topic", topic, set_config={"max.message.bytes": "4096"})
    for future in admin.alter_configs([limit]).values():
        future.result(timeout=30)
    properties = {"seq": Property.of(0), "kind": Property.string("order")}
    large = JmsMessage(QUEUE, body="x" * 5000, message_id="ID:0", properties=properties)
    journal(kafka, job, large, order(1))

    summary = egress_task.run(path, job.journal_topic, 0, 0, 2)
    assert (summary.published, summary.dead_lettered) == (1, 1)
    assert [r.key for r in read_topics(kafka, [topic], 1, settle=0.5)] == [b"1"]
    (letter,) = read_topics(kafka, [dead_letters], 1, settle=0.5)
    assert letter.value is None
    assert letter.header("jmsbridge.deadletter.reason") == b"MessageTooLarge"
    assert letter.header("jmsbridge.deadletter.bodySize") == b"5000"
    assert f"topic {topic}".encode() in (letter.header("jmsbridge.deadletter.error") or b"")


def test_an_aborted_journal_write_is_moved_past_without_a_word(
    kafka: KafkaBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A failover aborts the former active's open journal write: the offsets that return no committed
    record hold its records and the abort marker (journal/holes.py), and the task moves past them."""
    job, path, topic = journalled_bridge(kafka, tmp_path)

    def write(producer: Producer, *seqs: int) -> None:
        producer.begin_transaction()
        for seq in seqs:
            record = journal_record(order(seq))
            producer.produce(job.journal_topic, record.value, record.key, headers=list(record.headers))
        assert producer.flush(10) == 0

    former = transactional_writer(kafka, f"{topic}-journal")
    write(former, 0, 1)
    former.commit_transaction(30)  # 0-1, its marker at 2
    write(former, 2, 3)  # 3-4, left open: the former active froze
    successor = transactional_writer(kafka, f"{topic}-journal")  # aborts it: the marker at 5
    write(successor, 4)
    successor.commit_transaction(30)  # 6, its marker at 7
    with caplog.at_level(logging.INFO):
        summary = egress_task.run(path, job.journal_topic, 0, 0, 8)  # the run 2..5: two markers, two aborted
    assert summary.published == 3
    assert [r.key for r in read_topics(kafka, [topic], 3, settle=0.5)] == [b"0", b"1", b"4"]
    assert [m for m in caplog.messages if "offsets" in m] == []


def test_journal_records_deleted_before_they_were_written_stop_the_bridge(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """Records the journal's retention deleted before the egress read them: the task names them and stops
    at once rather than move past them (or wait for them)."""
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, *(order(seq) for seq in range(6)))
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([TopicPartition(job.journal_topic, 0, 4)]).values():
        future.result(timeout=30)
    with pytest.raises(BridgeStopped) as stopped:
        egress_task.run(path, job.journal_topic, 0, 0, 6)
    assert str(stopped.value).startswith(
        f"jmsbridge hard failure: topic {job.journal_topic} partition 0: offsets 0..5 are gone from Kafka "
        "(deleted by the topic's retention, or by hand) before the bridge read them, and the messages they "
        "held with them: "
    )
    assert read_topics(kafka, [topic], 0, settle=0.5) == []
