"""The Kafka checks of a bridge with routes of format avro or jsonSchema also register their schemas, as
the bridge's own login, at a real Apicurio Registry: the status says the registry took them, or which
subject refused which schema, or which credentials it refused; a registry that does not answer is
transient (SchemaRegistryUnreachable) until the grace period ends."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka.schema_registry import Schema
from jmsbridge_operator.kafka_checks.evaluation import CheckResult, CheckSettings, CheckState
from jmsbridge_operator.kafka_checks.probe import check_bridge

from bridge_job.config import JobConfig
from jmsbridge.registry_server import ApicurioRegistry
from testbed.brokers import KafkaBroker
from tests.operator.kafka_checks.bridges import bridge_config
from tests.support.fault_proxy import FaultProxy
from tests.support.registered import confluent_client

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("schema-registry"),
]  # the session's registries, on the worker that has them


def check(
    config: JobConfig,
    state: CheckState | None = None,
    settings: CheckSettings | None = None,
    login: tuple[str, str] | None = None,
) -> CheckResult:
    return asyncio.run(
        check_bridge(
            config, None, now=time.time(), state=state, settings=settings, registry_credentials=login
        )
    )


def avro_bridge(kafka: KafkaBroker, url: str, **registry: object) -> tuple[JobConfig, str]:
    topic, journal = f"orders-{uuid.uuid4().hex[:8]}", f"journal-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic, journal)
    config = bridge_config(
        kafka.bootstrap, writes=[topic], journal=journal, registry={"url": url, **registry}, fmt="avro"
    )
    return config, topic


def test_the_schemas_are_registered_before_the_bridge_starts(
    kafka: KafkaBroker, apicurio: ApicurioRegistry
) -> None:
    config, topic = avro_bridge(kafka, apicurio.url)
    result = check(config)
    assert result.ready, result.condition
    assert f"registered 2 schemas at {apicurio.url}" in result.condition.message
    subjects = set(confluent_client(apicurio.url).get_subjects())
    assert {f"{topic}-key", f"{topic}-value"} <= subjects
    assert check(config).ready  # the same schemas again: the registry answers their ids


def test_a_subject_that_refuses_the_schema_stalls_the_bridge_naming_it(
    kafka: KafkaBroker, apicurio: ApicurioRegistry
) -> None:
    config, topic = avro_bridge(kafka, apicurio.url)
    confluent_client(apicurio.url).register_schema(f"{topic}-value", Schema('"string"', "AVRO"))
    result = check(config)
    assert result.stalled
    assert result.condition.reason == "SchemaIncompatible"
    assert f"refused the bridge's AVRO schema under subject {topic}-value" in result.condition.message
    assert "compatibility rule" in result.condition.message


@pytest.mark.parametrize(
    ("login", "says"),
    [
        (("bridge", "wrong"), "did not accept the credentials of Secret registry-user"),
        (("reader", "r3ad"), "does not allow this call with the credentials of Secret registry-user"),
    ],
)
def test_refused_credentials_stall_the_bridge_naming_the_secret(
    kafka: KafkaBroker, apicurio_login: ApicurioRegistry, login: tuple[str, str], says: str
) -> None:
    config, _ = avro_bridge(kafka, apicurio_login.url, credentialsSecretRef={"name": "registry-user"})
    refused = check(config, login=login)
    assert refused.stalled
    assert refused.condition.reason == "SchemaRegistryRefused"
    assert says in refused.condition.message
    assert login[1] not in refused.condition.message
    assert check(config, login=("bridge", "s3cret")).ready


def test_a_registry_that_does_not_answer_is_transient_then_stalls_after_the_grace_period(
    kafka: KafkaBroker, apicurio: ApicurioRegistry
) -> None:
    proxy = FaultProxy("127.0.0.1", apicurio.port)
    try:
        url = f"http://{proxy.address}/apis/ccompat/v7"
        config, _ = avro_bridge(kafka, url)
        proxy.refuse()
        settings = CheckSettings(grace_seconds=60)
        first = check(config, settings=settings)
        assert first.reconciling
        assert first.condition.reason == "SchemaRegistryUnreachable"
        assert first.condition.message.startswith(f"the schema registry at {url} did not answer")
        late = CheckState(unreachable_since=time.time() - 61, failures=3)
        assert check(config, state=late, settings=settings).stalled
        proxy.heal()
        assert check(config, state=first.state, settings=settings).ready
    finally:
        proxy.close()
