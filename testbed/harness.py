"""Running the real bridge job against real brokers: the job as a process, JMS in, Kafka out."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition

from bridge_job.config import JmsSource
from bridge_job.formats import KafkaRecord
from bridge_job.jms import BatchConsumer
from bridge_job.message import JmsMessage
from jmsbridge.local import JmsBroker, jms_connection
from testbed.brokers import KafkaBroker, activemq_classpath
from testbed.jms import receive

# The heaviest scenarios (several jobs, kills, a steady load) share one worker of `pytest -n 2`
# (`--dist loadgroup`), so that two of them never load the two cores beside each other.
ONE_AT_A_TIME = pytest.mark.xdist_group("one-at-a-time")

T = TypeVar("T")


def deliveries(in_the_suite: str) -> list[str]:
    """The delivery modes a heavy scenario runs in: one in the suite (its budget, issue 18), both with
    JMSBRIDGE_ALL_MODES=1 in the environment."""
    return variants(["atLeastOnce", "exactlyOnce"], [in_the_suite])


def variants(every: Iterable[T], in_the_suite: Iterable[T]) -> list[T]:
    """A heavy scenario's variants: those `in_the_suite` (its budget), `every` one with
    JMSBRIDGE_ALL_MODES=1 in the environment."""
    return list(every if os.environ.get("JMSBRIDGE_ALL_MODES") == "1" else in_the_suite)


def standby_kinds() -> list[str]:
    """The standby kinds a failover scenario runs with: warm in the suite, cold too with
    JMSBRIDGE_ALL_MODES=1 (a cold standby starts its job only when it takes over: a minute more)."""
    return variants(["warm", "cold"], ["warm"])


def bridge_document(
    name: str, activemq: JmsBroker, kafka: KafkaBroker, sources: list[dict[str, Any]], **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "jms": {
            "connectionFactory": {
                "className": "org.apache.activemq.ActiveMQConnectionFactory",
                "properties": {
                    # bounded reconnects at startup; never park a message in ActiveMQ.DLQ after rollbacks
                    "brokerURL": f"failover:({activemq.url})?startupMaxReconnectAttempts=5"
                    "&jms.redeliveryPolicy.maximumRedeliveries=-1"
                },
            },
            "classpath": activemq_classpath(),
            "sources": sources,
        },
        "kafka": {"bootstrapServers": kafka.bootstrap, "createJournalTopic": True},
        # Real-time intervals of 5 s: more interval ends under test, and their rows (telemetry) sooner.
        "spark": {"triggerIntervalMs": 100, "taskIntervalSeconds": 5},
        "telemetry": {"port": 0},
    }
    for key, value in spec.items():
        body[key] = body.get(key, {}) | value if isinstance(value, dict) else value
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridge",
        "metadata": {"name": name},
        "spec": body,
    }


def route_document(name: str, bridge: str, topic: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": name},
        "spec": {"bridgeRef": {"name": bridge}, "kafkaTopic": topic, **spec},
    }


def to_jms_route(
    name: str, bridge: str, topic: str, destination: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    """A kafkaToJms route to `destination` that reads its topic from the start: what was produced before
    the job started counts too."""
    return route_document(
        name,
        bridge,
        topic,
        direction="kafkaToJms",
        jmsDestination=destination,
        startingOffsets="earliest",
        **spec,
    )


def eventually(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait until `condition()` holds, polling; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.2)


def write_yaml(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def send(activemq: JmsBroker, messages: Iterable[JmsMessage]) -> list[str]:
    """Send with a real JMS producer; returns the JMSMessageIDs the broker acknowledged."""
    with jms_connection(activemq) as connection, connection.producer() as producer:
        return [producer.send(m) for m in messages]


@contextlib.contextmanager
def taking(activemq: JmsBroker, name: str) -> Iterator[BatchConsumer]:
    """A transacted consumer of a queue: what it received is committed (taken off) when the block ends."""
    with jms_connection(activemq) as connection:
        consumer = connection.consumer(JmsSource(queue=name))
        try:
            yield consumer
            consumer.commit()
        finally:
            consumer.close()


def received_from(activemq: JmsBroker, name: str, count: int, timeout: float = 120) -> list[JmsMessage]:
    """`count` messages from a queue, committed (taken off the queue)."""
    with taking(activemq, name) as consumer:
        return receive(consumer, count, timeout)


def queued(activemq: JmsBroker, name: str, quiet: float = 1.0) -> list[JmsMessage]:
    """Every message left on a queue, taken off it (committed): batches until none came for `quiet` s."""
    messages: list[JmsMessage] = []
    with taking(activemq, name) as consumer:
        while batch := consumer.receive_batch(1000, int(quiet * 1000)):
            messages.extend(batch)
    return messages


@dataclass(frozen=True)
class Received:
    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]

    def header(self, name: str) -> bytes | None:
        return dict(self.headers).get(name)

    def to_record(self) -> KafkaRecord:
        return KafkaRecord(self.value, list(self.headers), self.key)


def read_topics(
    kafka: KafkaBroker,
    topics: Iterable[str],
    count: int,
    timeout: float = 120,
    settle: float = 0.0,
    done: Callable[[list[Received]], bool] | None = None,
    partition: int = 0,
) -> list[Received]:
    """Every record of `topics` (their `partition`) once `count` arrived, or once `done(records)` holds
    when given (then `settle` seconds more, to catch extras)."""
    finished = done or (lambda received: len(received) >= count)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "enable.auto.commit": "false",
            "isolation.level": "read_committed",
        }
    )
    names = list(topics)
    consumer.assign([TopicPartition(t, partition, 0) for t in names])
    received: list[Received] = []
    deadline = time.monotonic() + timeout
    settled_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if finished(received):
                settled_at = settled_at or now + settle
                if now >= settled_at:
                    return received
            elif now > deadline:
                raise AssertionError(
                    f"{len(received)} records (expected {count}) arrived in {names} within {timeout}s"
                )
            for message in consumer.consume(num_messages=10_000, timeout=0.5):
                if message.error() is None:
                    headers = cast(list[tuple[str, bytes]], message.headers() or [])  # as the job writes
                    received.append(Received(message.topic() or "", message.key(), message.value(), headers))
    finally:
        consumer.close()
