"""Shared fixtures: real brokers, one of each per test session, on free loopback ports."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from jmsbridge.artemis_server import ArtemisBroker
from jmsbridge.registry_server import ApicurioRegistry
from testbed.brokers import ActiveMqBroker, KafkaBroker, NatsServer
from tests.support import examples, shared_servers
from tests.support.jms_tls import TlsMaterial, tls_material
from tests.support.providers import PROVIDERS, JmsProvider

pytest_plugins = ["tests.apiserver.fixtures", "tests.operator.fixtures"]
assert examples.QUICK_PROFILE  # registered here, before hypothesis loads the profile a command line names
os.environ.setdefault("JMSBRIDGE_BRIDGE_KEY", os.urandom(24).hex())  # one key for every job the tests start


def pytest_addoption(parser: pytest.Parser) -> None:
    shared_servers.add_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    shared_servers.begin(config)


@pytest.fixture(scope="session")
def kafka(request: pytest.FixtureRequest) -> Iterator[KafkaBroker]:
    """Apache Kafka for this worker's tests, or for every worker's with `--share-brokers`."""
    yield from shared_servers.session_server(request.config, "kafka", lambda: KafkaBroker().start())


@pytest.fixture
def own_kafka() -> Iterator[KafkaBroker]:
    """A broker of the test's own, for tests that stop, kill or freeze it."""
    broker = KafkaBroker().start()
    yield broker
    broker.cleanup()


@pytest.fixture(scope="session")
def activemq(request: pytest.FixtureRequest) -> Iterator[ActiveMqBroker]:
    """ActiveMQ Classic for this worker's tests, or for every worker's with `--share-brokers`."""
    yield from shared_servers.session_server(request.config, "activemq", lambda: ActiveMqBroker().start())


@pytest.fixture(scope="session")
def apicurio() -> Iterator[ApicurioRegistry]:
    """Apicurio Registry (the Confluent API, in memory, BACKWARD compatibility), started when a test first
    asks for it."""
    registry = ApicurioRegistry().start()
    yield registry
    registry.cleanup()


# Users of `apicurio_login`: the bridge may write, the reader may only read.
REGISTRY_USERS = {"bridge": ("s3cret", "sr-developer"), "reader": ("r3ad", "sr-readonly")}


@pytest.fixture(scope="session")
def apicurio_login() -> Iterator[ApicurioRegistry]:
    """Apicurio Registry asking for HTTP Basic logins, with roles (REGISTRY_USERS)."""
    properties = {
        "quarkus.oidc.tenant-enabled": "false",
        "quarkus.http.auth.basic": "true",
        "quarkus.security.users.embedded.enabled": "true",
        "quarkus.security.users.embedded.plain-text": "true",
        "apicurio.authn.basic-client-credentials.enabled": "false",
        "apicurio.auth.enabled": "true",
        "apicurio.auth.role-based-authorization": "true",
    }
    for user, (password, role) in REGISTRY_USERS.items():
        properties[f"quarkus.security.users.embedded.users.{user}"] = password
        properties[f"quarkus.security.users.embedded.roles.{user}"] = role
    registry = ApicurioRegistry(properties=properties).start()
    yield registry
    registry.cleanup()


@pytest.fixture(scope="session")
def artemis() -> Iterator[ArtemisBroker]:
    """ActiveMQ Artemis with a login required, started when a test first asks for it."""
    broker = ArtemisBroker().start()
    yield broker
    broker.cleanup()


@pytest.fixture(scope="session")
def jms_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    """Certificates and Java stores for TLS to the JMS brokers (tests/support/jms_tls.py)."""
    return tls_material(tmp_path_factory.mktemp("jms-tls"))


@pytest.fixture(scope="session")
def tls_activemq(jms_tls: TlsMaterial) -> Iterator[ActiveMqBroker]:
    """ActiveMQ Classic with an ssl:// connector that asks for a client certificate of `jms-ca`."""
    broker = ActiveMqBroker(persistent=False, tls=jms_tls.broker).start()
    yield broker
    broker.cleanup()


@pytest.fixture(scope="session")
def tls_artemis(jms_tls: TlsMaterial) -> Iterator[ArtemisBroker]:
    """Artemis with a login required and a TLS acceptor that asks for a client certificate of `jms-ca`."""
    broker = ArtemisBroker(tls=jms_tls.broker).start()
    yield broker
    broker.cleanup()


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> JmsProvider:
    """Each JMS provider in turn (tests/support/providers.py)."""
    name = str(request.param)
    broker_fixture = "activemq" if name == "activemq" else "artemis"
    return JmsProvider(name, request.getfixturevalue(broker_fixture))


@pytest.fixture(scope="session")
def nats() -> Iterator[NatsServer]:
    """Core NATS (no JetStream). A test that stops or restarts a server starts its own."""
    server = NatsServer().start()
    yield server
    server.cleanup()


@pytest.fixture
def nats_jetstream() -> Iterator[NatsServer]:
    """A NATS server with JetStream, one per test: it starts in well under a second, and no test sees
    another's streams."""
    server = NatsServer(jetstream=True).start()
    yield server
    server.cleanup()


_exit_status: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status.append(int(exitstatus))
    shared_servers.end(session.config)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the test process without tearing down the JMS client's JVM: the tests' JVM (started in this
    process by JPype for their JMS producers and consumers) sometimes crashed while being destroyed at
    interpreter exit, after every test had passed, turning a green run into exit 139. Every broker and job
    the tests started is stopped by then, and nothing is left to flush but the output."""
    if _exit_status and "jpype" in sys.modules and sys.modules["jpype"].isJVMStarted():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[-1])
