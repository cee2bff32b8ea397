"""The `jsonSchema` format: a JMS message as a JSON `io.confluent.connect.jms.Value` document
(formats/connect_jms.py) in the schema registry's wire format, keyed by an `io.confluent.connect.jms.Key`
document.

The schemas are those Confluent's JsonSchemaConverter derives from the connectors' Connect schemas: an
object per record with the record's name as `title`, each property's position as `connect.index`, integer
and floating-point widths as `connect.type`, an optional field as `oneOf` null or the type, a map as an
object of `additionalProperties`, bytes as base64 text (`connect.type: bytes`). As that converter writes
them, null fields are written (as null) and no field is `required`. A non-finite float is the string
"NaN", "Infinity" or "-Infinity", as Jackson writes one.

A reader takes the writer's schema by its id only to check that it is the JMS message record (its
`title`): the document itself says everything, and is checked field by field as it is read.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from bridge_job.formats import FormatError, KafkaRecord, utf8
from bridge_job.formats.connect_jms import (
    KEY_NAME,
    RECORDS,
    VALUE_NAME,
    key_document,
    message_of,
    value_document,
)
from bridge_job.formats.json_values import ENCODER, parse_json
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.formats.registry_wire import SchemaIds, SchemaLookup, framed, unframed
from bridge_job.message import Destination, JmsMessage

_PRIMITIVES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "bytes": {"type": "string", "connect.type": "bytes"},
    "int8": {"type": "integer", "connect.type": "int8"},
    "int16": {"type": "integer", "connect.type": "int16"},
    "int32": {"type": "integer", "connect.type": "int32"},
    "int64": {"type": "integer", "connect.type": "int64"},
    "float32": {"type": "number", "connect.type": "float32"},
    "float64": {"type": "number", "connect.type": "float64"},
}


def schema(record: str) -> dict[str, Any]:
    """The JSON Schema of one of the shape's records (VALUE_NAME, KEY_NAME)."""

    def json_type(connect_type: str) -> dict[str, Any]:
        if connect_type in _PRIMITIVES:
            return dict(_PRIMITIVES[connect_type])
        if connect_type.startswith("map:"):
            return {
                "type": "object",
                "additionalProperties": json_type(connect_type[4:]),
                "connect.type": "map",
            }
        if connect_type.startswith("array:"):
            return {"type": "array", "items": json_type(connect_type[6:])}
        properties = {}
        for index, field in enumerate(RECORDS[connect_type]):
            written = json_type(field.type)
            if field.optional:
                properties[field.name] = {"oneOf": [{"type": "null"}, written], "connect.index": index}
            else:
                properties[field.name] = {**written, "connect.index": index}
        return {"type": "object", "title": connect_type, "properties": properties}

    return json_type(record)


VALUE_SCHEMA = json.dumps(schema(VALUE_NAME), separators=(",", ":"))
KEY_SCHEMA = json.dumps(schema(KEY_NAME), separators=(",", ":"))


def encode(message: JmsMessage, origin: str | None, ids: SchemaIds) -> KafkaRecord:
    value = utf8(ENCODER.encode(value_document(message, json=True)), "value")
    key = utf8(ENCODER.encode(key_document(message)), "key")
    headers = [] if origin is None else [(ORIGIN_HEADER, utf8(origin, "origin"))]
    return KafkaRecord(value=framed(ids.value, value), headers=headers, key=framed(ids.key, key))


@functools.lru_cache(maxsize=64)
def _title(text: str, schema_id: int) -> str | None:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise FormatError(
            f"value: the writer's schema (registry id {schema_id}) is not JSON: {error}"
        ) from None
    title = document.get("title") if isinstance(document, dict) else None
    return title if isinstance(title, str) else None


def decode(record: KafkaRecord, destination: Destination | None, schemas: SchemaLookup) -> JmsMessage:
    """The JMS message a JSON Schema Value record carries; `schemas` finds the writer's schema by id."""
    schema_id, payload = unframed(record.value, "value")
    title = _title(schemas(schema_id), schema_id)
    if title != VALUE_NAME:
        raise FormatError(
            f"value: the writer's schema (registry id {schema_id}) is {title or 'untitled'}, "
            f"not the JMS message record {VALUE_NAME}"
        )
    document = parse_json(payload)
    if not isinstance(document, dict):
        raise FormatError("value: expected a JSON object")
    return message_of(document, destination, json=True)
