"""Request/reply across the bridge, on real brokers: JMS requesters with temporary queues, a Kafka service.

The requesters use the ActiveMQ client's own javax.jms API (through JPype, as any JMS application
would): each has its connection and its TemporaryQueue, sets JMSReplyTo and JMSCorrelationID. The
service is a confluent-kafka consumer and producer that answers each request record with a reply record
carrying the request's `jms.JMSReplyTo` and `jms.JMSCorrelationID` headers, as docs/ingress.md says.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import jpype
import pytest
from confluent_kafka import Consumer, Producer

from bridge_job.jms import start_jvm
from jmsbridge.local import BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker, activemq_classpath
from tests.job.harness import bridge_document, route_document, write_yaml

pytestmark = pytest.mark.e2e

REPLY_HEADERS = ("jms.JMSReplyTo", "jms.JMSCorrelationID")


@contextmanager
def kafka_service(kafka: KafkaBroker, requests: str, replies: str) -> Iterator[None]:
    """Answers every request record with `re: <value>` on `replies`, until the block ends."""
    stop = threading.Event()

    def serve() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": kafka.bootstrap,
                "group.id": f"svc-{uuid.uuid4().hex}",
                "auto.offset.reset": "earliest",
            }
        )
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        consumer.subscribe([requests])
        try:
            while not stop.is_set():
                for request in consumer.consume(100, timeout=0.2):
                    if request.error() is not None:
                        continue
                    pairs = cast(list[tuple[str, bytes]], request.headers() or [])
                    headers: list[tuple[str, str | bytes | None]] = [
                        (k, v) for k, v in pairs if k in REPLY_HEADERS
                    ]
                    producer.produce(replies, b"re: " + (request.value() or b""), headers=headers)
                producer.flush(10)
        finally:
            consumer.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


class Requester:
    """A JMS application with its own connection and TemporaryQueue for replies."""

    def __init__(self, activemq: ActiveMqBroker, queue: str) -> None:
        start_jvm(activemq_classpath())
        factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(activemq.url)
        self.connection: Any = factory.createConnection()
        self.connection.start()
        session_class = jpype.JClass("javax.jms.Session")
        self.session: Any = self.connection.createSession(False, session_class.AUTO_ACKNOWLEDGE)
        self.replies = self.session.createTemporaryQueue()
        self.consumer = self.session.createConsumer(self.replies)
        self.producer = self.session.createProducer(self.session.createQueue(queue))

    def request(self, text: str, correlation_id: str) -> None:
        message = self.session.createTextMessage(text)
        message.setJMSReplyTo(self.replies)
        message.setJMSCorrelationID(correlation_id)
        self.producer.send(message)

    def reply(self, timeout_ms: int = 120_000) -> tuple[str, str]:
        message = self.consumer.receive(timeout_ms)
        assert message is not None, f"no reply on {self.replies} within {timeout_ms} ms"
        return str(message.getJMSCorrelationID()), str(message.getText())

    def close(self) -> None:
        self.connection.close()


def test_jms_requesters_get_their_replies_from_a_kafka_service(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    requests_queue, requests, replies, bridge = (
        f"svc.{n}.in",
        f"svc-{n}-requests",
        f"svc-{n}-replies",
        f"rr-{n}",
    )
    kafka.create_topics(requests, replies)
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, activemq, kafka, [{"queue": requests_queue}]),
            route_document("requests", bridge, requests, match={"address": requests_queue}),
            route_document(
                "replies",
                bridge,
                replies,
                direction="kafkaToJms",
                jmsDestination={"fromHeader": "jms.JMSReplyTo"},
                startingOffsets="earliest",
            ),
        )
    ]
    requesters = [Requester(activemq, requests_queue) for _ in range(3)]
    job = BridgeJob(files, tmp_path).start()
    try:
        with kafka_service(kafka, requests, replies):
            for number, requester in enumerate(requesters):
                for i in range(4):
                    requester.request(f"q{number}.{i}", f"r{number}-{i}")
            answers = [sorted(r.reply() for _ in range(4)) for r in requesters]
    finally:
        job.stop()
        for requester in requesters:
            requester.close()
    for number, got in enumerate(answers):
        assert got == [(f"r{number}-{i}", f"re: q{number}.{i}") for i in range(4)]
