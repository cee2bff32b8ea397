"""Kafka -> JMS end to end: confluent-kafka producers, Apache Kafka, the job with real Spark, ActiveMQ.

Each test runs `jmsbridge job` as a process on YAML written like a user's, and checks what a real JMS
consumer (the ActiveMQ client through JPype) receives: destination, headers, typed properties, body type
and bytes, the Kafka coordinates; and, with routes both ways on one bridge, that nothing loops.
"""

from __future__ import annotations

import dataclasses
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from bridge_job.formats import native
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    JmsMessage,
    Property,
    PropertyType,
)
from bridge_job.routing.failures import DEAD_LETTER_PREFIX
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker, free_port, wait_until
from testbed.harness import (
    bridge_document,
    read_topics,
    received_from,
    route_document,
    send,
    to_jms_route,
    write_yaml,
)
from tests.support.entries import EVERY_ENTRY, EVERY_ITEM, same_entries
from tests.support.providers import JmsProvider

pytestmark = pytest.mark.e2e


@pytest.fixture
def n() -> Iterator[str]:
    yield uuid.uuid4().hex[:8]


def queue(name: str) -> Destination:
    return Destination(DestinationKind.QUEUE, name)


def produce(
    kafka: KafkaBroker, topic: str, records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]
) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for key, value, headers in records:
        producer.produce(topic, value, key, headers=headers)  # type: ignore[arg-type]
    assert producer.flush(30) == 0


def metric(port: int, name: str, labels: dict[str, str]) -> float:
    """A sample of the job's Prometheus endpoint, scraped over HTTP (0 when absent or not served yet)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except urllib.error.URLError:  # the job is not serving yet
        return 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def test_records_arrive_with_typed_headers_and_kafka_coordinates(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, n: str
) -> None:
    topic, target, bridge = f"in-{n}", f"out.{n}", f"ingress-{n}"
    kafka.create_topics(topic)
    original = JmsMessage(
        destination=queue(f"elsewhere.{n}"),
        body="grüße",
        message_id="ID:original-1",
        correlation_id="corr-1",
        reply_to=queue(f"replies.{n}"),
        type="order",
        priority=7,
        delivery_mode=DeliveryMode.PERSISTENT,
        properties={
            "count": Property(PropertyType.INT, 3),
            "small": Property(PropertyType.BYTE, -2),
            "ratio": Property(PropertyType.FLOAT, 0.5),
            "express": Property(PropertyType.BOOLEAN, True),
            "region": Property.string("emea"),
        },
    )
    native_record = native.encode(original)
    produce(
        kafka,
        topic,
        [
            (b"customer-1", native_record.value, native_record.headers),
            (b"customer-2", b"plain text", [("traceparent", b"00-abc")]),
            (None, b"\xff\x00binary", []),
        ],
    )
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, activemq, kafka, [{"queue": f"unused.{n}"}]),
            to_jms_route("to-jms", bridge, topic, {"queue": target}),
        )
    ]
    job = BridgeJob(files, tmp_path).start()
    try:
        typed, text, binary = received_from(activemq, target, 3)
    finally:
        job.stop()

    assert typed.destination == queue(target)
    assert typed.body_type is BodyType.TEXT and typed.body == "grüße"
    assert (typed.correlation_id, typed.type, typed.priority) == ("corr-1", "order", 7)
    assert typed.reply_to == queue(f"replies.{n}")
    for name, prop in original.properties.items():
        assert typed.properties[name] == prop, name
    assert typed.properties["KafkaTopic"] == Property.string(topic)
    assert typed.properties["KafkaPartition"].value == 0
    assert typed.properties["KafkaOffset"].value == 0
    assert typed.properties["KafkaKey"] == Property.string("customer-1")
    assert typed.properties["JmsBridgeOrigin"] == Property.string(bridge)
    assert typed.properties["_AMQ_DUPL_ID"] == Property.string(f"{bridge}:{topic}:0:0")
    assert isinstance(typed.properties["KafkaTimestamp"].value, int)

    assert text.body_type is BodyType.TEXT and text.body == "plain text"
    assert text.properties["KafkaOffset"].value == 1 and text.properties["KafkaKey"].value == "customer-2"
    assert "traceparent" not in text.properties  # only jms.* headers are carried (docs/ingress.md)
    assert binary.body_type is BodyType.BYTES and binary.body == b"\xff\x00binary"
    assert "KafkaKey" not in binary.properties


def test_a_pair_of_routes_both_ways_does_not_loop(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, n: str
) -> None:
    """orders.in -> orders (egress) and orders -> orders.in (ingress) on one bridge: a JMS message goes
    to Kafka once, a Kafka record goes to JMS once, and neither comes back."""
    orders_in, orders, bridge = f"orders.{n}.in", f"orders-{n}", f"pair-{n}"
    kafka.create_topics(orders)
    port = free_port()
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, activemq, kafka, [{"queue": orders_in}]),
            route_document("out", bridge, orders, match={"address": orders_in}),
            to_jms_route("back", bridge, orders, {"queue": orders_in}),
        )
    ]
    job = BridgeJob(files, tmp_path, metrics_port=port).start()
    try:
        send(activemq, [JmsMessage(destination=queue(orders_in), body="from jms")])
        produce(kafka, orders, [(b"k", b"from kafka", [])])

        def loops() -> tuple[float, float]:
            egress = metric(port, "jmsbridge_routed_messages_total", {"bridge": bridge, "outcome": "loop"})
            ingress = metric(port, "jmsbridge_ingress_records_total", {"bridge": bridge, "outcome": "loop"})
            return egress, ingress

        wait_until(lambda: loops() == (1.0, 1.0), 120, "one loop stopped in each direction")
        records = read_topics(kafka, [orders], 2)
    finally:
        job.stop()
    assert sorted(r.value or b"" for r in records) == [b"from jms", b"from kafka"]


def test_round_trip_keeps_every_header_and_property(
    provider: JmsProvider, kafka: KafkaBroker, tmp_path: Path, n: str
) -> None:
    """JMS -> Kafka -> JMS through two routes of one bridge: the message arrives as it was sent, on each
    provider (with Artemis, through its javax and its Jakarta client)."""
    broker = provider.broker
    source, topic, target, bridge = f"rt.{n}.in", f"rt-{n}", f"rt.{n}.out", f"rt-{n}"
    kafka.create_topics(topic)
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, broker, kafka, [{"queue": source}], jms=provider.jms()),
            route_document("out", bridge, topic, match={"address": source}),
            to_jms_route("back", bridge, topic, {"queue": target}),
        )
    ]
    sent = JmsMessage(
        destination=queue(source),
        body=b"\x00\x01bytes",
        body_type=BodyType.BYTES,
        correlation_id="c-7",
        reply_to=Destination(DestinationKind.TOPIC, f"rt.{n}.replies"),
        type="t",
        priority=2,
        delivery_mode=DeliveryMode.NON_PERSISTENT,
        properties={
            "l": Property(PropertyType.LONG, 2**40),
            "s": Property(PropertyType.SHORT, -7),
            "d": Property(PropertyType.DOUBLE, 1e-300),
            "b": Property(PropertyType.BOOLEAN, False),
            "text": Property.string("ü"),
        },
    )
    # A MapMessage and a StreamMessage with an entry of every JMS type (nested bytes, null, char...).
    structured = [
        dataclasses.replace(sent, body=None, body_type=BodyType.MAP, entries=EVERY_ENTRY, correlation_id="m"),
        dataclasses.replace(
            sent, body=None, body_type=BodyType.STREAM, entries=EVERY_ITEM, correlation_id="s"
        ),
    ]
    job = BridgeJob(files, tmp_path, env=provider.job_env()).start()
    try:
        send(broker, [sent, *structured])
        arrived = {m.correlation_id: m for m in received_from(broker, target, 3)}
    finally:
        job.stop()
    connected = [line for line in job.log().splitlines() if "jms.connection: connected to" in line]
    assert connected and all(broker.url in c and c.endswith(f"({provider.api})") for c in connected)
    for original in (sent, *structured):
        back = arrived[original.correlation_id]
        assert back.destination == queue(target)
        for field in ("body_type", "body", "reply_to", "type", "priority", "delivery_mode"):
            assert getattr(back, field) == getattr(original, field), field
        assert same_entries(back.entries, original.entries), back.entries
        for name, prop in sent.properties.items():
            assert back.properties[name] == prop, name
        assert back.properties["KafkaTopic"] == Property.string(topic)


def test_bad_records_follow_the_policy(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, n: str
) -> None:
    """A record that cannot be converted is dead-lettered with its reason; the good ones behind it go."""
    topic, target, dlq, bridge = f"bad-{n}", f"bad.{n}.out", f"dlq-{n}", f"bad-{n}"
    kafka.create_topics(topic, dlq)
    produce(
        kafka,
        topic,
        [
            (None, b"1", []),
            (None, b"2", [("jmsbridge.types", b"count=notatype"), ("jms.count", b"1")]),
            (None, b"3", [("jms.JMSReplyTo", b"nowhere")]),
            (None, b"4", []),
        ],
    )
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(
                bridge,
                activemq,
                kafka,
                [{"queue": f"unused.{n}"}],
                routing={"deadLetterTopic": dlq, "onSoftFailure": "deadLetter"},
            ),
            to_jms_route("to-jms", bridge, topic, {"queue": target}),
        )
    ]
    job = BridgeJob(files, tmp_path).start()
    try:
        good = received_from(activemq, target, 2)
        letters = read_topics(kafka, [dlq], 2)
    finally:
        job.stop()
    assert [m.body for m in good] == ["1", "4"]
    assert sorted(r.value or b"" for r in letters) == [b"2", b"3"]
    for letter in letters:
        assert letter.header(DEAD_LETTER_PREFIX + "reason") == b"ConversionFailed"
        assert letter.header(DEAD_LETTER_PREFIX + "source") == f"{topic}/0".encode()
        assert letter.header(DEAD_LETTER_PREFIX + "route") == b"to-jms"


def test_a_route_added_while_running_starts_the_ingress(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, n: str
) -> None:
    """A bridge without kafkaToJms routes runs no ingress query; the first such route starts one."""
    topic, target, bridge = f"late-{n}", f"late.{n}.out", f"late-{n}"
    kafka.create_topics(topic)
    document = bridge_document(bridge, activemq, kafka, [{"queue": f"unused.{n}"}])
    files = [write_yaml(tmp_path / "bridge.yaml", document)]
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        assert "kafkaToJms" not in job.log().split("running:")[-1].split("\n")[0].replace("0 kafkaToJms", "")
        produce(kafka, topic, [(None, b"written before the route", [])])
        route = to_jms_route("late", bridge, topic, {"queue": target})
        write_yaml(tmp_path / "bridge.yaml", document, route)
        (message,) = received_from(activemq, target, 1)
    finally:
        job.stop()  # SIGTERM to the process group: the driver and Spark's JVM get it
    assert message.body == "written before the route"
    assert job.process is not None and job.process.returncode == 0, job.log()[-3000:]
    assert "jmsbridge stopped:" not in job.log()  # a stop asked for is no hard failure
    assert "OutOfMemoryError" not in job.log()  # nor is it told as a crash


def test_a_topic_pattern_reads_every_matching_topic_and_new_ones(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, n: str
) -> None:
    target, bridge = f"events.{n}.out", f"events-{n}"
    kafka.create_topics(f"ev-{n}.a", f"ev-{n}.b", f"ev-{n}.a.deep")
    for topic in (f"ev-{n}.a", f"ev-{n}.b", f"ev-{n}.a.deep"):
        produce(kafka, topic, [(None, topic.encode(), [])])
    route = to_jms_route("events", bridge, f"ev-{n}.*", {"queue": target})
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, activemq, kafka, [{"queue": f"unused.{n}"}]),
            route,
        )
    ]
    job = BridgeJob(files, tmp_path).start()
    try:
        first = received_from(activemq, target, 2)
        kafka.create_topics(f"ev-{n}.c")  # found at a later batch, read from its start
        produce(kafka, f"ev-{n}.c", [(None, b"late topic", [])])
        (late,) = received_from(activemq, target, 1)
    finally:
        job.stop()
    assert sorted(str(m.body) for m in first) == [f"ev-{n}.a", f"ev-{n}.b"]  # not ev-N.a.deep: one segment
    assert late.body == "late topic" and late.properties["KafkaTopic"] == Property.string(f"ev-{n}.c")
