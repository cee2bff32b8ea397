"""The schema registry's door (bridge_job/kafka/registry.py) against a real Apicurio Registry: the bridge's
schemas registered under the topic's subjects, its records read by confluent-kafka's own deserializers with
every field equal, writers' schemas fetched by id, a refused schema and refused credentials as one clear
stop, and an outage waited out (through the tests' fault proxy) or stopped at the patience."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

from bridge_job.config import Format, SchemaRegistrySpec
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import FormatError, KafkaRecord, avro, connect_jms
from bridge_job.formats.codecs import registered
from bridge_job.kafka.registry import SchemaRegistry
from bridge_job.message import Destination
from jmsbridge.certificates import issue, make_ca
from jmsbridge.registry_server import ApicurioRegistry, TlsFiles
from tests.formats.test_schema_formats import connector_schema
from tests.support.every_type import every_type, with_headers
from tests.support.fault_proxy import FaultProxy
from tests.support.registered import confluent_client, confluent_deserializer

# Registries (JVMs) of the session, ready in about 5 s each: one worker starts them for every registry test.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("schema-registry")]

MESSAGES = with_headers(every_type(Destination.parse("queue://orders"), "one"))


class Heard:
    """An OutageListener that remembers what it was told."""

    def __init__(self) -> None:
        self.went, self.came = threading.Event(), threading.Event()

    def failing(self, what: str, error: object) -> None:
        self.went.set()

    def back(self, what: str) -> None:
        self.came.set()


def spec(url: str) -> SchemaRegistrySpec:
    return SchemaRegistrySpec.model_validate({"url": url})


@pytest.mark.parametrize("fmt", [Format.AVRO, Format.JSON_SCHEMA], ids=["avro", "jsonSchema"])
def test_confluents_deserializers_read_the_bridges_records_with_every_field_equal(
    apicurio: ApicurioRegistry, fmt: Format
) -> None:
    topic = f"orders-{fmt.value.lower()}"
    door = SchemaRegistry(spec(apicurio.url), patience_seconds=30)
    ids = door.ids(topic, fmt)
    assert door.ids(topic, fmt) is ids  # asked once
    client = confluent_client(apicurio.url)
    assert client.get_latest_version(f"{topic}-value").schema_id == ids.value
    assert client.get_latest_version(f"{topic}-key").schema_id == ids.key
    values, keys = confluent_deserializer(fmt, client), confluent_deserializer(fmt, client)
    codec = registered(fmt)
    for message in MESSAGES:
        record = codec.encode(message, "bridge-a", ids)
        read = values(record.value, SerializationContext(topic, MessageField.VALUE))
        assert read == connect_jms.value_document(message, json=fmt is Format.JSON_SCHEMA)
        assert keys(record.key, SerializationContext(topic, MessageField.KEY)) == {
            "messageID": message.message_id
        }
        assert codec.decode(record, None, door.schema) == message  # and back, the writer's schema by id


def test_a_writers_schema_is_fetched_once_and_an_unknown_id_is_a_soft_failure(
    apicurio: ApicurioRegistry,
) -> None:
    """Known and unknown ids alike are asked once: a producer writing ids at random costs the registry one
    request each, and the process a bounded memory (SCHEMAS_KEPT)."""
    proxy = FaultProxy("127.0.0.1", apicurio.port)
    try:
        door = SchemaRegistry(spec(f"http://{proxy.address}/apis/ccompat/v7"), patience_seconds=1)
        ids = door.ids("fetched", Format.AVRO)
        assert json.loads(door.schema(ids.value))["name"] == "Value"
        unknown = KafkaRecord(value=b"\x00" + (987654).to_bytes(4, "big") + b"x")
        with pytest.raises(FormatError, match="schema id 987654 is not in the schema registry"):
            avro.decode(unknown, None, door.schema)
        proxy.refuse()  # from now on, asking the registry would wait out an outage and then stop
        assert json.loads(door.schema(ids.value))["name"] == "Value"
        with pytest.raises(FormatError, match="schema id 987654 is not in the schema registry"):
            avro.decode(unknown, None, door.schema)
    finally:
        proxy.close()


def test_a_schema_the_subject_does_not_accept_stops_the_bridge_naming_subject_and_rule(
    apicurio: ApicurioRegistry,
) -> None:
    """The subject already holds plain strings; BACKWARD (the registry's rule here, Confluent's default)
    refuses a record schema that cannot read them."""
    confluent_client(apicurio.url).register_schema("legacy-value", Schema('"string"', "AVRO"))
    door = SchemaRegistry(spec(apicurio.url), patience_seconds=30)
    with pytest.raises(BridgeStopped) as stopped:
        door.ids("legacy", Format.AVRO)
    assert (
        f"the schema registry at {apicurio.url} refused the bridge's AVRO schema under subject legacy-value"
        in str(stopped.value)
    )
    assert "not compatible" in str(stopped.value) and "compatibility rule" in str(stopped.value)


def test_an_unreachable_registry_is_waited_out_and_then_the_bridge_goes_on(
    apicurio: ApicurioRegistry,
) -> None:
    proxy = FaultProxy("127.0.0.1", apicurio.port)
    try:
        proxy.refuse()
        heard = Heard()
        door = SchemaRegistry(spec(f"http://{proxy.address}/apis/ccompat/v7"), 60, heard)
        answered: list[Any] = []
        asking = threading.Thread(target=lambda: answered.append(door.ids("waited", Format.JSON_SCHEMA)))
        asking.start()
        assert heard.went.wait(30), "the door never failed against the refusing proxy"
        assert not answered
        proxy.heal()
        asking.join(timeout=30)
        assert answered and answered[0].value > 0
        assert heard.came.is_set()
    finally:
        proxy.close()


def test_an_outage_past_the_patience_stops_with_one_line_naming_the_registry(
    apicurio: ApicurioRegistry,
) -> None:
    proxy = FaultProxy("127.0.0.1", apicurio.port)
    try:
        proxy.refuse()
        url = f"http://{proxy.address}/apis/ccompat/v7"
        door = SchemaRegistry(spec(url), patience_seconds=1)
        with pytest.raises(BridgeStopped) as stopped:
            door.ids("never", Format.AVRO)
        line = str(stopped.value)
        subject = "registering the AVRO schema of subject never-value"
        assert f"the schema registry at {url} while {subject}: unreachable for " in line
        assert "check spec.kafka.schemaRegistry.url and that the registry is up" in line
    finally:
        proxy.close()


def test_the_bridges_schema_is_a_compatible_next_version_of_the_connectors_own(
    apicurio: ApicurioRegistry,
) -> None:
    """A topic Confluent's JMS connector wrote to: its subject holds the connector's Value schema, and the
    bridge's registers as the next version under BACKWARD (it only adds optional fields)."""
    client = confluent_client(apicurio.url)
    connector_id = client.register_schema(
        "from-connector-value", Schema(json.dumps(connector_schema()), "AVRO")
    )
    ids = SchemaRegistry(spec(apicurio.url), patience_seconds=30).ids("from-connector", Format.AVRO)
    assert ids.value != connector_id
    assert client.get_latest_version("from-connector-value").schema_id == ids.value


@pytest.mark.parametrize(
    ("user", "password", "says"),
    [
        ("bridge", "wrong", "did not accept the credentials of Secret registry-user"),
        ("reader", "r3ad", "does not allow this call with the credentials of Secret registry-user"),
    ],
)
def test_refused_credentials_stop_the_bridge_at_once_naming_the_secret(
    apicurio_login: ApicurioRegistry, monkeypatch: pytest.MonkeyPatch, user: str, password: str, says: str
) -> None:
    monkeypatch.setenv("JMSBRIDGE_REGISTRY_USERNAME", user)
    monkeypatch.setenv("JMSBRIDGE_REGISTRY_PASSWORD", password)
    login = SchemaRegistrySpec.model_validate(
        {"url": apicurio_login.url, "credentialsSecretRef": {"name": "registry-user"}}
    )
    heard = Heard()
    with pytest.raises(BridgeStopped, match=says):
        SchemaRegistry(login, patience_seconds=300, listener=heard).ids("guarded", Format.AVRO)
    assert not heard.went.is_set()  # no outage: a refusal, at once
    monkeypatch.setenv("JMSBRIDGE_REGISTRY_USERNAME", "bridge")
    monkeypatch.setenv("JMSBRIDGE_REGISTRY_PASSWORD", "s3cret")
    assert SchemaRegistry(login, patience_seconds=30).ids("guarded", Format.AVRO).value > 0


@pytest.fixture(scope="module")
def apicurio_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApicurioRegistry, Path]]:
    """A registry on https only, its certificate signed by a CA made for the run; and another CA."""
    directory = tmp_path_factory.mktemp("registry-tls")
    ca = make_ca(directory)
    certificate, key = issue(directory, "registry", "localhost")
    make_ca(directory, "other", "jmsbridge-test-other")
    registry = ApicurioRegistry(tls=TlsFiles(certificate, key, ca)).start()
    yield registry, directory
    registry.cleanup()


def test_over_tls_the_ca_file_is_trusted_and_another_ca_stops_the_bridge_naming_the_file(
    apicurio_tls: tuple[ApicurioRegistry, Path],
) -> None:
    registry, directory = apicurio_tls

    def door(ca: Path) -> SchemaRegistry:
        tls_spec = SchemaRegistrySpec.model_validate({"url": registry.url, "tls": {"caFile": str(ca)}})
        return SchemaRegistry(tls_spec, patience_seconds=300, listener=heard)

    heard = Heard()
    assert door(directory / "ca.crt").ids("secure", Format.AVRO).value > 0
    with pytest.raises(BridgeStopped, match=f"TLS failed \\(trusting {directory / 'other.crt'}"):
        door(directory / "other.crt").ids("secure", Format.AVRO)
    assert not heard.went.is_set()  # no outage: a refusal, at once


def test_a_route_that_keys_its_records_itself_registers_no_key_schema(apicurio: ApicurioRegistry) -> None:
    """Its topic's key subject may hold a key schema of its own (a string): the bridge leaves it alone."""
    client = confluent_client(apicurio.url)
    client.register_schema("own-keys-key", Schema('"string"', "AVRO"))
    ids = SchemaRegistry(spec(apicurio.url), patience_seconds=30).ids("own-keys", Format.AVRO, keyed=False)
    assert ids.key is None and client.get_latest_version("own-keys-value").schema_id == ids.value
    assert json.loads(client.get_latest_version("own-keys-key").schema.schema_str or "") == "string"
