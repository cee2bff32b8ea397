"""Waiting out a Kafka that does not answer (kafka/waiting.py), with a clock the test moves.

The calls are stand-ins that raise what confluent-kafka raises (KafkaException around a KafkaError), so
that each path is taken deterministically; the job-level behaviour (Kafka down at start, Kafka down 30 s
while running) is tested on real brokers in tests/kafka/test_startup.py and tests/e2e/test_faults.py.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from bridge_job.faults.stops import BridgeStopped
from bridge_job.kafka.waiting import patiently
from testbed.builders import bridge

KAFKA = bridge().spec.kafka
PATIENCE = 60


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def failing(times: int, code: int = KafkaError._TRANSPORT) -> tuple[list[float], object]:
    timeouts: list[float] = []

    def call(timeout: float) -> str:
        timeouts.append(timeout)
        if len(timeouts) <= times:
            raise KafkaException(KafkaError(code, "Failed to get metadata: Local: Broker transport failure"))
        return "answer"

    return timeouts, call


def test_an_outage_shorter_than_the_patience_is_waited_out_with_growing_pauses() -> None:
    clock = Clock()
    timeouts, call = failing(4)
    assert patiently(call, KAFKA, PATIENCE, "planning", clock, clock.pause) == "answer"  # type: ignore[arg-type]
    assert clock.pauses == [0.5, 1.0, 2.0, 5.0]
    assert len(timeouts) == 5


def test_an_outage_past_the_patience_is_one_stop_line_naming_kafka_and_what_waited() -> None:
    clock = Clock()
    _, call = failing(1000)
    with pytest.raises(BridgeStopped) as stopped:
        patiently(call, KAFKA, PATIENCE, "planning the next batch", clock, clock.pause)  # type: ignore[arg-type]
    assert stopped.value.reason == (
        f"Kafka at {KAFKA.bootstrap_servers} while planning the next batch: unreachable for 60s, the "
        "patience of spec.outages.patienceSeconds=60: Failed to get metadata: Local: Broker transport "
        "failure; check bootstrapServers and that Kafka is up (a restart goes on from where the job "
        "stopped: nothing is lost), or raise the patience"
    )
    assert sum(clock.pauses) == pytest.approx(60.0)


def test_a_refusal_stops_at_once() -> None:
    clock = Clock()
    _, call = failing(1, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(BridgeStopped, match=f"Kafka at {KAFKA.bootstrap_servers} refused the bridge"):
        patiently(call, KAFKA, PATIENCE, "planning", clock, clock.pause)  # type: ignore[arg-type]
    assert clock.pauses == []
