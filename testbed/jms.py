"""Building specs and draining consumers, for the JMS adapter tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import jpype

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec, JndiSpec
from bridge_job.jms import BatchConsumer, start_jvm
from bridge_job.jms.factories import connection_factory
from bridge_job.message import JmsMessage
from testbed.brokers import activemq_classpath

ACTIVEMQ_FACTORY = "org.apache.activemq.ActiveMQConnectionFactory"
ACTIVEMQ_JNDI = "org.apache.activemq.jndi.ActiveMQInitialContextFactory"


def factory_spec(url: str, **properties: Any) -> JmsSpec:
    """ActiveMQ's connection factory (the source listed is a placeholder: a JmsSpec needs one)."""
    return JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name=ACTIVEMQ_FACTORY, properties={"brokerURL": url, **properties}
        ),
        sources=[JmsSource(queue="unused")],
    )


def jndi_spec(url: str, name: str = "ConnectionFactory") -> JmsSpec:
    return JmsSpec(
        jndi=JndiSpec(initial_context_factory=ACTIVEMQ_JNDI, provider_url=url, connection_factory_name=name),
        sources=[JmsSource(queue="unused")],
    )


def receive(consumer: BatchConsumer, count: int, timeout: float = 20.0) -> list[JmsMessage]:
    """Exactly `count` messages (batches until then), without committing; fails after `timeout`."""
    received: list[JmsMessage] = []
    deadline = time.monotonic() + timeout
    while len(received) < count:
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        assert remaining_ms > 0, f"received {len(received)} of {count} messages within {timeout}s"
        received.extend(consumer.receive_batch(count - len(received), min(remaining_ms, 1000)))
    return received


def java_string(text: str) -> Any:
    """A Java String with exactly these UTF-16 code units, lone surrogates included (JPype's own
    conversion refuses them, as UTF-8 has no form for them)."""
    units = text.encode("utf-16-be", "surrogatepass")
    chars = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    return jpype.JClass("java.lang.String")(jpype.JArray(jpype.JChar)(chars))


def send_built(url: str, queue: str, builders: Iterable[Callable[[Any], Any]]) -> list[str]:
    """Send messages that the adapter's writer cannot make (poison, other interfaces): each builder gets
    a raw `javax.jms.Session` and returns the message. Returns the JMSMessageIDs."""
    start_jvm(activemq_classpath())
    raw = connection_factory(factory_spec(url)).createConnection()
    try:
        session = raw.createSession(False, 1)
        producer = session.createProducer(session.createQueue(queue))
        ids = []
        for build in builders:
            message = build(session)
            producer.send(message)
            ids.append(str(message.getJMSMessageID()))
        return ids
    finally:
        raw.close()
