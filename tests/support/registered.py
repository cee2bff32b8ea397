"""The schema registry as the flows see it (formats.registry_wire.Schemas), answering from memory: the
routes' converters take it as a parameter. The registry's own answers, against a real Apicurio Registry:
tests/kafka/test_registry.py."""

from __future__ import annotations

from bridge_job.config import Format
from bridge_job.formats import avro, json_schema
from bridge_job.formats.registry_wire import SchemaIds

IDS = {Format.AVRO: SchemaIds(key=1, value=2), Format.JSON_SCHEMA: SchemaIds(key=3, value=4)}
TEXTS = {2: avro.VALUE_SCHEMA, 4: json_schema.VALUE_SCHEMA}
# spec.kafka of a bridge with a registry
KAFKA = {"bootstrapServers": "127.0.0.1:9092", "schemaRegistry": {"url": "http://registry:8080"}}


class Registered:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def ids(self, topic: str, fmt: Format, keyed: bool) -> SchemaIds:
        self.asked.append(topic)
        return IDS[fmt] if keyed else SchemaIds(IDS[fmt].value)

    def schema(self, schema_id: int) -> str:
        return TEXTS[schema_id]
