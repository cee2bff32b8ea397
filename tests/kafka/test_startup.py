"""Kafka down when the job starts: the job waits `spec.outages.patienceSeconds`, then stops cleanly (exit 2,
one `jmsbridge stopped:` line), with librdkafka's complaints rate-limited; Kafka up within the window
lets it go on. Kafka refusing the bridge's login or TLS is no outage: the job stops at once, naming what it
read. Real Apache Kafka and a real closed port; the job as a process (it stops before Spark starts)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge_job.config import ENV_KAFKA_PASSWORD, ENV_KAFKA_USERNAME
from bridge_job.kafka.clients import OncePerInterval
from bridge_job.kafka.startup import wait_for_kafka
from jmsbridge import certificates
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker, free_port, port_open
from testbed.builders import bridge
from testbed.harness import bridge_document, write_yaml


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


def refused_job(tmp_path: Path, kafka: KafkaBroker, kafka_spec: dict[str, Any], env: dict[str, str]) -> str:
    """The one `jmsbridge stopped:` line of a job whose Kafka refuses it; it must stop within seconds,
    not after its patience (300 s here)."""
    jms = ActiveMqBroker(port=free_port())
    jms.cleanup()  # never reached: the job stops before JMS
    document = bridge_document("refused", jms, kafka, [{"queue": "refused.in"}])
    document["spec"]["kafka"] |= kafka_spec
    job = BridgeJob([write_yaml(tmp_path / "bridge.yaml", document)], tmp_path, env=env).start()
    assert job.wait_exit(timeout=60) == 2
    log = job.log()
    assert "Traceback" not in log
    stopped = [line for line in log.splitlines() if "jmsbridge stopped:" in line]
    assert len(stopped) == 1, log[-3000:]
    assert "asking again" not in log  # no wait: it stopped at the first refusal
    return stopped[0].partition("jmsbridge stopped: ")[2]


def test_a_wrong_password_stops_the_job_at_once_naming_the_secret(kafka: KafkaBroker, tmp_path: Path) -> None:
    user = f"job-{uuid.uuid4().hex[:8]}"
    kafka.add_scram_user(user, "the-password")
    sasl = {
        "mechanism": "SCRAM-SHA-512",
        "credentialsSecretRef": {"name": "kafka-user"},
        "allowClearText": True,
    }
    spec = {"bootstrapServers": kafka.sasl_bootstrap, "securityProtocol": "SASL_PLAINTEXT", "sasl": sasl}
    env = {ENV_KAFKA_USERNAME: user, ENV_KAFKA_PASSWORD: "not-the-password"}
    said = refused_job(tmp_path, kafka, spec, env)
    assert said.startswith(
        f"Kafka at {kafka.sasl_bootstrap} refused the bridge's SASL SCRAM-SHA-512 login "
        "(JMSBRIDGE_KAFKA_USERNAME and JMSBRIDGE_KAFKA_PASSWORD, from Secret kafka-user, keys username and "
        "password): a wrong password or an unknown user; fix the Secret or the user on the cluster: "
    ), said
    assert "not-the-password" not in said


def test_a_broker_certificate_of_another_ca_stops_the_job_at_once_naming_the_file(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    other = certificates.make_ca(tmp_path / "other", subject="another-ca")
    spec = {
        "bootstrapServers": kafka.ssl_bootstrap,
        "securityProtocol": "SSL",
        "properties": {"ssl.ca.location": str(other)},
    }
    said = refused_job(tmp_path, kafka, spec, {})
    assert said.startswith(
        f"Kafka at {kafka.ssl_bootstrap}: the broker's TLS certificate does not verify against the CA in "
        f"{other}: set ssl.ca.location in spec.kafka.properties to the CA that signed it: "
    ), said


def test_a_client_certificate_the_broker_refuses_stops_the_job_at_once_naming_the_file(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """The broker's SSL listener requires a client certificate signed by its CA: this one is self-made."""
    certificate, key = certificates.make_ca(tmp_path / "own", subject="bridge"), tmp_path / "own" / "ca.key"
    spec = {
        "bootstrapServers": kafka.ssl_bootstrap,
        "securityProtocol": "SSL",
        "properties": {
            "ssl.ca.location": str(kafka.ca_file),
            "ssl.certificate.location": str(certificate),
            "ssl.key.location": str(key),
        },
    }
    said = refused_job(tmp_path, kafka, spec, {})
    assert said.startswith(
        f"Kafka at {kafka.ssl_bootstrap} refused the TLS handshake with the client certificate {certificate} "
        "(spec.kafka.properties ssl.certificate.location): is it signed by a CA the broker trusts, and "
        "current? "
    ), said


@pytest.fixture
def late_kafka() -> Iterator[KafkaBroker]:
    broker = KafkaBroker(port=free_port())
    yield broker
    broker.cleanup()


@pytest.mark.slow  # a broker of its own, started 3 s late (18 s)
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
