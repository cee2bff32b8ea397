"""The schema registry as the flows see it (formats.registry_wire.Schemas), answering from memory: the
routes' converters take it as a parameter. The registry's own answers, against a real Apicurio Registry:
tests/kafka/test_registry.py."""

from __future__ import annotations

from typing import Any

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


def confluent_client(url: str) -> Any:
    """Confluent's registry client, as a consumer of the bridge's records has it; a request that gets no
    answer fails after 10 s instead of waiting for ever."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": url, "timeout": 10})


def confluent_deserializer(fmt: Format | str, client: Any) -> Any:
    """Confluent's deserializer of `fmt` with the subjects named by topic (`TopicNameStrategy`, the bridge's
    default). Left to itself, confluent-kafka 2.16 first asks the registry for the topic's "associations",
    an API of Confluent's own registry: Apicurio has sometimes left that request unanswered."""
    from confluent_kafka.schema_registry import topic_subject_name_strategy
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    conf = {"subject.name.strategy": topic_subject_name_strategy}
    if str(getattr(fmt, "value", fmt)) == "avro":
        return AvroDeserializer(client, conf=conf)
    return JSONDeserializer(None, schema_registry_client=client, conf=conf)
