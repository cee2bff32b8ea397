"""Apicurio Registry under test (jmsbridge/registry_server.py): it runs here on the JDK beside Java 17, and
a Confluent client (confluent-kafka's `schema_registry`) registers, writes and reads records against its
Confluent-compatible API, with the registry's compatibility rule enforced. The schema-registry formats
(issue 47) stand on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from jmsbridge.registry_server import ApicurioRegistry, java_major, registry_java
from tests.support.registered import confluent_client, confluent_deserializer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("schema-registry"),
]  # the session's registry (a JVM, ready in about 5 s)

ORDER_V1 = """{"type": "record", "name": "Order", "namespace": "test.registry",
  "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"}]}"""
# A reader of v1 records cannot fill `currency` (no default): BACKWARD refuses it.
ORDER_INCOMPATIBLE = """{"type": "record", "name": "Order", "namespace": "test.registry",
  "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
             {"name": "currency", "type": "string"}]}"""


def test_the_registry_runs_on_a_java_21_or_newer() -> None:
    assert java_major(Path(registry_java()).parents[1]) >= 21


def test_a_confluent_client_writes_and_reads_records_in_the_wire_format(apicurio: ApicurioRegistry) -> None:
    client = confluent_client(apicurio.url)
    context = SerializationContext("orders", MessageField.VALUE)
    data = AvroSerializer(client, ORDER_V1)({"id": "o-1", "amount": 42}, context)
    assert data is not None and data[0] == 0  # the Confluent wire format: magic byte, schema id, payload
    schema_id = int.from_bytes(data[1:5], "big")
    assert client.get_latest_version("orders-value").schema_id == schema_id  # registered under <topic>-value
    assert confluent_deserializer("avro", client)(data, context) == {"id": "o-1", "amount": 42}


def test_an_incompatible_schema_is_refused_under_the_default_rule(apicurio: ApicurioRegistry) -> None:
    client = confluent_client(apicurio.url)
    context = SerializationContext("payments", MessageField.VALUE)
    AvroSerializer(client, ORDER_V1)({"id": "p-1", "amount": 1}, context)
    with pytest.raises(SchemaRegistryError) as refused:
        AvroSerializer(client, ORDER_INCOMPATIBLE)({"id": "p-2", "amount": 2, "currency": "EUR"}, context)
    assert refused.value.http_status_code == 409
