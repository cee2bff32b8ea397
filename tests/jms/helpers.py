"""Building specs and draining consumers, for the JMS adapter tests."""

from __future__ import annotations

import time
from typing import Any

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec, JndiSpec
from bridge_job.jms import BatchConsumer
from bridge_job.message import JmsMessage

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
