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

import base64
import functools
import json
from typing import Any

from bridge_job.formats import FormatError, KafkaRecord, utf8
from bridge_job.formats.connect_jms import (
    ENTRY_OF_PROPERTY,
    KEY_NAME,
    PROPERTY_TYPES,
    RECORDS,
    VALUE_NAME,
    key_document,
    message_of,
    message_type,
    property_value,
)
from bridge_job.formats.json_values import ENCODER, parse_json, written
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.formats.registry_wire import SchemaIds, SchemaLookup, framed, unframed
from bridge_job.message import BodyType, Destination, Entries, EntryType, JmsMessage

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


# ---------------------------------------------------------------------------------------------------
# The Value as JSON text, written from templates: a PropertyValue is nine nulls and one value, and the
# JSON encoder would spend most of its time on those nulls. `value_document(message, json=True)` is the same
# document as data (tests hold the two equal).

_MARK = "\ue000value\ue000"  # a private-use placeholder no value holds


def _template(entry_type: EntryType) -> tuple[str, str]:
    """What a PropertyValue of this type writes before and after its value."""
    text = ENCODER.encode(property_value(entry_type, _MARK, json=True))
    head, _, tail = text.partition(ENCODER.encode(_MARK))
    return head, tail


_TEMPLATES = {entry_type: _template(entry_type) for entry_type in PROPERTY_TYPES}
_INTEGERS = frozenset({EntryType.BYTE, EntryType.SHORT, EntryType.INT, EntryType.LONG})


def _scalar(entry_type: EntryType, value: Any) -> str:
    if entry_type in _INTEGERS:
        return str(value)
    if entry_type is EntryType.BOOLEAN:
        return "true" if value else "false"
    if entry_type is EntryType.BYTES:
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    return ENCODER.encode(written(value))  # text, a char, a float (non-finite as its string)


def _property_value(entry_type: EntryType, value: Any) -> str:
    head, tail = _TEMPLATES[entry_type]
    return head if entry_type is EntryType.NULL else head + _scalar(entry_type, value) + tail


def _text(value: str | None) -> str:
    return "null" if value is None else ENCODER.encode(value)


def _destination(destination: Destination | None) -> str:
    if destination is None:
        return "null"
    return f'{{"destinationType":"{destination.kind.value}","name":{ENCODER.encode(destination.name)}}}'


def _entries(entries: Entries | None, body_type: BodyType, wanted: BodyType) -> str:
    if body_type is not wanted or entries is None:
        return "null"
    if isinstance(entries, dict) != (wanted is BodyType.MAP):
        where = "map: a MapMessage's entries are named" if wanted is BodyType.MAP else "stream: in order"
        raise FormatError(where)
    if isinstance(entries, dict):
        pairs = (f"{ENCODER.encode(n)}:{_property_value(e.type, e.value)}" for n, e in entries.items())
        return "{" + ",".join(pairs) + "}"
    return "[" + ",".join(_property_value(e.type, e.value) for e in entries) + "]"


def value_json(message: JmsMessage) -> str:
    """The Value record of a message as JSON text (fields in order, nulls written)."""
    body_type, kind = message.body_type, message_type(message)
    body = message.body
    properties = ",".join(
        f"{ENCODER.encode(name)}:{_property_value(ENTRY_OF_PROPERTY[p.type], p.value)}"
        for name, p in message.properties.items()
    )
    raw = "null"
    if body_type is BodyType.BYTES and isinstance(body, bytes):
        raw = '"' + base64.b64encode(body).decode("ascii") + '"'
    text = _text(body) if body_type is BodyType.TEXT and isinstance(body, str) else "null"
    return (
        f'{{"messageID":{_text(message.message_id)},"messageType":"{kind}",'
        f'"timestamp":{message.timestamp},"deliveryMode":{int(message.delivery_mode)},'
        f'"correlationID":{_text(message.correlation_id)},"replyTo":{_destination(message.reply_to)},'
        f'"destination":{_destination(message.destination)},'
        f'"redelivered":{"true" if message.redelivered else "false"},"type":{_text(message.type)},'
        f'"expiration":{message.expiration},"priority":{message.priority},"properties":{{{properties}}},'
        f'"bytes":{raw},"map":{_entries(message.entries, body_type, BodyType.MAP)},"text":{text},'
        f'"stream":{_entries(message.entries, body_type, BodyType.STREAM)}}}'
    )


def encode(message: JmsMessage, origin: str | None, ids: SchemaIds) -> KafkaRecord:
    value = utf8(value_json(message), "value")
    key = None if ids.key is None else framed(ids.key, utf8(ENCODER.encode(key_document(message)), "key"))
    headers = [] if origin is None else [(ORIGIN_HEADER, utf8(origin, "origin"))]
    return KafkaRecord(value=framed(ids.value, value), headers=headers, key=key)


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
