"""The job over mutual TLS to a real JMS broker: Artemis' TLS acceptor, asking for a client certificate,
the stores and their passwords given as the operator gives them (spec.jms.tls, the passwords in the
environment from their Secrets). Every JMS connection of the job (the ingest's in the driver, the
ingress's in Spark's Python workers) goes over TLS; what no retry mends stops the job at once with one
line. The cases of refusal one by one, on both brokers: tests/jms/test_tls.py.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.artemis_server import ArtemisBroker
from jmsbridge.local import BridgeJob
from testbed.brokers import KafkaBroker
from testbed.harness import (
    bridge_document,
    received_from,
    route_document,
    send,
    to_jms_route,
    write_yaml,
)
from tests.support.jms_tls import TlsMaterial, tls_env, tls_jms

# One worker starts the TLS brokers for both TLS modules (tests/jms/test_tls.py).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("jms-tls")]


# Artemis, with a login besides: that ActiveMQ Classic's ssl:// connects with a client certificate and
# refuses what it should is tests/jms/test_tls.py's, through the same connection code; a job costs 20 s.
def test_messages_go_both_ways_over_mutual_tls(
    kafka: KafkaBroker, tmp_path: Path, jms_tls: TlsMaterial, tls_artemis: ArtemisBroker
) -> None:
    broker = tls_artemis
    n = uuid.uuid4().hex[:8]
    source, topic, target, bridge = f"tls.{n}.in", f"tls-{n}", f"tls.{n}.out", f"tls-{n}"
    kafka.create_topics(topic)
    jms = tls_jms(broker, jms_tls.bridge, jms_tls.bridge)
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, broker, kafka, [{"queue": source}], jms=jms),
            route_document("out", bridge, topic, match={"address": source}),
            to_jms_route("back", bridge, topic, {"queue": target}),
        )
    ]
    job = BridgeJob(files, tmp_path, env=tls_env(broker, jms_tls.bridge, jms_tls.bridge)).start()
    try:
        # The tests' own client sends and receives over the broker's plain port
        send(broker, [JmsMessage(Destination(DestinationKind.QUEUE, source), body=f"m{i}") for i in range(5)])
        arrived = received_from(broker, target, 5)
    finally:
        job.stop()
    assert sorted(str(m.body) for m in arrived) == [f"m{i}" for i in range(5)]
    connected = [line for line in job.log().splitlines() if "jms.connection: connected to" in line]
    assert len(connected) >= 2, job.log()[-4000:]  # the ingest's, and the ingress task's
    assert all(broker.tls_url in line for line in connected), connected
    assert jms_tls.bridge.password not in job.log()


def test_a_broker_the_trust_store_does_not_trust_stops_the_job_at_once(
    kafka: KafkaBroker, tmp_path: Path, jms_tls: TlsMaterial, tls_artemis: ArtemisBroker
) -> None:
    trust, key = jms_tls.stranger, jms_tls.bridge
    document = bridge_document(
        "untrusting", tls_artemis, kafka, [{"queue": "tls.never"}], jms=tls_jms(tls_artemis, trust, key)
    )
    document["spec"]["outages"] = {"patienceSeconds": 600}  # a refusal is no outage: no waiting it out
    files = [write_yaml(tmp_path / "bridge.yaml", document)]
    job = BridgeJob(files, tmp_path, env=tls_env(tls_artemis, trust, key))
    assert job.start().wait_exit(timeout=240) == 2
    stopped = [line for line in job.log().splitlines() if "jmsbridge stopped:" in line]
    assert len(stopped) == 1, job.log()[-4000:]
    assert f"TLS to the JMS broker failed (trust store {trust.trust_store}" in stopped[0]
    assert stopped[0].endswith(
        f"a TLS handshake with 127.0.0.1:{tls_artemis.tls_port} was refused: unable to find valid "
        "certification path to requested target (SunCertPathBuilderException)"
    ), stopped[0]
    assert "unreachable" not in job.log()
