"""Kafka down when the job starts: the job waits `spec.outages.patienceSeconds`, then stops cleanly (exit 2,
one `jmsbridge stopped:` line), with librdkafka's complaints rate-limited; Kafka up within the window
lets it go on. Real noida-db and a real closed port; the job as a process (it stops before Spark starts)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge_job.kafka.clients import OncePerInterval
from bridge_job.kafka.startup import wait_for_kafka
from jmsbridge.local import BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker, free_port, port_open
from tests.support.builders import bridge
from tests.support.harness import bridge_document, write_yaml


@pytest.mark.slow
def test_kafka_down_at_start_stops_the_job_cleanly_after_the_patience(tmp_path: Path) -> None:
    # Neither broker is started: nothing listens on their ports (the job stops before it reaches JMS).
    closed, jms = KafkaBroker(port=free_port()), ActiveMqBroker(port=free_port())
    for broker in (closed, jms):
        broker.cleanup()  # its work directory: nothing else of it is needed
    document = bridge_document("startup", jms, closed, [{"queue": "startup.in"}])
    document["spec"]["outages"] = {"patienceSeconds": 6}
    job = BridgeJob([write_yaml(tmp_path / "bridge.yaml", document)], tmp_path).start()

    assert job.wait_exit(timeout=120) == 2
    log = job.log()
    assert "Traceback" not in log
    stopped = [line for line in log.splitlines() if "jmsbridge stopped:" in line]
    assert len(stopped) == 1
    said = stopped[0].partition(f"jmsbridge stopped: Kafka at {closed.bootstrap} while starting: ")[2]
    assert said.startswith(("unreachable for 6s,", "unreachable for 7s,")), stopped[0]  # when it next asked
    assert said.endswith(
        "the patience of spec.outages.patienceSeconds=6: Failed to get metadata: Local: Broker transport "
        "failure; check bootstrapServers and that Kafka is up (a restart goes on from where the job stopped: "
        "nothing is lost), or raise the patience"
    )
    assert "asking again" in log  # it waited, with retries, before giving up
    # librdkafka tries to connect tens of times a second: one line per cause gets through per minute.
    librdkafka = [line for line in log.splitlines() if " jmsbridge.kafka: " in line]
    assert 1 <= len(librdkafka) <= 6, "\n".join(librdkafka)


@pytest.fixture
def late_kafka() -> Iterator[KafkaBroker]:
    broker = KafkaBroker(port=free_port())
    yield broker
    broker.cleanup()


def test_kafka_up_within_the_patience_lets_the_job_go_on(late_kafka: KafkaBroker) -> None:
    spec = bridge(bootstrap=late_kafka.bootstrap).spec.kafka
    starter = threading.Timer(3.0, late_kafka.start)
    starter.start()
    try:
        wait_for_kafka(spec, 120)  # returns only once the broker answers; a BridgeStopped here fails the test
        assert port_open(late_kafka.port)  # it did not return before the broker was there
    finally:
        starter.join()


def test_librdkafka_says_each_cause_once_per_interval() -> None:
    now = [0.0]
    limit = OncePerInterval(interval=60, clock=lambda: now[0])

    def says(message: str) -> str | None:
        record = logging.LogRecord("jmsbridge.kafka", logging.ERROR, __file__, 1, message, None, None)
        return record.getMessage() if limit.filter(record) else None

    refused = (
        "FAIL [rdkafka#producer-{}] 127.0.0.1:9/bootstrap: Connection refused (after {}ms in state CONNECT)"
    )
    assert says(refused.format(1, 0)) == refused.format(1, 0)
    assert [says(refused.format(n, n)) for n in range(2, 40)] == [None] * 38
    assert says("1/1 brokers are down") == "1/1 brokers are down"  # another cause
    now[0] = 61
    assert says(refused.format(3, 7)) == f"{refused.format(3, 7)} (38 more like it in the last 60 s)"
    assert says(refused.format(4, 0)) is None
