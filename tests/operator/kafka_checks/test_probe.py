"""The Kafka checks against Apache Kafka, through `check_bridge`: topics, the journal's creation, the
probe transactional id, the broker stopped or silent. Here the bridge connects as the plaintext
listener's principal, a super user of the broker's authorizer: every operation is allowed, and Kafka says
so. Refused permissions, logins and TLS handshakes, as a principal of its own: `test_acls.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AclOperation, AdminClient, ConfigResource, ResourceType  # type: ignore[attr-defined]
from jmsbridge_operator.kafka_checks.evaluation import (
    CheckResult,
    CheckSettings,
    CheckState,
    Operation,
    Reason,
)
from jmsbridge_operator.kafka_checks.probe import NO_BROKER_ANSWERED, _operations, check_bridge, probe_configs

from bridge_job.config import ENV_KAFKA_PASSWORD, ENV_KAFKA_USERNAME, JobConfig
from bridge_job.kafka.clients import LOGGING, KafkaCredentials, client_config, producer_config
from jmsbridge.kafka_server import Acl
from testbed.brokers import KafkaBroker
from tests.operator.kafka_checks.bridges import bridge_config


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def check(
    config: JobConfig,
    state: CheckState | None = None,
    settings: CheckSettings | None = None,
    credentials: KafkaCredentials | None = None,
) -> CheckResult:
    return asyncio.run(check_bridge(config, credentials, now=time.time(), state=state, settings=settings))


def topic_names(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=10).topics)


@pytest.fixture
def journal(kafka: KafkaBroker) -> str:
    name = unique("journal")
    kafka.create_topics(name)
    return name


def test_missing_topic_then_created_then_deleted(kafka: KafkaBroker, journal: str) -> None:
    topic = unique("orders")
    config = bridge_config(kafka.bootstrap, writes=[topic], journal=journal)

    missing = check(config)
    assert missing.stalled
    assert missing.condition.reason == "TopicNotFound"
    assert missing.condition.message == (
        f"topic {topic}: does not exist (destination of route to-kafka-{topic})"
    )
    assert topic not in topic_names(kafka.bootstrap)  # the check never creates a topic by accident

    kafka.create_topics(topic)
    created = check(config)
    assert created.ready
    assert created.condition.status == "True"
    assert created.notes == ()  # everything verified: the broker reports the principal's operations

    kafka.delete_topics(topic)
    deleted = check(config, state=created.state)
    assert deleted.stalled
    assert deleted.condition.reason == "TopicNotFound"
    assert topic in deleted.condition.message


def test_every_missing_topic_is_named(kafka: KafkaBroker) -> None:
    orders, dlq, replies, journal = unique("orders"), unique("dlq"), unique("replies"), unique("journal")
    config = bridge_config(
        kafka.bootstrap, writes=[orders], reads=[replies], dead_letter=dlq, journal=journal
    )

    result = check(config)

    assert result.condition.reason == "TopicNotFound"
    assert {p.subject for p in result.problems} == {orders, dlq, replies, journal}
    for name in (orders, dlq, replies, journal):
        assert f"topic {name}: does not exist" in result.condition.message
    assert not {orders, dlq, replies, journal} & topic_names(kafka.bootstrap)


def test_journal_topic_created_when_asked_with_its_documented_config(kafka: KafkaBroker) -> None:
    topic, journal = unique("orders"), unique("journal")
    kafka.create_topics(topic)
    config = bridge_config(
        kafka.bootstrap, writes=[topic], journal=journal, create_journal=True, journal_partitions=3
    )

    first = check(config)
    assert first.ready, first.condition
    assert f"created topic {journal} (journal)" in first.notes

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    description = admin.list_topics(journal, timeout=10).topics[journal]
    assert len(description.partitions) == 3
    resource = ConfigResource(ResourceType.TOPIC, journal)
    entries = admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=30)
    assert {name: entries[name].value for name in journal_config_names()} == {
        "cleanup.policy": "delete",
        "retention.ms": "604800000",
        "min.insync.replicas": "1",  # one broker: one replica
        "unclean.leader.election.enable": "false",
    }

    again = check(config)  # idempotent: exists now, nothing created
    assert again.ready
    assert again.notes == ()


def test_pending_topic_created_with_the_journal_compacted(kafka: KafkaBroker) -> None:
    requests, replies, journal = unique("requests"), unique("replies"), unique("journal")
    kafka.create_topics(requests, replies)
    bridge_id = unique("p")  # a DNS label
    config = bridge_config(
        kafka.bootstrap,
        bridge_id=bridge_id,
        writes=[],
        reads=[requests],
        journal=journal,
        create_journal=True,
        message_id_replies=replies,
    )

    first = check(config)
    assert first.ready, first.condition
    assert f"created topic {config.pending_topic} (pending requests)" in first.notes
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, config.pending_topic)
    entries = admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=30)
    assert entries["cleanup.policy"].value == "compact"


def journal_config_names() -> tuple[str, ...]:
    return ("cleanup.policy", "retention.ms", "min.insync.replicas", "unclean.leader.election.enable")


def test_journal_topic_not_created_unless_asked(kafka: KafkaBroker) -> None:
    journal = unique("journal")
    config = bridge_config(kafka.bootstrap, writes=[], journal=journal)

    result = check(config)

    assert result.condition.reason == "TopicNotFound"
    assert result.condition.message.startswith(f"topic {journal}: does not exist (journal)")
    assert journal not in topic_names(kafka.bootstrap)


def test_exactly_once_initialises_the_probe_transactional_id(kafka: KafkaBroker, journal: str) -> None:
    topic = unique("orders")
    kafka.create_topics(topic)
    config = bridge_config(kafka.bootstrap, writes=[topic], journal=journal, exactly_once=True)

    result = check(config)

    assert result.ready, result.condition
    assert result.notes == ()  # nothing left unverified
    assert "transactional ids orders.jms-bridge.*" in result.condition.message


def test_sasl_credentials_are_used_and_never_shown(
    kafka: KafkaBroker, journal: str, caplog: pytest.LogCaptureFixture
) -> None:
    user, password = f"bridge-{uuid.uuid4().hex[:8]}", f"pw-{uuid.uuid4().hex}"
    kafka.add_scram_user(user, password)
    kafka.grant(f"User:{user}", [Acl(kind, "*", "ALL") for kind in ("TOPIC", "GROUP", "TRANSACTIONAL_ID")])
    credentials = KafkaCredentials(user, password)
    topic = unique("orders")
    config = bridge_config(
        kafka.sasl_bootstrap,
        writes=[topic],
        journal=journal,
        sasl_secret="bridge-kafka",
        sasl_mechanism="SCRAM-SHA-512",
    )
    caplog.set_level(logging.DEBUG)

    missing = check(config, credentials=credentials)
    kafka.create_topics(topic)
    ready = check(config, credentials=credentials)
    without = check(config)

    assert missing.condition.reason == "TopicNotFound"
    assert ready.ready
    assert without.condition.reason == "InvalidSpec"
    assert "sasl.credentialsSecretRef bridge-kafka" in without.condition.message
    shown = repr([credentials, missing, ready, without]) + caplog.text
    assert password not in shown


@pytest.mark.slow  # a broker of its own, stopped until the grace period runs out, then started again (30 s)
def test_broker_stopped_is_transient_then_a_hard_failure_after_the_grace_period() -> None:
    broker = KafkaBroker().start()
    try:
        topic, journal = unique("orders"), unique("journal")
        broker.create_topics(topic, journal)
        config = bridge_config(broker.bootstrap, writes=[topic], journal=journal)
        settings = CheckSettings(grace_seconds=1.5, retry_seconds=0.2, probe_deadline_seconds=3)
        assert check(config, settings=settings).ready

        broker.stop()
        first = check(config, settings=settings)
        assert first.reconciling
        assert first.condition.status == "Unknown"
        assert first.condition.reason == "KafkaUnreachable"
        assert first.condition.message.startswith(f"Kafka at {broker.bootstrap} did not answer: ")

        result, deadline = first, time.monotonic() + 20
        while result.reconciling and time.monotonic() < deadline:
            time.sleep(result.retry_after)  # the retry delay the check asks for
            result = check(config, state=result.state, settings=settings)
        assert result.stalled
        assert result.condition.reason == Reason.KAFKA_UNREACHABLE
        assert "(grace period 1.5s)" in result.condition.message
        assert result.state.unreachable_since == first.state.unreachable_since

        broker.start()
        back = check(config, state=result.state, settings=settings)
        assert back.ready
        assert back.state == CheckState()
    finally:
        broker.cleanup()


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """A port that accepts connections (the kernel does) and never answers a request."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_silent_broker_cannot_stall_the_check_or_other_bridges(
    kafka: KafkaBroker, journal: str, silent_broker: str
) -> None:
    topic = unique("orders")
    kafka.create_topics(topic)
    healthy = bridge_config(kafka.bootstrap, writes=[topic], journal=journal)
    stuck = bridge_config(silent_broker, writes=[topic], journal=journal, bridge_id="stuck")
    # Deadlines well above a healthy check's time on a loaded machine (1.7 s seen), so that the order in
    # which they finish says whether the stuck ones held the healthy one up.
    settings = CheckSettings(probe_deadline_seconds=6, call_timeout_seconds=5)
    finished: dict[str, float] = {}

    async def timed(name: str, config: JobConfig) -> CheckResult:
        result = await check_bridge(config, None, now=time.time(), state=None, settings=settings)
        finished[name] = time.monotonic() - start
        return result

    async def both() -> list[CheckResult]:
        return await asyncio.gather(
            *(timed(f"stuck-{i}", stuck) for i in range(4)), timed("healthy", healthy)
        )

    start = time.monotonic()
    *stuck_results, healthy_result = asyncio.run(both())

    assert healthy_result.ready
    assert finished["healthy"] < min(t for name, t in finished.items() if name != "healthy")  # not held up
    for result in stuck_results:
        assert result.reconciling
        assert result.condition.reason == "KafkaUnreachable"
        assert NO_BROKER_ANSWERED in result.condition.message
    assert max(finished.values()) < settings.probe_deadline_seconds + 3  # bounded by the deadline


def test_the_status_tells_no_port_scanner_what_answered_where_kafka_did_not(
    silent_broker: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Whoever writes a JmsBridge chooses its bootstrap servers: the status says the same whether the port
    refused, stayed silent or answered as something else (an HTTP server), only the operator's log says
    which. (How long the check took still differs: documented in docs/security.md.)"""
    caplog.set_level(logging.INFO)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused = f"127.0.0.1:{closed.getsockname()[1]}"
    talker = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def talk() -> None:  # answers every connection as a web server would, then hangs up
        talker.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                connection, _ = talker.accept()
                with connection:
                    connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=talk, daemon=True)
    thread.start()
    web = f"127.0.0.1:{talker.getsockname()[1]}"
    settings = CheckSettings(probe_deadline_seconds=2, call_timeout_seconds=1.5)
    try:
        messages = {
            address: check(bridge_config(address, writes=["orders"]), settings=settings).condition.message
            for address in (refused, silent_broker, web)
        }
    finally:
        stop.set()
        thread.join(5)
        talker.close()
    said = {message.replace(address, "<host>") for address, message in messages.items()}
    assert said == {
        f"Kafka at <host> did not answer: {NO_BROKER_ANSWERED}; retrying, a hard failure if it still does "
        "not answer in 300s"
    }, said
    for address in (refused, silent_broker, web):
        assert f"Kafka at {address} for bridge" in caplog.text  # the platform team's detail


def test_authorized_operations_are_read_by_name() -> None:
    """The conversion of a reported set, with an operation our enum does not name."""
    reported = [AclOperation.READ, AclOperation.DESCRIBE, AclOperation.IDEMPOTENT_WRITE, AclOperation.UNKNOWN]
    expected = frozenset({Operation.READ, Operation.DESCRIBE, Operation.IDEMPOTENT_WRITE})
    assert _operations(reported) == expected
    assert _operations(None) is None


def test_the_probe_connects_with_the_settings_of_the_jobs_clients() -> None:
    """Same bridge, same Secret: the operator's probe and the job hand librdkafka the same settings."""
    config = bridge_config("kafka-0:9092,kafka-1:9092", sasl_secret="bridge-kafka")
    properties = {
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "linger.ms": "20",  # a producer default: the user's value wins
        "bootstrap.servers": "elsewhere:9092",  # set by spec.kafka.bootstrapServers: the spec wins
        "allow.auto.create.topics": "true",  # a write never creates a topic, whatever is set here
    }
    kafka = config.bridge.kafka.model_copy(update={"properties": properties})
    environment = {ENV_KAFKA_USERNAME: "bridge", ENV_KAFKA_PASSWORD: "from-the-secret"}

    admin, producer = probe_configs(kafka, KafkaCredentials("bridge", "from-the-secret"))

    # The job's clients add only where librdkafka logs to (rate-limited Python logging).
    assert admin | LOGGING == client_config(kafka, environment)
    assert producer | LOGGING == producer_config(kafka, environment)
    assert admin["ssl.ca.location"] == "/etc/kafka/ca.pem"
    assert (admin["bootstrap.servers"], admin["allow.auto.create.topics"]) == (
        "kafka-0:9092,kafka-1:9092",
        "false",
    )
    assert (producer["linger.ms"], producer["acks"]) == ("20", "all")
    assert (admin["sasl.username"], admin["sasl.password"]) == ("bridge", "from-the-secret")
