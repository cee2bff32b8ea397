"""Which schemas the `avro` and `jsonSchema` routes register, and under which subjects: the job registers
them (bridge_job/kafka/registry.py) and the operator's check registers them first (its Kafka checks)."""

from __future__ import annotations

from bridge_job.config import Direction, Format, JobConfig, SubjectNameStrategy
from bridge_job.formats import avro_schema, json_schema
from bridge_job.formats.connect_jms import KEY_NAME, VALUE_NAME

# What each registered format registers: its key and value schemas, and the registry's name of its type.
SCHEMAS: dict[Format, tuple[str, str, str]] = {
    Format.AVRO: (avro_schema.KEY_SCHEMA, avro_schema.VALUE_SCHEMA, "AVRO"),
    Format.JSON_SCHEMA: (json_schema.KEY_SCHEMA, json_schema.VALUE_SCHEMA, "JSON"),
}


def subject(strategy: SubjectNameStrategy, topic: str, field: str) -> str:
    """The subject of a topic's key or value schema (`field`: "key" or "value")."""
    record = KEY_NAME if field == "key" else VALUE_NAME
    if strategy is SubjectNameStrategy.RECORD_NAME:
        return record
    if strategy is SubjectNameStrategy.TOPIC_RECORD_NAME:
        return f"{topic}-{record}"
    return f"{topic}-{field}"


def registrations(config: JobConfig) -> tuple[tuple[str, str, str], ...]:
    """(subject, schema, type) of every schema the jmsToKafka routes register, each once, in route order: the
    value's, and the key's unless the route keys its records itself."""
    spec = config.bridge.kafka.schema_registry
    if spec is None:
        return ()
    found: dict[tuple[str, str], str] = {}
    for route in config.routes_for(Direction.JMS_TO_KAFKA):
        if route.spec.format.registered:
            key_schema, value_schema, schema_type = SCHEMAS[route.spec.format]
            fields = [("value", value_schema)] + ([("key", key_schema)] if route.spec.key is None else [])
            for field, text in fields:
                found.setdefault(
                    (subject(spec.subject_name_strategy, route.spec.topic, field), text), schema_type
                )
    return tuple((name, text, schema_type) for (name, text), schema_type in found.items())
