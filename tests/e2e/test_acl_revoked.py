"""An ACL revoked while the bridge runs, on Apache Kafka's authorizer: the job stops (it does not wait), and
nothing JMS acknowledged is lost.

The bridge connects as a SCRAM principal holding exactly the ACLs docs/kafka-checks.md lists. WRITE on the
destination topic is revoked under load: the egress's write is refused (TOPIC_AUTHORIZATION_FAILED), a
refusal no wait mends, so the job stops at once with one line naming the topic and the permission, exit 2.
What the ingest had journalled stays in the journal, unwritten (the range's progress is not committed);
granted back and restarted, the job writes every message.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from bridge_job.config import ENV_KAFKA_PASSWORD, ENV_KAFKA_USERNAME
from jmsbridge.kafka_server import Acl
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker
from testbed.harness import bridge_document, read_topics, route_document, send, write_yaml
from tests.e2e.test_faults import all_of, counts, numbered, stop_lines

pytestmark = pytest.mark.e2e


def test_write_revoked_while_running_stops_the_job_naming_it_and_loses_nothing(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    name, queue, topic = f"revoked-{n}", f"revoked.{n}", f"revoked-{n}"
    journal, prefix = f"{name}.jms-bridge.journal", f"{name}.jms-bridge."
    user, password = f"bridge-{n}", f"pw-{uuid.uuid4().hex}"
    kafka.add_scram_user(user, password)
    kafka.create_topics(topic, journal)
    write = Acl("TOPIC", topic, "WRITE")
    kafka.grant(
        f"User:{user}",
        [
            write,
            Acl("TOPIC", journal, "WRITE"),
            Acl("TOPIC", journal, "READ"),
            Acl("GROUP", prefix, "READ", prefixed=True),
            Acl("TRANSACTIONAL_ID", prefix, "WRITE", prefixed=True),
        ],
    )
    bridge = bridge_document(name, activemq, kafka, [{"queue": queue}])
    sasl = {
        "mechanism": "SCRAM-SHA-512",
        "credentialsSecretRef": {"name": "kafka-user"},
        "allowClearText": True,
    }
    bridge["spec"]["kafka"] = {
        "bootstrapServers": kafka.sasl_bootstrap,
        "securityProtocol": "SASL_PLAINTEXT",
        "sasl": sasl,
    }
    route = route_document("all", name, topic, key={"property": "seq"})
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    env = {ENV_KAFKA_USERNAME: user, ENV_KAFKA_PASSWORD: password}
    job = BridgeJob(files, tmp_path, env=env).start()
    try:
        job.wait_running()
        send(activemq, [numbered(queue, seq) for seq in range(100)])
        read_topics(kafka, [topic], 100, timeout=180, done=all_of(range(100)))

        kafka.revoke(f"User:{user}", [write])
        send(activemq, [numbered(queue, seq) for seq in range(100, 200)])  # acknowledged by ActiveMQ
        assert job.wait_exit(timeout=180) == 2
        (line,) = stop_lines(job)
        assert f"not authorized to write to topic {topic}: grant WRITE on it to the bridge" in line, line

        kafka.grant(f"User:{user}", [write])
        job.start()
        records = read_topics(kafka, [topic], 200, timeout=180, settle=3.0, done=all_of(range(200)))
        assert stop_lines(job) == []
    finally:
        job.stop()
    lost, _ = counts("WRITE revoked while running", range(200), records)
    assert not lost
