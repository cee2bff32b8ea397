"""A bridge config file and a journal with chosen records on a real Kafka broker, for the egress tests."""

from __future__ import annotations

import uuid
from pathlib import Path

import yaml
from confluent_kafka import Producer

from bridge_job.config import JobConfig
from bridge_job.formats.journal import journal_record
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from testbed.brokers import KafkaBroker
from testbed.builders import config, route

QUEUE = Destination(DestinationKind.QUEUE, "orders.in")


def journalled_bridge(
    kafka: KafkaBroker, tmp_path: Path, partitions: int = 1, **bridge: object
) -> tuple[JobConfig, str, str]:
    """A bridge routing `kind=order` messages keyed by `seq` to a new topic: (config, its file, topic)."""
    n = uuid.uuid4().hex[:8]
    topic = f"orders-{n}"
    job = config(
        route("orders", topic, f"task-{n}", match={"headers": {"kind": "order"}}, key={"property": "seq"}),
        name=f"task-{n}",
        bootstrap=kafka.bootstrap,
        **bridge,
    )
    kafka.create_topics(job.journal_topic, partitions=partitions)
    kafka.create_topics(topic)
    path = tmp_path / f"job-{n}.yaml"
    path.write_text(yaml.safe_dump(job.dump()))
    return job, str(path), topic


def journal(
    kafka: KafkaBroker, job: JobConfig, *messages: JmsMessage, timestamp_ms: int = 0, partition: int = 0
) -> None:
    """Write `messages` to the journal as the ingest would."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for message in messages:
        record = journal_record(message)
        headers: list[tuple[str, str | bytes | None]] = list(record.headers)
        producer.produce(
            job.journal_topic,
            record.value,
            record.key,
            headers=headers,
            timestamp=timestamp_ms,
            partition=partition,
        )
    assert producer.flush(10) == 0


def transactional_writer(kafka: KafkaBroker, transactional_id: str) -> Producer:
    """A producer of `transactional_id`, initialised: it fences any earlier one of that id and aborts its
    open transaction, as the journal writer of a bridge's new active does."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    return producer


def order(seq: int, redelivered: bool = False, kind: str = "order", queue: Destination = QUEUE) -> JmsMessage:
    properties = {"seq": Property.of(seq), "kind": Property.string(kind)}
    return JmsMessage(
        queue, body=f"order {seq}", message_id=f"ID:{seq}", redelivered=redelivered, properties=properties
    )
