"""Messages that producers of other protocols put on a JMS queue carry property names JMS does not allow
(STOMP headers such as `x-trace-id`). What the bridge does with them, with a real STOMP producer on real
ActiveMQ: JMS -> Kafka carries them as they are (`jms.x-trace-id`); Kafka -> JMS refuses such a record
as `ConversionFailed`, naming the property (Artemis' client refuses such names itself, AMQ139012), so the
route's policy decides instead of a provider's exception. docs/formats.md and docs/ingress.md say so."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest

from bridge_job.config import Direction, JmsBridge, JmsBridgeRoute, job_config
from bridge_job.formats.journal import Epoch
from bridge_job.ingest.journalling import Ingest
from bridge_job.ingress.converting import IngressRecord, KafkaSource, to_jms
from bridge_job.jms import start_jvm
from bridge_job.journal.topic import ensure_journal_topic
from bridge_job.routing.failures import SoftFailure
from testbed.brokers import ActiveMqBroker, KafkaBroker, activemq_classpath
from testbed.harness import bridge_document, read_topics, to_jms_route


@pytest.fixture(scope="module")
def stomp_activemq() -> Iterator[ActiveMqBroker]:
    broker = ActiveMqBroker(persistent=False, stomp=True).start()
    yield broker
    broker.cleanup()


def stomp_send(port: int, queue: str, body: str, headers: dict[str, str]) -> None:
    """One SEND as a STOMP 1.2 client writes it (a receipt, so that the broker has it when this returns)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
        assert sock.recv(4096).startswith(b"CONNECTED")
        lines = [f"destination:/queue/{queue}", "receipt:r1", *(f"{k}:{v}" for k, v in headers.items())]
        sock.sendall(("SEND\n" + "\n".join(lines) + "\n\n" + body).encode() + b"\x00")
        assert b"RECEIPT" in sock.recv(4096)


def test_a_stomp_header_goes_to_kafka_as_it_is_and_back_to_jms_is_refused_by_name(
    stomp_activemq: ActiveMqBroker, kafka: KafkaBroker
) -> None:
    start_jvm(activemq_classpath())
    n = uuid.uuid4().hex[:8]
    queue, topic, bridge = f"stomp.{n}", f"stomp-{n}", f"stomp-{n}"
    kafka.create_topics(topic)
    document = bridge_document(bridge, stomp_activemq, kafka, [{"queue": queue}])
    back = to_jms_route("back", bridge, topic, {"queue": f"{queue}.back"})
    config = job_config(JmsBridge.model_validate(document), [JmsBridgeRoute.model_validate(back)])
    assert stomp_activemq.stomp_port is not None
    stomp_send(stomp_activemq.stomp_port, queue, "from stomp", {"x-trace-id": "t-1", "region": "emea"})

    ingest = Ingest(config, ensure_journal_topic(config), lambda batch: None)
    ingest.start(Epoch("test/pod", "test"))
    try:
        journal = read_topics(kafka, [config.journal_topic], 2, settle=0.5)  # the epoch marker, then it
    finally:
        ingest.stop()
    record = journal[-1]
    assert record.value == b"from stomp"
    assert record.header("jms.x-trace-id") == b"t-1" and record.header("jms.region") == b"emea"

    (route,) = config.routes_for(Direction.KAFKA_TO_JMS)  # what the ingress does with the same record
    with pytest.raises(SoftFailure) as refused:
        to_jms(IngressRecord(record.to_record(), KafkaSource(topic, 0, 0, 0)), route, config, b"k" * 32, 0)
    assert refused.value.reason.value == "ConversionFailed"
    assert refused.value.error == "property 'x-trace-id': not a legal JMS property name"
