"""The job's health report on its brokers as status conditions (pure)."""

from __future__ import annotations

import json

from jmsbridge_operator.job_health import (
    ConnectionReport,
    StopReport,
    connection_conditions,
    connection_reports,
    stop_reports,
)


def data(section: str = "jms", **instances: dict[str, object]) -> dict[str, str]:
    updated = "2026-11-22T10:00:05Z"
    return {name: json.dumps({section: report, "updated": updated}) for name, report in instances.items()}


RECONNECTING = {
    "state": "Reconnecting",
    "since": "2026-11-22T10:00:00Z",
    "error": "JMS source orders: the connection to tcp://mq:61616 failed: Connection reset",
    "patienceSeconds": 300,
}


def test_reconnecting_says_since_when_why_and_until_when() -> None:
    reports = connection_reports(data(primary=RECONNECTING, secondary={"state": "Connected"}))
    (condition,) = connection_conditions(reports, running={"primary"})
    assert (condition.type, condition.status, condition.reason) == ("JmsConnected", "False", "Reconnecting")
    assert condition.message == (
        "instance primary lost its JMS broker at 2026-11-22T10:00:00Z and is reconnecting (it stops after "
        "spec.outages.patienceSeconds=300): JMS source orders: the connection to tcp://mq:61616 failed: "
        "Connection reset; check the JMS broker and the network between them"
    )


def test_kafka_gets_a_condition_of_its_own_beside_jms() -> None:
    error = "Kafka at kafka:9092 while journalling orders: Local: Broker transport failure"
    kafka = RECONNECTING | {"error": error}
    document = {"jms": {"state": "Connected"}, "kafka": kafka}
    reports = connection_reports({"primary": json.dumps(document)})
    conditions = {c.type: c for c in connection_conditions(reports, running={"primary"})}
    assert (conditions["JmsConnected"].status, conditions["KafkaConnected"].status) == ("True", "False")
    assert conditions["KafkaConnected"].message.startswith(
        "instance primary lost its Kafka cluster at 2026-11-22T10:00:00Z and is reconnecting"
    )
    assert "Broker transport failure" in conditions["KafkaConnected"].message


def test_nats_gets_a_condition_of_its_own_once_reported() -> None:
    nats = RECONNECTING | {"error": "NATS nats://nats:4222: disconnected; nats-py is reconnecting"}
    document = {"jms": {"state": "Connected"}, "kafka": {"state": "Connected"}, "nats": nats}
    reports = connection_reports({"primary": json.dumps(document)})
    conditions = {c.type: c for c in connection_conditions(reports, running={"primary"})}
    assert (conditions["NatsConnected"].status, conditions["NatsConnected"].reason) == (
        "False",
        "Reconnecting",
    )
    assert conditions["NatsConnected"].message.startswith(
        "instance primary lost its NATS servers at 2026-11-22T10:00:00Z and is reconnecting"
    )
    without = connection_reports({"primary": json.dumps({"jms": {"state": "Connected"}})})
    assert "NatsConnected" not in {c.type for c in connection_conditions(without, running={"primary"})}


def test_only_running_instances_count() -> None:
    reports = connection_reports(data(primary=RECONNECTING, secondary={"state": "Connected", "since": "x"}))
    (connected,) = connection_conditions(reports, running={"secondary"})
    assert (connected.status, connected.reason) == ("True", "Connected")
    assert connection_conditions(reports, running=set()) == []


def test_no_report_no_condition_and_unreadable_entries_are_ignored() -> None:
    assert connection_conditions(connection_reports(None), running={"primary"}) == []
    assert connection_reports({"primary": "not json", "secondary": json.dumps({"other": 1})}) == []
    expected = [ConnectionReport("primary", "Connected")]
    assert connection_reports(data(primary={"state": "Connected"})) == expected


def test_a_stop_report_is_read_and_a_connection_state_is_none() -> None:
    stopped = {"stopped": {"reason": "CheckpointMismatch", "message": "bridge b: checkpoint mismatch"}}
    reports = stop_reports({"primary": json.dumps(stopped), **data(secondary={"state": "Connected"})})
    assert reports == [StopReport("primary", "CheckpointMismatch", "bridge b: checkpoint mismatch")]
    assert connection_reports({"primary": json.dumps(stopped)}) == []


def test_the_schema_registry_gets_a_condition_of_its_own_once_reported() -> None:
    error = "the schema registry at http://registry:8080/apis/ccompat/v7: Connection refused"
    document = {"jms": {"state": "Connected"}, "schemaRegistry": RECONNECTING | {"error": error}}
    reports = connection_reports({"primary": json.dumps(document)})
    conditions = {c.type: c for c in connection_conditions(reports, running={"primary"})}
    registry = conditions["SchemaRegistryConnected"]
    assert (registry.status, registry.reason) == ("False", "Reconnecting")
    assert registry.message.startswith(
        "instance primary lost its schema registry at 2026-11-22T10:00:00Z and is reconnecting"
    )
    assert "Connection refused" in registry.message
