"""The Kafka checks against Apache Kafka's own authorizer (StandardAuthorizer, nothing allowed without an
ACL), as the bridge's SCRAM principal: every ACL docs/kafka-checks.md lists, taken away one at a time, is
named in the status with its resource; granted back, the bridge is Ready again by itself. And the logins
and TLS handshakes the broker refuses: a hard failure at once, with its own reason, never an outage."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from jmsbridge_operator.kafka_checks.evaluation import CheckResult, CheckSettings
from jmsbridge_operator.kafka_checks.mounted_files import FileContents
from jmsbridge_operator.kafka_checks.probe import NO_BROKER_ANSWERED, check_bridge

from bridge_job.config import JobConfig
from bridge_job.kafka.clients import KafkaCredentials
from jmsbridge import certificates
from jmsbridge.kafka_server import Acl
from testbed.brokers import KafkaBroker
from tests.operator.kafka_checks.bridges import bridge_config

SETTINGS = CheckSettings(probe_deadline_seconds=20, call_timeout_seconds=10)


def check(
    config: JobConfig, credentials: KafkaCredentials | None, files: FileContents | None = None
) -> CheckResult:
    return asyncio.run(
        check_bridge(config, credentials, now=time.time(), state=None, settings=SETTINGS, files=files)
    )


@dataclass(frozen=True)
class Bridge:
    """A bridge of its own principal, topics and id: it writes `orders`, dead-letters to `dead`, reads
    `requests`, and delivers exactly once."""

    id: str
    user: str
    credentials: KafkaCredentials
    orders: str
    dead: str
    requests: str
    journal: str

    @property
    def principal(self) -> str:
        return f"User:{self.user}"

    def config(self, kafka: KafkaBroker) -> JobConfig:
        return bridge_config(
            kafka.sasl_bootstrap,
            bridge_id=self.id,
            writes=[self.orders],
            reads=[self.requests],
            dead_letter=self.dead,
            journal=self.journal,
            exactly_once=True,
            sasl_secret="bridge-kafka",
            sasl_mechanism="SCRAM-SHA-512",
        )

    def needs(self) -> list[Acl]:
        """What docs/kafka-checks.md says the bridge's principal needs, and nothing more."""
        prefix = f"{self.id}.jms-bridge."
        return [
            Acl("TOPIC", self.orders, "WRITE"),
            Acl("TOPIC", self.dead, "WRITE"),
            Acl("TOPIC", self.journal, "WRITE"),
            Acl("TOPIC", self.journal, "READ"),
            Acl("TOPIC", self.requests, "READ"),
            Acl("GROUP", f"{prefix}journal-reader", "READ"),
            Acl("GROUP", f"{prefix}ingress", "READ"),
            Acl("TRANSACTIONAL_ID", prefix, "WRITE", prefixed=True),
        ]


@pytest.fixture
def bridge(kafka: KafkaBroker) -> Bridge:
    n = uuid.uuid4().hex[:8]
    user, password = f"bridge-{n}", f"pw-{uuid.uuid4().hex}"
    kafka.add_scram_user(user, password)
    made = Bridge(
        f"b{n}",
        user,
        KafkaCredentials(user, password),
        f"orders-{n}",
        f"dead-{n}",
        f"requests-{n}",
        f"journal-{n}",
    )
    kafka.create_topics(made.orders, made.dead, made.requests, made.journal)
    return made


def test_with_exactly_the_documented_acls_the_bridge_is_ready(kafka: KafkaBroker, bridge: Bridge) -> None:
    kafka.grant(bridge.principal, bridge.needs())
    result = check(bridge.config(kafka), bridge.credentials)
    assert result.ready, result.condition
    assert result.notes == ()  # everything verified: Kafka reports the principal's operations


MISSING = {
    # index in Bridge.needs() -> (reason, the condition's whole message)
    0: (
        "TopicAuthorizationFailed",
        "topic {orders}: missing WRITE, DESCRIBE (destination of route to-kafka-{orders})",
    ),
    1: ("TopicAuthorizationFailed", "topic {dead}: missing WRITE, DESCRIBE (dead-letter topic)"),
    2: ("TopicAuthorizationFailed", "topic {journal}: missing WRITE (journal)"),
    3: ("TopicAuthorizationFailed", "topic {journal}: missing READ (journal)"),
    4: (
        "TopicAuthorizationFailed",
        "topic {requests}: missing READ, DESCRIBE (source of route from-kafka-{requests})",
    ),
    5: ("GroupAuthorizationFailed", "consumer group {id}.jms-bridge.journal-reader: missing READ"),
    6: ("GroupAuthorizationFailed", "consumer group {id}.jms-bridge.ingress: missing READ"),
    7: (
        "TransactionalIdAuthorizationFailed",
        "transactional ids {id}.jms-bridge.*: missing WRITE, DESCRIBE (initialising "
        "{id}.jms-bridge.preflight was refused: Failed to find transaction coordinator: "
        "sasl_plaintext://{bootstrap}/1: Broker: Transactional Id authorization failed: "
        "Transactional Id authorization failed.)",
    ),
}  # fmt: skip


@pytest.mark.parametrize("index", sorted(MISSING), ids=lambda i: str(i))
def test_each_missing_acl_is_named_and_its_grant_makes_the_bridge_ready(
    kafka: KafkaBroker, bridge: Bridge, index: int
) -> None:
    needs = bridge.needs()
    missing = needs[index]
    kafka.grant(bridge.principal, [acl for acl in needs if acl != missing])
    config = bridge.config(kafka)

    refused = check(config, bridge.credentials)

    reason, part = MISSING[index]
    expected = part.format(**vars(bridge), bootstrap=kafka.sasl_bootstrap)
    assert refused.stalled, refused.condition
    assert refused.condition.reason == reason, refused.condition
    assert refused.condition.message == expected
    assert [p.reason for p in refused.problems] == [reason], refused.problems  # that one, nothing else

    kafka.grant(bridge.principal, [missing])
    assert check(config, bridge.credentials).ready


def test_idempotent_write_on_the_cluster_is_not_needed_on_kafka_4(kafka: KafkaBroker, bridge: Bridge) -> None:
    """Before Kafka 2.8 an idempotent producer needed IDEMPOTENT_WRITE on the cluster; since, WRITE on a
    topic or a transactional id implies it. The principal here never had it, and the bridge is ready."""
    kafka.grant(bridge.principal, bridge.needs())
    assert Acl("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE") not in bridge.needs()
    assert check(bridge.config(kafka), bridge.credentials).ready


@pytest.mark.slow  # a broker of its own, new (20 s)
def test_a_first_check_on_a_fresh_broker_meets_no_group_coordinator_and_says_nothing_of_it() -> None:
    """A fresh cluster has no __consumer_offsets yet: its first group describe answers NOT_COORDINATOR.
    That is no outage: the check asks again and judges the group."""
    fresh = KafkaBroker().start()
    try:
        topic, journal = "orders", "journal"
        fresh.create_topics(topic, journal)
        result = check(bridge_config(fresh.bootstrap, writes=[topic], journal=journal), None)
        assert result.ready, result.condition
    finally:
        fresh.cleanup()


@pytest.mark.parametrize("who", ["wrong password", "unknown user"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_refused_login_is_a_hard_failure_at_once_naming_the_secret(
    kafka: KafkaBroker, bridge: Bridge, who: str, mechanism: str
) -> None:
    kafka.grant(bridge.principal, bridge.needs())
    config = bridge_config(
        kafka.sasl_bootstrap, writes=[bridge.orders], journal=bridge.journal, sasl_secret="bridge-kafka",
        sasl_mechanism=mechanism,
    )  # fmt: skip
    credentials = (
        KafkaCredentials(bridge.user, "not-the-password")
        if who == "wrong password"
        else KafkaCredentials("nobody", "whatever")
    )
    result = check(config, credentials)
    assert result.stalled  # a hard failure at the first check: no grace period, no retry
    assert result.state.unreachable_since is None
    assert result.condition.reason == "KafkaAuthenticationFailed"
    assert result.condition.message.startswith(
        f"Kafka at {kafka.sasl_bootstrap} refused the bridge's SASL {mechanism} login (Secret bridge-kafka, "
        "keys username and password): a wrong password or an unknown user; fix the Secret or the user on "
        "the cluster: "
    )
    assert "not-the-password" not in result.condition.message


def test_sasl_ssl_with_the_brokers_ca_is_ready_and_with_another_ca_a_tls_failure(
    kafka: KafkaBroker, bridge: Bridge, tmp_path: Path
) -> None:
    kafka.grant(bridge.principal, bridge.needs())
    ca = kafka.ca_file.read_bytes()
    files = FileContents({"ssl.ca.location": ca})

    def config(ca_path: str) -> JobConfig:
        return bridge_config(
            kafka.sasl_ssl_bootstrap, writes=[bridge.orders], journal=bridge.journal, bridge_id=bridge.id,
            sasl_secret="bridge-kafka", sasl_mechanism="SCRAM-SHA-512", security_protocol="SASL_SSL",
            properties={"ssl.ca.location": ca_path},
        )  # fmt: skip

    assert check(config("/etc/kafka-ca/ca.crt"), bridge.credentials, files).ready

    other = tmp_path / "other"
    other_ca = certificates.make_ca(other, subject="another-ca").read_bytes()
    wrong_ca = FileContents({"ssl.ca.location": other_ca})
    # A check on a loaded machine may give up before the handshake has failed (no broker answered: the
    # operator checks again 5 s later); the first one that sees the refusal stalls the bridge.
    for _ in range(3):
        refused = check(config("/etc/kafka-ca/ca.crt"), bridge.credentials, wrong_ca)
        if NO_BROKER_ANSWERED not in refused.condition.message:
            break
    assert refused.stalled, refused.condition.message
    assert refused.condition.reason == "KafkaTlsFailed"
    assert refused.condition.message.startswith(
        f"Kafka at {kafka.sasl_ssl_bootstrap}: the broker's TLS certificate does not verify against the CA "
        "in /etc/kafka-ca/ca.crt: set ssl.ca.location in spec.kafka.properties to the CA that signed it: "
    )
