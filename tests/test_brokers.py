"""The broker fixtures start real brokers that answer on their ports."""

from __future__ import annotations

from tests.brokers import ActiveMqBroker, KafkaBroker, NatsServer, port_open


def test_kafka_broker_creates_topics(kafka: KafkaBroker) -> None:
    from confluent_kafka.admin import AdminClient

    kafka.create_topics("fixture-check")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    assert "fixture-check" in admin.list_topics(timeout=10).topics


def test_activemq_listens(activemq: ActiveMqBroker) -> None:
    assert port_open(activemq.port)


def test_nats_listens(nats: NatsServer) -> None:
    assert port_open(nats.port)
