"""The driver's Kafka probe (kafka/probe.py) on Apache Kafka: connected, blackholed (the broker frozen,
so requests time out), back. What it tells is what `KafkaConnected` shows (tests/operator)."""

from __future__ import annotations

from bridge_job.kafka.probe import KafkaProbe
from testbed.brokers import KafkaBroker, wait_until
from testbed.builders import bridge


class Told:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def failing(self, what: str, error: object) -> None:
        self.said.append(("failing", str(error)))

    def back(self, what: str) -> None:
        self.said.append(("back", what))

    def last(self) -> str | None:
        return self.said[-1][0] if self.said else None


def test_the_probe_says_when_kafka_stops_answering_and_when_it_is_back(own_kafka: KafkaBroker) -> None:
    own_kafka.create_topics("probed")
    told = Told()
    probe = KafkaProbe(bridge(bootstrap=own_kafka.bootstrap).spec.kafka, "probed", told, interval=1.0)
    try:
        wait_until(lambda: told.last() == "back", 30, "the probe to find Kafka")
        assert told.said[0] == ("back", f"Kafka at {own_kafka.bootstrap}")
        own_kafka.freeze()
        wait_until(lambda: told.last() == "failing", 60, "the probe to miss Kafka")
        assert "KafkaError" not in told.said[-1][1]  # librdkafka's words, not the wrapping
        own_kafka.thaw()
        wait_until(lambda: told.last() == "back", 60, "the probe to find Kafka again")
    finally:
        own_kafka.thaw()
        probe.stop()
