"""The `avro` and `jsonSchema` formats end to end (issue 47): ActiveMQ, the job with real Spark, Apache
Kafka and a real Apicurio Registry behind the tests' fault proxy.

JMS messages of every type go out as records that confluent-kafka's own deserializers read with every
field equal to the connectors' record of the message, and a kafkaToJms route brings them back to JMS
equal to what was sent. Then the registry goes away mid-stream: the job says so (`jmsbridge_connected`
for the schemaRegistry), keeps bridging with the schemas it holds, and loses nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from bridge_job.formats import connect_jms
from bridge_job.message import (
    Destination,
    DestinationKind,
    JmsMessage,
)
from bridge_job.routing.loops import KAFKA_TOPIC_PROPERTY
from jmsbridge.local import BridgeJob
from jmsbridge.registry_server import ApicurioRegistry
from testbed.brokers import ActiveMqBroker, KafkaBroker, free_port
from testbed.harness import (
    bridge_document,
    eventually,
    read_topics,
    received_from,
    route_document,
    send,
    to_jms_route,
    write_yaml,
)
from tests.e2e.test_egress import sample
from tests.support.every_type import every_type
from tests.support.fault_proxy import FaultProxy
from tests.support.registered import confluent_client, confluent_deserializer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group("schema-registry"),
]  # the session's registry, on the worker that has it

FORMATS = ("avro", "jsonSchema")


@pytest.fixture
def proxy(apicurio: ApicurioRegistry) -> Iterator[FaultProxy]:
    proxy = FaultProxy("127.0.0.1", apicurio.port)
    yield proxy
    proxy.close()


def deserializer(fmt: str, client: SchemaRegistryClient) -> Any:
    return confluent_deserializer(fmt, client)


def same_message(got: JmsMessage, sent: JmsMessage) -> bool:
    """What the sender set, as the consumer of the queue the route sends to sees it."""
    own = {name: p for name, p in got.properties.items() if name in sent.properties}
    return (
        got.body_type is sent.body_type
        and got.body == sent.body
        and got.entries == sent.entries
        and own == sent.properties
        and got.type == sent.type
        and got.correlation_id == sent.correlation_id
        and got.priority == sent.priority
    )


def test_every_message_type_goes_out_readable_by_confluents_deserializers_and_comes_back(
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    apicurio: ApicurioRegistry,
    proxy: FaultProxy,
    tmp_path: Path,
) -> None:
    n = uuid.uuid4().hex[:8]
    bridge = f"registry-{n}"
    inbound = {fmt: Destination(DestinationKind.QUEUE, f"{fmt}.{n}.in") for fmt in FORMATS}
    topics = {fmt: f"{fmt}-{n}" for fmt in FORMATS}
    back = {fmt: f"{fmt}.{n}.back" for fmt in FORMATS}
    kafka.create_topics(*topics.values())
    registry_url = f"http://{proxy.address}/apis/ccompat/v7"
    document = bridge_document(
        bridge,
        activemq,
        kafka,
        [{"queue": q.name} for q in inbound.values()],
        outages={"patienceSeconds": 600},
    )
    document["spec"]["kafka"]["schemaRegistry"] = {"url": registry_url}
    routes = []
    for order, fmt in enumerate(FORMATS):
        routes.append(
            route_document(
                f"out-{fmt.lower()}",
                bridge,
                topics[fmt],
                order=order,
                match={"address": inbound[fmt].name},
                format=fmt,
            )
        )
        routes.append(
            to_jms_route(
                f"back-{fmt.lower()}",
                bridge,
                topics[fmt],
                {"queue": back[fmt]},
                order=2 * order + 1,
                format=fmt,
            )
        )
    files = [write_yaml(tmp_path / "bridge.yaml", document), write_yaml(tmp_path / "routes.yaml", *routes)]
    job = BridgeJob(files, tmp_path, metrics_port=free_port()).start()
    client = confluent_client(apicurio.url)
    try:
        job.wait_running()
        for fmt in FORMATS:
            subjects = {f"{topics[fmt]}-key", f"{topics[fmt]}-value"}
            assert subjects <= set(client.get_subjects()), "registered at start, before any message"
        first = {fmt: every_type(inbound[fmt], "one") for fmt in FORMATS}
        ids = {fmt: send(activemq, first[fmt]) for fmt in FORMATS}
        for fmt in FORMATS:
            records = read_topics(kafka, [topics[fmt]], 4)
            read = deserializer(fmt, client)
            for record, sent, message_id in zip(records, first[fmt], ids[fmt], strict=True):
                value = read(record.value, SerializationContext(topics[fmt], MessageField.VALUE))
                expected = connect_jms.value_document(sent, json=fmt == "jsonSchema")
                broker_set = ("messageID", "timestamp", "expiration", "deliveryMode", "redelivered")
                assert value["messageID"] == message_id
                assert {k: v for k, v in value.items() if k not in broker_set} == {
                    k: v for k, v in expected.items() if k not in broker_set
                }
                key = deserializer(fmt, client)(
                    record.key, SerializationContext(topics[fmt], MessageField.KEY)
                )
                assert key == {"messageID": message_id}
            returned = received_from(activemq, back[fmt], 4)
            for got, sent in zip(returned, first[fmt], strict=True):
                assert same_message(got, sent), (got, sent)
                assert got.properties[KAFKA_TOPIC_PROPERTY].value == topics[fmt]

        # The registry goes away: the job says so, and bridges on with the schemas it holds.
        proxy.refuse()
        eventually(
            lambda: (
                sample(
                    job.metrics_port, "jmsbridge_connected", {"bridge": bridge, "system": "schemaRegistry"}
                )
                == 0
            ),
            60,
            "jmsbridge_connected{system=schemaRegistry} 0 while the registry refuses",
        )
        second = {fmt: every_type(inbound[fmt], "two") for fmt in FORMATS}
        for fmt in FORMATS:
            send(activemq, second[fmt])
        proxy.heal()
        for fmt in FORMATS:
            records = read_topics(kafka, [topics[fmt]], 8)
            assert len(records) == 8, "nothing lost, nothing twice"
            returned = received_from(activemq, back[fmt], 4)
            for got, sent in zip(returned, second[fmt], strict=True):
                assert same_message(got, sent), (got, sent)
        eventually(
            lambda: (
                sample(
                    job.metrics_port, "jmsbridge_connected", {"bridge": bridge, "system": "schemaRegistry"}
                )
                == 1
            ),
            60,
            "jmsbridge_connected{system=schemaRegistry} back to 1",
        )
    finally:
        job.stop()


def test_a_schema_the_subject_refuses_stops_the_job_before_it_takes_a_message(
    activemq: ActiveMqBroker, kafka: KafkaBroker, apicurio: ApicurioRegistry, tmp_path: Path
) -> None:
    from confluent_kafka.schema_registry import Schema

    n = uuid.uuid4().hex[:8]
    bridge, topic, queue = f"refused-{n}", f"legacy-{n}", f"legacy.{n}.in"
    kafka.create_topics(topic)
    confluent_client(apicurio.url).register_schema(f"{topic}-value", Schema('"string"', "AVRO"))
    document = bridge_document(bridge, activemq, kafka, [{"queue": queue}])
    document["spec"]["kafka"]["schemaRegistry"] = {"url": apicurio.url}
    files = [
        write_yaml(tmp_path / "bridge.yaml", document),
        write_yaml(tmp_path / "routes.yaml", route_document("out", bridge, topic, format="avro")),
    ]
    send(activemq, [JmsMessage(Destination(DestinationKind.QUEUE, queue), body="kept")])
    job = BridgeJob(files, tmp_path).start()
    try:
        assert job.wait_exit(120) == 2
    finally:
        job.stop()
    (line,) = [line for line in job.log().splitlines() if "jmsbridge stopped:" in line]
    assert f"refused the bridge's AVRO schema under subject {topic}-value" in line
    assert "not compatible with the versions the subject holds" in line
    assert [m.body for m in received_from(activemq, queue, 1)] == ["kept"]  # still on its queue
