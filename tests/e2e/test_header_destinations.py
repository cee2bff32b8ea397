"""Security issue 43 as an attacker tries it: whoever may produce to a `fromHeader` route's topic names the
JMS destination, and the route's `allowed` is all that stands between that record and the broker's other
queues. Real Kafka, the job with real Spark, a real ActiveMQ."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from bridge_job.routing.failures import DEAD_LETTER_PREFIX
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker
from testbed.harness import (
    bridge_document,
    queued,
    read_topics,
    received_from,
    to_jms_route,
    write_yaml,
)

pytestmark = pytest.mark.e2e

ALLOWED = r"queue://orders\..*"


def test_a_record_cannot_send_outside_the_routes_allowed_destinations(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    topic, dlq, bridge, orders = f"commands-{n}", f"dlq-{n}", f"hdr-{n}", f"orders.{n}.created"
    composite = f"orders.{n}.x,admin.commands"  # ActiveMQ would send to both: refused before the pattern
    kafka.create_topics(topic, dlq)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})  # the attacker: may write to the topic
    for value, destination in [
        (b"attack", "queue://admin.commands"),
        (b"composite", f"queue://{composite}"),
        (b"order", f"queue://{orders}"),
    ]:
        producer.produce(topic, value, headers=[("target", destination.encode())])
    assert producer.flush(30) == 0
    route = to_jms_route("commands", bridge, topic, {"fromHeader": "target", "allowed": ALLOWED})
    document = bridge_document(
        bridge,
        activemq,
        kafka,
        [{"queue": f"unused.{n}"}],
        routing={"deadLetterTopic": dlq, "onSoftFailure": "deadLetter"},
    )
    job = BridgeJob([write_yaml(tmp_path / "bridge.yaml", document, route)], tmp_path).start()
    try:
        (order,) = received_from(activemq, orders, 1)  # the last record: the two before it are done
        leaked = queued(activemq, "admin.commands") + queued(activemq, f"orders.{n}.x")
        assert leaked == []
        letters = read_topics(kafka, [dlq], 2)
    finally:
        job.stop()

    assert order.body == "order"
    attack, refused = sorted(letters, key=lambda letter: letter.value or b"")
    assert (attack.value, refused.value) == (b"attack", b"composite")
    for letter in letters:
        assert letter.header(DEAD_LETTER_PREFIX + "reason") == b"DestinationNotAllowed"
        assert letter.header(DEAD_LETTER_PREFIX + "route") == b"commands"
        assert letter.header(DEAD_LETTER_PREFIX + "source") == f"{topic}/0".encode()
    error = (attack.header(DEAD_LETTER_PREFIX + "error") or b"").decode()
    said = "header target: destination 'queue://admin.commands' is outside the route's jmsDestination.allowed"
    assert error == f"{said}: {ALLOWED}"
    assert "is not one destination name" in (refused.header(DEAD_LETTER_PREFIX + "error") or b"").decode()
