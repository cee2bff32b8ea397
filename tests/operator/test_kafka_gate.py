"""The Kafka checks inside the operator: real kopf on a real API server, and Apache Kafka.

The operator here checks every bridge's Kafka side every `INTERVAL` seconds and turns a cluster that does
not answer for `GRACE` seconds into a hard failure (set through its environment, as the Helm chart does
through its flags). No spark-operator runs: the tests play it by patching SparkApplication status.

Each test uses its own bridge, topics and journal (`unique()`): the session's `kafka` broker is shared
with other tests. The test that stops a broker starts its own.

The permission and credential tests run against the broker's own authorizer and SASL, as a SCRAM
principal of their own with the ACLs the test grants. One test needs an answer no broker gives on demand
(a probe that hangs): it replaces the probe (`probe.probe_kafka`) with a fake, and says so.
"""

from __future__ import annotations

import base64
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType  # type: ignore[attr-defined]
from jmsbridge_operator.conditions import Condition
from jmsbridge_operator.handlers.kafka_checks import CredentialsNotFound, read_credentials
from jmsbridge_operator.kafka_checks import probe as kafka_probe
from jmsbridge_operator.kafka_checks.evaluation import (
    Access,
    Authorizer,
    CheckSettings,
    GroupAnswer,
    Lookup,
    Operation,
    ProbeResult,
    RequiredAccess,
    TopicAnswer,
    TransactionalIdAnswer,
)
from jmsbridge_operator.kafka_checks.gate import GateVerdict, KafkaGate
from jmsbridge_operator.kafka_checks.mounted_files import FileContents
from jmsbridge_operator.secret_marks import ANNOTATION

from bridge_job.config import JmsBridge, JmsBridgeRoute, JobConfig, KafkaSpec, job_config
from bridge_job.kafka.clients import KafkaCredentials
from bridge_job.kube.api import ApiError
from jmsbridge.kafka_server import Acl
from testbed.apiserver.client import KubeApi
from testbed.brokers import KafkaBroker, free_port
from testbed.resources import NAMESPACE, simple_bridge
from tests.operator.fixtures import KAFKA_CHECKS_ENV, chart_operator
from tests.operator.helpers import SPARK_VERSION, default_id, route
from tests.operator.test_operator import View, everything_but_secrets

pytestmark = pytest.mark.timeout(120)

INTERVAL = 1.0
GRACE = 3.0


def stalled(reason: str) -> dict[str, tuple[str, str]]:
    return {"Ready": ("False", reason), "Stalled": ("True", reason), "KafkaReady": ("False", reason)}


STARTING = {
    "Ready": ("False", "Starting"),
    "Reconciling": ("True", "Starting"),
    "KafkaReady": ("True", "Verified"),
}
RUNNING = {"Ready": ("True", "Running"), "KafkaReady": ("True", "Verified")}


@pytest.fixture()
def view(cluster: KubeApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[View]:
    """The operator with its Kafka checks on, every INTERVAL seconds, and a short grace period."""
    monkeypatch.setenv(KAFKA_CHECKS_ENV, "true")
    monkeypatch.setenv("JMSBRIDGE_KAFKA_CHECK_INTERVAL", str(INTERVAL))
    monkeypatch.setenv("JMSBRIDGE_KAFKA_GRACE_PERIOD", str(GRACE))
    with chart_operator(cluster):
        yield View(cluster)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Bridge:
    """A bridge with one jmsToKafka route to `topic`; its journal is `<bridgeId>.jms-bridge.journal`."""

    def __init__(self, bootstrap: str, **kafka: Any) -> None:
        self.name = unique("b")
        self.topic = unique("out")
        self.route = f"{self.name}-out"
        self.id = default_id(self.name)
        self.journal = f"{self.id}.jms-bridge.journal"
        self.body = simple_bridge(self.name)
        self.body["spec"]["kafka"] = {"bootstrapServers": bootstrap, **kafka}
        self.primary = f"{self.name}-primary"

    def create(self, view: View) -> None:
        view.create(self.body, route(self.route, self.name, topic=self.topic))

    def apps(self, view: View) -> list[str]:
        return sorted(name for name in view.apps() if name.startswith(f"{self.name}-"))

    def wait(self, view: View, expected: dict[str, tuple[str, str]], timeout: float = 30) -> dict[str, Any]:
        """The bridge once its conditions are exactly `expected`."""

        def matches() -> dict[str, Any] | None:
            body = view.bridge(self.name)
            return body if View.conditions(body) == expected else None

        try:
            found: dict[str, Any] = view.wait(matches, f"{self.name} {expected}", timeout=timeout)
        except AssertionError as error:
            raise AssertionError(f"{error}; now: {View.conditions(view.bridge(self.name))}") from None
        return found

    def warned(self, view: View, reason: str) -> bool:
        return (self.name, "Warning", reason) in view.events()


# ---------------------------------------------------------------------------------------------------
# Topics and reachability


def test_missing_topic_stalls_the_bridge_until_it_is_created(kafka: KafkaBroker, view: View) -> None:
    bridge = Bridge(kafka.bootstrap)
    kafka.create_topics(bridge.journal)
    bridge.create(view)

    body = bridge.wait(view, stalled("TopicNotFound"))
    message = view.message(body, "Stalled")
    assert message == f"topic {bridge.topic}: does not exist (destination of route {bridge.route})"
    view.wait(lambda: bridge.warned(view, "TopicNotFound"), "a Warning Event")
    # No SparkApplication, not even for a moment: the check came before the first one.
    assert view.kube.history(SPARK_VERSION, "SparkApplication", bridge.primary, NAMESPACE) == []

    kafka.create_topics(bridge.topic)
    bridge.wait(view, STARTING)  # resumed by itself at the next check
    assert bridge.apps(view) == [bridge.primary]
    view.play_spark(bridge.primary, "RUNNING")
    bridge.wait(view, RUNNING)


def test_topic_deleted_while_running_stops_the_bridge_within_an_interval(
    kafka: KafkaBroker, view: View
) -> None:
    bridge = Bridge(kafka.bootstrap)
    kafka.create_topics(bridge.journal, bridge.topic)
    bridge.create(view)
    view.wait(lambda: bridge.apps(view), "the SparkApplication")
    view.play_spark(bridge.primary, "RUNNING")
    bridge.wait(view, RUNNING)

    deleted = time.monotonic()
    kafka.delete_topics(bridge.topic)
    body = bridge.wait(view, stalled("TopicNotFound"), timeout=INTERVAL + 15)
    noticed = time.monotonic() - deleted
    # One interval, plus the probe and the reconciliation (slack for a busy machine).
    assert noticed < INTERVAL + 5, noticed
    assert bridge.apps(view) == []  # stopped, not left to crash
    assert view.message(body, "Ready").startswith(f"topic {bridge.topic}: does not exist")
    view.wait(lambda: bridge.warned(view, "TopicNotFound"), "a Warning Event")

    kafka.create_topics(bridge.topic)
    bridge.wait(view, STARTING)
    assert bridge.apps(view) == [bridge.primary]


@pytest.mark.slow
def test_unreachable_kafka_is_reconciling_then_stalled_after_the_grace_period(view: View) -> None:
    broker = KafkaBroker().start()
    try:
        running = Bridge(broker.bootstrap)
        broker.create_topics(running.journal, running.topic)
        never = Bridge(f"127.0.0.1:{free_port()}")  # nothing listens there
        never.create(view)
        running.create(view)

        # A bridge whose Kafka never answered is not started, and it does not hold up the other one.
        unreachable = {"Ready": ("False", "KafkaUnreachable"), "Reconciling": ("True", "KafkaUnreachable")}
        body = never.wait(view, {**unreachable, "KafkaReady": ("Unknown", "KafkaUnreachable")})
        assert "did not answer" in view.message(body, "Reconciling")
        view.wait(lambda: running.apps(view), "the other bridge's SparkApplication")
        view.play_spark(running.primary, "RUNNING")
        running.wait(view, RUNNING)
        assert never.apps(view) == []

        broker.stop()
        # Within the grace period, a running bridge keeps running; only its conditions say so.
        running.wait(
            view,
            {
                "Ready": ("True", "Running"),
                "Reconciling": ("True", "KafkaUnreachable"),
                "KafkaReady": ("Unknown", "KafkaUnreachable"),
            },
        )
        assert running.apps(view) == [running.primary]

        body = running.wait(view, stalled("KafkaUnreachable"), timeout=GRACE + 15)
        assert f"grace period {GRACE:.0f}s" in view.message(body, "Stalled")
        assert running.apps(view) == []
        never.wait(view, stalled("KafkaUnreachable"))
        assert never.apps(view) == []
        view.wait(lambda: never.warned(view, "KafkaUnreachable"), "a Warning Event")
    finally:
        broker.cleanup()


def test_the_operator_creates_the_journal_topic_when_asked(kafka: KafkaBroker, view: View) -> None:
    bridge = Bridge(kafka.bootstrap, createJournalTopic=True)
    kafka.create_topics(bridge.topic)
    bridge.create(view)

    bridge.wait(view, STARTING)
    assert bridge.apps(view) == [bridge.primary]
    view.wait(lambda: (bridge.name, "Normal", "KafkaTopicCreated") in view.events(), "the Event")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    assert bridge.journal in admin.list_topics(timeout=10).topics
    resource = ConfigResource(ResourceType.TOPIC, bridge.journal)
    entries = admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=30)
    assert (entries["cleanup.policy"].value, entries["retention.ms"].value) == ("delete", "604800000")


# ---------------------------------------------------------------------------------------------------
# Permissions and credentials, against the broker's authorizer and SASL


def secret(name: str, username: str, password: str, marked_for: str = "*") -> dict[str, Any]:
    """A Secret of SASL credentials, marked for `marked_for` (secret_marks.py)."""

    def encoded(value: str) -> str:
        return base64.b64encode(value.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "annotations": {ANNOTATION: marked_for},
        },
        "data": {"user": encoded(username), "pass": encoded(password)},
    }


SASL = {
    "mechanism": "SCRAM-SHA-512",
    "credentialsSecretRef": {"name": "kafka-user", "usernameKey": "user", "passwordKey": "pass"},
    "allowClearText": True,  # the test broker's loopback listener
}


def principal(kafka: KafkaBroker) -> tuple[str, str]:
    """A SCRAM user of its own: (name, password)."""
    user, password = unique("bridge-user"), f"Zq9-{uuid.uuid4().hex}"
    kafka.add_scram_user(user, password)
    return user, password


def needs(bridge: Bridge) -> list[Acl]:
    """What docs/kafka-checks.md says the bridge needs: its topic, its journal, its group and ids."""
    prefix = f"{bridge.id}.jms-bridge."
    return [
        Acl("TOPIC", bridge.topic, "WRITE"),
        Acl("TOPIC", bridge.journal, "WRITE"),
        Acl("TOPIC", bridge.journal, "READ"),
        Acl("GROUP", f"{prefix}journal-reader", "READ"),
        Acl("TRANSACTIONAL_ID", prefix, "WRITE", prefixed=True),
    ]


@pytest.mark.slow
def test_missing_permissions_stall_the_bridge_until_granted(
    kafka: KafkaBroker, view: View, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    user, password = principal(kafka)
    bridge = Bridge(kafka.sasl_bootstrap, securityProtocol="SASL_PLAINTEXT", sasl=SASL)
    kafka.create_topics(bridge.topic, bridge.journal)
    bridge.create(view)

    # No Secret yet: nothing can be checked, nothing starts.
    body = bridge.wait(view, stalled("CredentialsNotFound"))
    assert "Secret kafka-user (spec.kafka.sasl.credentialsSecretRef) not found" in view.message(body)

    write = Acl("TOPIC", bridge.topic, "WRITE")
    kafka.grant(f"User:{user}", [acl for acl in needs(bridge) if acl != write])
    view.create(secret("kafka-user", user, password))
    body = bridge.wait(view, stalled("TopicAuthorizationFailed"))
    assert view.message(body, "Stalled") == (
        f"topic {bridge.topic}: missing WRITE, DESCRIBE (destination of route {bridge.route})"
    )
    assert bridge.apps(view) == []
    view.wait(lambda: bridge.warned(view, "TopicAuthorizationFailed"), "a Warning Event")

    kafka.grant(f"User:{user}", [write])
    bridge.wait(view, STARTING)  # by itself, at the next check
    assert bridge.apps(view) == [bridge.primary]

    # The password went to the Kafka client only: no object, Event or log line has it.
    assert password not in str(everything_but_secrets(view.kube))
    assert password not in "\n".join(record.getMessage() for record in caplog.records)


@pytest.mark.slow
def test_a_wrong_password_is_a_hard_failure_at_once_until_the_secret_is_fixed(
    kafka: KafkaBroker, view: View
) -> None:
    user, password = principal(kafka)
    bridge = Bridge(kafka.sasl_bootstrap, securityProtocol="SASL_PLAINTEXT", sasl=SASL)
    kafka.create_topics(bridge.topic, bridge.journal)
    kafka.grant(f"User:{user}", needs(bridge))
    view.create(secret("kafka-user", user, "not-the-password"))
    bridge.create(view)

    body = bridge.wait(view, stalled("KafkaAuthenticationFailed"))  # no grace period: no wait mends it
    assert view.message(body, "Stalled").startswith(
        f"Kafka at {kafka.sasl_bootstrap} refused the bridge's SASL SCRAM-SHA-512 login (Secret kafka-user, "
        "keys user and pass): a wrong password or an unknown user; fix the Secret or the user on the "
        "cluster: "
    )
    assert bridge.apps(view) == []

    view.kube.replace(
        secret("kafka-user", user, password)
        | {"metadata": {"name": "kafka-user", "namespace": NAMESPACE, "annotations": {ANNOTATION: "*"}}}
    )
    bridge.wait(view, STARTING)


# ---------------------------------------------------------------------------------------------------
# A probe that hangs: a fake, since no broker hangs on demand


class FakeBroker:
    """Stands in for `probe.probe_kafka` where a test needs an answer no broker gives on demand: answers with
    an authorizer and the operations given."""

    def __init__(self) -> None:
        self.topic_operations: frozenset[Operation] = frozenset({Operation.ALL})
        self.group_operations: frozenset[Operation] = frozenset({Operation.ALL})
        self.credentials: list[KafkaCredentials | None] = []

    def probe(
        self,
        access: RequiredAccess,
        kafka: KafkaSpec,
        credentials: KafkaCredentials | None,
        settings: CheckSettings | None = None,
        files: FileContents | None = None,
    ) -> ProbeResult:
        self.credentials.append(credentials)
        return ProbeResult(
            reachable=True,
            authorizer=Authorizer.PRESENT,
            topics={use.name: TopicAnswer(Lookup.FOUND, self.topic_operations) for use in access.topics},
            groups={
                group: GroupAnswer(Lookup.NOT_FOUND, self.group_operations)
                for group in access.consumer_groups
            },
            transactional_id=TransactionalIdAnswer(Access.ALLOWED),  # the journal's, every bridge has
        )


def test_checks_of_one_bridge_wait_for_nothing_of_another(
    view: View, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe that hangs (a silent cluster) holds only its own bridge; the probe is the test's fake."""
    stuck = Bridge("silent.invalid:9092")
    fine = Bridge("fine.invalid:9092")
    answers = FakeBroker()
    hanging, release = threading.Event(), threading.Event()

    def probe(access: RequiredAccess, kafka: KafkaSpec, *args: Any) -> ProbeResult:
        if kafka.bootstrap_servers == stuck.body["spec"]["kafka"]["bootstrapServers"]:
            hanging.set()
            release.wait(timeout=60)  # a real probe gives up at its deadline (15 s)
            return ProbeResult.unreachable("no answer")
        return answers.probe(access, kafka, None)

    monkeypatch.setattr(kafka_probe, "probe_kafka", probe)
    try:
        stuck.create(view)
        view.wait(hanging.is_set, "the stuck probe under way")
        fine.create(view)
        fine.wait(view, STARTING, timeout=10)
        checking = {"Ready": ("False", "CheckingKafka"), "Reconciling": ("True", "CheckingKafka")}
        stuck.wait(view, {**checking, "KafkaReady": ("Unknown", "CheckingKafka")})
        assert stuck.apps(view) == []
    finally:
        release.set()


# ---------------------------------------------------------------------------------------------------
# The gate and the credentials alone (no operator)


def gate_input(body: dict[str, Any], *routes: dict[str, Any]) -> tuple[JmsBridge, JobConfig]:
    bridge = JmsBridge.model_validate(body)
    return bridge, job_config(bridge, [JmsBridgeRoute.model_validate(r) for r in routes])


def test_the_gate_holds_what_was_not_checked_and_wakes_the_schedule() -> None:
    gate, woken = KafkaGate(), []
    key = (NAMESPACE, "simple")
    gate.subscribe(key, lambda: woken.append(1))
    bridge, config = gate_input(simple_bridge(), route("out"))

    first = gate(bridge, config)
    assert (first.open, first.transient, first.reason) == (False, True, "CheckingKafka")
    assert woken == [1] and gate.wanted(key) == config

    ready = GateVerdict(conditions=(Condition("KafkaReady", "True", "Verified", "checked"),))
    assert gate.record(key, config, ready, None) is True
    assert gate.record(key, config, ready, None) is False  # nothing new: no reconciliation
    assert gate(bridge, config) == ready

    # Spark sizing does not touch Kafka: the verdict stands. A new route's topic does not.
    bigger = simple_bridge()
    bigger["spec"]["spark"] = {"executor": {"instances": 3}}
    assert gate(*gate_input(bigger, route("out"))) == ready
    assert gate(*gate_input(simple_bridge(), route("out"), route("more", order=20, topic="new"))).reason == (
        "CheckingKafka"
    )
    assert len(woken) == 2
    gate.forget(key)
    assert gate.wanted(key) is None


class Secrets:
    """Enough of `Kube` for `read_credentials`."""

    def __init__(self, secret: dict[str, Any] | None = None, status: int | None = None) -> None:
        self.secret, self.status = secret, status

    def get(self, resource: Any, namespace: str, name: str) -> dict[str, Any] | None:
        if self.status is not None:
            raise ApiError(self.status, "Forbidden", "no")
        return self.secret


def test_credentials_come_from_the_bridges_secret() -> None:
    kafka = KafkaSpec.model_validate(
        {
            "bootstrapServers": "k:9092",
            "securityProtocol": "SASL_SSL",
            "sasl": {
                "credentialsSecretRef": {"name": "kafka-user", "usernameKey": "user", "passwordKey": "pass"}
            },
        }
    )

    def read(kube: Any) -> KafkaCredentials | None:
        return read_credentials(kube, NAMESPACE, kafka)

    assert read(Secrets(secret("kafka-user", "u", "p-secret"))) == KafkaCredentials("u", "p-secret")
    assert "p-secret" not in repr(read(Secrets(secret("kafka-user", "u", "p-secret"))))
    plain: Any = Secrets()
    assert read_credentials(plain, NAMESPACE, KafkaSpec(bootstrap_servers="k:9092")) is None
    with pytest.raises(CredentialsNotFound, match=r"Secret kafka-user \(.*\) not found in namespace apps"):
        read(Secrets(None))
    with pytest.raises(CredentialsNotFound, match="has no key 'pass'"):
        read(Secrets({"data": {"user": "dQ=="}}))
    with pytest.raises(CredentialsNotFound, match="key 'user' is not base64"):
        read(Secrets({"data": {"user": "!!", "pass": "cA=="}}))
    with pytest.raises(CredentialsNotFound, match="needs `get` on secrets"):
        read(Secrets(status=403))
    with pytest.raises(ApiError):  # anything else is the API server's trouble: retried, not a verdict
        read(Secrets(status=500))
    # Marks required: only from a Secret marked for the bridge (or for every bridge of the namespace).
    for mark, used in (("payments", False), ("orders,payments", True), ("*", True)):
        kube: Any = Secrets(secret("kafka-user", "u", "p-secret", marked_for=mark))
        if used:
            assert read_credentials(kube, NAMESPACE, kafka, "orders") == KafkaCredentials("u", "p-secret")
        else:
            with pytest.raises(CredentialsNotFound, match=r"kafka-user .* is not marked for bridge orders"):
                read_credentials(kube, NAMESPACE, kafka, "orders")


@pytest.mark.slow
def test_a_secret_not_marked_for_the_bridge_is_neither_used_nor_sent(view: View) -> None:
    """A bridge author names another team's Secret and points bootstrapServers at a host of their own. The
    Secret is marked for the other team's bridge only: the operator refuses the bridge, says how to mark
    it, and never connects to that host; once its owner marks it for this bridge, it is used."""
    thief_host = socket.create_server(("127.0.0.1", 0))
    thief_host.settimeout(0.2)
    try:
        thief = Bridge(
            f"127.0.0.1:{thief_host.getsockname()[1]}", securityProtocol="SASL_PLAINTEXT", sasl=SASL
        )
        view.create(secret("kafka-user", "payments", "their-password", marked_for="payments-bridge"))
        thief.create(view)
        body = thief.wait(view, {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")})
        assert view.message(body, "Stalled") == (
            f"Invalid spec: Secret kafka-user (read by the bridge's pods) is not marked for bridge "
            f"{thief.name}: its owner allows it with the annotation jmsbridge.dev/bridges={thief.name} "
            "(a comma-separated list of bridges, or * for every bridge of the namespace)."
        )
        with pytest.raises(TimeoutError):
            thief_host.accept()  # nobody came: the check stopped before connecting
        assert thief.apps(view) == []

        marked = {ANNOTATION: f"payments-bridge,{thief.name}"}
        view.kube.patch("v1", "Secret", "kafka-user", NAMESPACE, {"metadata": {"annotations": marked}})
        thief.wait(view, stalled("KafkaUnreachable"), timeout=60)  # now it tries: nothing answers there
    finally:
        thief_host.close()
