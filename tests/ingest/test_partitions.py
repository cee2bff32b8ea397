"""Ingest partitions: the real ingest in-process on real ActiveMQ and Apache Kafka, with a journal of several
partitions. Each partition with sources journals with a producer of its own; whatever wrote the journal
before (a former active, a release before ingest partitions) is fenced before a message is taken."""

from __future__ import annotations

import uuid

import pytest

from bridge_job.config import JmsBridge, JobConfig, job_config
from bridge_job.formats import KafkaRecord
from bridge_job.formats.journal import EPOCH_HEADER, Epoch, JournalEntry, destination_partition
from bridge_job.ingest.journalling import Ingest
from bridge_job.jms import start_jvm
from bridge_job.journal.topic import ensure_journal_topic
from bridge_job.journal.writer import JournalFenced, JournalWriter
from bridge_job.message import Destination, DestinationKind, JmsMessage
from testbed.brokers import ActiveMqBroker, KafkaBroker, activemq_classpath
from testbed.harness import bridge_document, read_topics, send

PARTITIONS = 3
ZOMBIE, ACTIVE = Epoch("zombie/pod", "primary"), Epoch("active/pod", "secondary")


@pytest.fixture(scope="module", autouse=True)
def jvm() -> None:
    start_jvm(activemq_classpath())


def queue_in(partition: int) -> str:
    """A new queue whose messages are journalled to `partition`."""
    while True:
        name = f"parts.{uuid.uuid4().hex[:8]}"
        if destination_partition(Destination(DestinationKind.QUEUE, name), PARTITIONS) == partition:
            return name


def bridge(activemq: ActiveMqBroker, kafka: KafkaBroker, *queues: str) -> JobConfig:
    sources = [{"queue": q} for q in queues]
    document = bridge_document(f"parts-{uuid.uuid4().hex[:8]}", activemq, kafka, sources)
    document["spec"]["kafka"]["journalPartitions"] = PARTITIONS
    config = job_config(JmsBridge.model_validate(document), [])
    assert ensure_journal_topic(config) == PARTITIONS
    return config


def bodies(kafka: KafkaBroker, config: JobConfig, partition: int, count: int) -> list[str]:
    """The message bodies journalled to `partition`, epoch markers left out, once there are `count`."""
    records = read_topics(
        kafka,
        [config.journal_topic],
        count,
        done=lambda got: sum(r.header(EPOCH_HEADER) is None for r in got) >= count,
        settle=0.5,
        partition=partition,
    )
    return [
        str(JournalEntry(r.to_record()).message().body) for r in records if r.header(EPOCH_HEADER) is None
    ]


def texts(queue: str, prefix: str, count: int) -> list[JmsMessage]:
    return [JmsMessage(Destination(DestinationKind.QUEUE, queue), body=f"{prefix}{i}") for i in range(count)]


def test_queues_of_two_partitions_are_journalled_each_to_its_partition_in_order(
    activemq: ActiveMqBroker, kafka: KafkaBroker, running: list[Ingest]
) -> None:
    first, second = queue_in(0), queue_in(2)
    config = bridge(activemq, kafka, first, second)
    send(activemq, [*texts(first, "a", 30), *texts(second, "b", 30)])
    ingest = Ingest(config, PARTITIONS)
    assert sorted(ingest.busy) == [0, 2]  # partition 1 has no source: no producer, no connection
    base = f"jmsbridge-{config.bridge_id}-a"  # a broker gives a client id to one connection at a time
    assert [part.client_id for part in ingest.parts] == [base, f"{base}-ingest-2"]
    assert [part.writer.transactional_id for part in ingest.parts] == [
        f"{config.bridge_id}.jms-bridge.journal-0",
        f"{config.bridge_id}.jms-bridge.journal-2",
    ]
    running.append(ingest.start(ACTIVE))

    assert bodies(kafka, config, 0, 30) == [f"a{i}" for i in range(30)]
    assert bodies(kafka, config, 2, 30) == [f"b{i}" for i in range(30)]
    assert ingest.failure is None


def test_a_former_writer_of_any_journal_id_is_fenced_before_a_message_is_taken(
    activemq: ActiveMqBroker, kafka: KafkaBroker, running: list[Ingest]
) -> None:
    """A former active's producers (one per partition with sources, the partition that has none now, and
    the one id of a release before ingest partitions) can write nothing once the new active started."""
    config = bridge(activemq, kafka, queue_in(1))
    zombies = [JournalWriter(config, PARTITIONS, ingest_partition=p) for p in (None, 0, 1, 2)]
    for zombie in zombies:
        zombie.open(ZOMBIE)
    running.append(Ingest(config, PARTITIONS).start(ACTIVE))

    late = [(config.journal_topic, KafkaRecord(value=b"zombie write"), 0)]
    for zombie in zombies:
        with pytest.raises(JournalFenced, match="took over the journal"):
            zombie.write(late)
        zombie.close()
