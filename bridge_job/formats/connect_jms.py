"""The record shape of Confluent's JMS source connectors, for the `avro` and `jsonSchema` formats.

Confluent's JMS, IBM MQ, ActiveMQ, TIBCO, Solace and WebLogic source connectors write each JMS message as
one fixed record, `io.confluent.connect.jms.Value`, keyed by `io.confluent.connect.jms.Key`
{messageID}. The bridge writes the same record, field for field, so that their consumers read the
bridge's records unchanged (docs/formats.md, "avro and jsonSchema"; the research behind it:
docs/design/schema-registry-formats.md):

    Value: messageID, messageType, timestamp, deliveryMode, correlationID, replyTo, destination,
           redelivered, type, expiration, priority, properties, bytes, map, text, (+ stream)
    Destination: destinationType ("queue" | "topic"), name
    PropertyValue: propertyType, boolean, byte, short, integer, long, float, double, string, bytes

Where the bridge adds to the connectors' shape (each addition is an optional field or a value their
schema already holds, so their readers resolve it):

- `stream`, last in Value: a StreamMessage's items as PropertyValues (the connectors carry no stream body).
- PropertyValue `char` (a map entry's or stream item's Java char) keeps the character in `string`;
  `null-value` (an entry set to null) has every value field null, as the connectors write it.
- `messageID` is optional, as the connectors' `use.permissive.schema` has it: a producer may disable
  message ids.

This module is the shape alone, as plain Python documents (the dicts fastavro and `json` read and
write); formats/avro.py and formats/json_schema.py put it on the wire.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bridge_job.formats import FormatError
from bridge_job.formats.json_values import floating, written
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    Entries,
    Entry,
    EntryType,
    JmsMessage,
    Property,
    PropertyType,
    to_float32,
)

NAMESPACE = "io.confluent.connect.jms"
VALUE_NAME = f"{NAMESPACE}.Value"
KEY_NAME = f"{NAMESPACE}.Key"
DESTINATION_NAME = f"{NAMESPACE}.Destination"
PROPERTY_VALUE_NAME = f"{NAMESPACE}.PropertyValue"


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a record: its name, its Connect type and whether it may be null.

    `type` is a Connect primitive (string, int8, int16, int32, int64, float32, float64, boolean, bytes),
    a record's full name, or `map:`/`array:` followed by the record its values are.
    """

    name: str
    type: str
    optional: bool = False


# The PropertyValue's value fields, in order, by the JMS type each holds.
VALUE_FIELDS: tuple[tuple[str, str], ...] = (
    ("boolean", "boolean"),
    ("byte", "int8"),
    ("short", "int16"),
    ("integer", "int32"),
    ("long", "int64"),
    ("float", "float32"),
    ("double", "float64"),
    ("string", "string"),
    ("bytes", "bytes"),
)

RECORDS: dict[str, tuple[Field, ...]] = {
    KEY_NAME: (Field("messageID", "string", optional=True),),
    DESTINATION_NAME: (Field("destinationType", "string"), Field("name", "string")),
    PROPERTY_VALUE_NAME: (
        Field("propertyType", "string"),
        *(Field(name, connect_type, optional=True) for name, connect_type in VALUE_FIELDS),
    ),
    VALUE_NAME: (
        Field("messageID", "string", optional=True),
        Field("messageType", "string"),
        Field("timestamp", "int64"),
        Field("deliveryMode", "int32"),
        Field("correlationID", "string", optional=True),
        Field("replyTo", DESTINATION_NAME, optional=True),
        Field("destination", DESTINATION_NAME, optional=True),
        Field("redelivered", "boolean"),
        Field("type", "string", optional=True),
        Field("expiration", "int64"),
        Field("priority", "int32"),
        Field("properties", f"map:{PROPERTY_VALUE_NAME}"),
        Field("bytes", "bytes", optional=True),
        Field("map", f"map:{PROPERTY_VALUE_NAME}", optional=True),
        Field("text", "string", optional=True),
        Field("stream", f"array:{PROPERTY_VALUE_NAME}", optional=True),
    ),
}

MESSAGE_TYPES: dict[BodyType, str] = {
    BodyType.TEXT: "text",
    BodyType.BYTES: "bytes",
    BodyType.MAP: "map",
    BodyType.STREAM: "stream",
    BodyType.OBJECT: "object",
}
BODY_TYPES = {name: body_type for body_type, name in MESSAGE_TYPES.items()}

# An entry's JMS type -> its propertyType and the value field that holds it (None: every field is null).
PROPERTY_TYPES: dict[EntryType, tuple[str, str | None]] = {
    EntryType.BOOLEAN: ("boolean", "boolean"),
    EntryType.BYTE: ("byte", "byte"),
    EntryType.SHORT: ("short", "short"),
    EntryType.INT: ("integer", "integer"),
    EntryType.LONG: ("long", "long"),
    EntryType.FLOAT: ("float", "float"),
    EntryType.DOUBLE: ("double", "double"),
    EntryType.STRING: ("string", "string"),
    EntryType.CHAR: ("char", "string"),
    EntryType.BYTES: ("bytes", "bytes"),
    EntryType.NULL: ("null-value", None),
}
_ENTRY_TYPES = {name: (entry_type, value_field) for entry_type, (name, value_field) in PROPERTY_TYPES.items()}
_NULL_VALUE = {name: None for name, _ in VALUE_FIELDS}
ENTRY_OF_PROPERTY = {property_type: EntryType(property_type.value) for property_type in PropertyType}
PROPERTY_OF_ENTRY = {entry_type: property_type for property_type, entry_type in ENTRY_OF_PROPERTY.items()}


# ---------------------------------------------------------------------------------------------------
# JMS message -> documents


def key_document(message: JmsMessage) -> dict[str, Any]:
    return {"messageID": message.message_id}


def value_document(message: JmsMessage, json: bool = False) -> dict[str, Any]:
    """The Value record of a message, fields in order. A body the bridge does not carry is refused.

    With `json`, as JSON holds it (Connect's JSON Schema converter writes it so): bytes in base64, a
    non-finite float as the string "NaN", "Infinity" or "-Infinity".
    """
    body_type = message.body_type
    entries = message.entries
    return {
        "messageID": message.message_id,
        "messageType": message_type(message),
        "timestamp": message.timestamp,
        "deliveryMode": int(message.delivery_mode),
        "correlationID": message.correlation_id,
        "replyTo": destination_document(message.reply_to),
        "destination": destination_document(message.destination),
        "redelivered": message.redelivered,
        "type": message.type,
        "expiration": message.expiration,
        "priority": message.priority,
        "properties": {
            name: property_value(ENTRY_OF_PROPERTY[p.type], p.value, json)
            for name, p in message.properties.items()
        },
        "bytes": _bytes(message.body, json) if body_type is BodyType.BYTES else None,
        "map": _map_document(entries, json) if body_type is BodyType.MAP else None,
        "text": message.body if body_type is BodyType.TEXT else None,
        "stream": _stream_document(entries, json) if body_type is BodyType.STREAM else None,
    }


def message_type(message: JmsMessage) -> str:
    """The record's `messageType`; a message without a body the record carries is refused."""
    found = MESSAGE_TYPES.get(message.body_type)
    if found is None or message.body_type is BodyType.OBJECT:
        raise FormatError(f"messageType: a {message.body_type.value} has no body this record carries")
    return found


def destination_document(destination: Destination | None) -> dict[str, str] | None:
    if destination is None:
        return None
    return {"destinationType": destination.kind.value, "name": destination.name}


def property_value(entry_type: EntryType, value: Any, json: bool = False) -> dict[str, Any]:
    """A PropertyValue: `propertyType` and the one value field of the entry's type (the others null)."""
    property_type, value_field = PROPERTY_TYPES[entry_type]
    document: dict[str, Any] = {"propertyType": property_type, **_NULL_VALUE}
    if value_field is not None:
        document[value_field] = (
            value if not json else _bytes(value) if isinstance(value, bytes) else written(value)
        )
    return document


def _bytes(data: Any, json: bool = True) -> Any:
    return base64.b64encode(data).decode("ascii") if json and isinstance(data, bytes) else data


def _map_document(entries: Entries | None, json: bool) -> dict[str, Any] | None:
    if entries is None:
        return None
    if not isinstance(entries, dict):
        raise FormatError("map: a MapMessage's entries are named")
    return {name: property_value(entry.type, entry.value, json) for name, entry in entries.items()}


def _stream_document(entries: Entries | None, json: bool) -> list[dict[str, Any]] | None:
    if entries is None:
        return None
    if isinstance(entries, dict):
        raise FormatError("stream: a StreamMessage's items are in order, not named")
    return [property_value(entry.type, entry.value, json) for entry in entries]


# ---------------------------------------------------------------------------------------------------
# documents -> JMS message


def message_of(value: Mapping[str, Any], destination: Destination | None, json: bool = False) -> JmsMessage:
    """The JMS message a Value document describes (as fastavro or, with `json`, as `json` reads it);
    `destination` (the route's) is used when the record names none. FormatError names the offending
    field."""
    message_type = value.get("messageType")
    body_type = BODY_TYPES.get(message_type) if isinstance(message_type, str) else None
    if body_type is None:
        expected = ", ".join(MESSAGE_TYPES.values())
        raise FormatError(f"messageType: {message_type!r} is not one of {expected}")
    target = destination_of(value.get("destination"), "destination") or destination
    if target is None:
        raise FormatError("destination: missing, and the route names no destination")
    body: str | bytes | None = None
    entries: Entries | None = None
    if body_type is BodyType.TEXT:
        body = _optional(value, "text", str, "a string")
    elif body_type is BodyType.BYTES:
        body = (
            _base64(_optional(value, "bytes", str, "base64 text"), "bytes")
            if json
            else _optional(value, "bytes", bytes, "bytes")
        )
    elif body_type is BodyType.MAP:
        raw_map = _optional(value, "map", dict, "a map")
        entries = (
            None
            if raw_map is None
            else {str(k): entry_of(v, f"map[{k!r}]", json) for k, v in raw_map.items()}
        )
    elif body_type is BodyType.STREAM:
        raw_stream = _optional(value, "stream", list, "an array")
        entries = (
            None
            if raw_stream is None
            else tuple(entry_of(v, f"stream[{i}]", json) for i, v in enumerate(raw_stream))
        )
    return JmsMessage(
        destination=target,
        body_type=body_type,
        body=body,
        entries=entries,
        message_id=_optional(value, "messageID", str, "a string"),
        correlation_id=_optional(value, "correlationID", str, "a string"),
        reply_to=destination_of(value.get("replyTo"), "replyTo"),
        type=_optional(value, "type", str, "a string"),
        priority=checked_priority(_required(value, "priority", int)),
        delivery_mode=checked_delivery_mode(_required(value, "deliveryMode", int)),
        expiration=_long(value, "expiration"),
        timestamp=_long(value, "timestamp"),
        redelivered=_required(value, "redelivered", bool),
        properties=_properties(value.get("properties"), json),
    )


def destination_of(document: Any, where: str) -> Destination | None:
    if document is None:
        return None
    if not isinstance(document, Mapping):
        raise FormatError(f"{where}: expected a Destination record")
    return checked_destination(document.get("destinationType"), document.get("name"), where)


def checked_destination(kind: Any, name: Any, where: str) -> Destination:
    if kind not in ("queue", "topic"):
        raise FormatError(f"{where}.destinationType: {kind!r} is neither 'queue' nor 'topic'")
    if not isinstance(name, str) or not name:
        raise FormatError(f"{where}.name: expected a destination name")
    return Destination(DestinationKind(kind), name)


def checked_delivery_mode(mode: int) -> DeliveryMode:
    if mode not in (1, 2):
        raise FormatError(f"deliveryMode: {mode} is neither 1 (non-persistent) nor 2 (persistent)")
    return DeliveryMode(mode)


def checked_priority(priority: int) -> int:
    if not 0 <= priority <= 9:
        raise FormatError(f"priority: {priority} is not between 0 and 9")
    return priority


def entry_of(document: Any, where: str, json: bool = False) -> Entry:
    """The typed value a PropertyValue holds."""
    entry_type, value = _typed(document, where, json)
    try:
        return Entry(entry_type, value)
    except ValueError as error:
        raise FormatError(f"{where}: {error}") from None


def _typed(document: Any, where: str, json: bool) -> tuple[EntryType, Any]:
    if not isinstance(document, Mapping):
        raise FormatError(f"{where}: expected a PropertyValue record")
    property_type = document.get("propertyType")
    known = _ENTRY_TYPES.get(property_type) if isinstance(property_type, str) else None
    if known is None:
        expected = ", ".join(name for name, _ in PROPERTY_TYPES.values())
        raise FormatError(f"{where}.propertyType: {property_type!r} is not one of {expected}")
    entry_type, value_field = known
    if value_field is None:
        return entry_type, None
    raw = document.get(value_field)
    if raw is None:
        raise FormatError(f"{where}.{value_field}: null, but propertyType is {property_type}")
    if json and entry_type is EntryType.FLOAT:
        raw = to_float32(floating(raw, f"{where}.float"))  # JSON's number is a double
    elif json and entry_type is EntryType.DOUBLE:
        raw = floating(raw, f"{where}.double")
    elif json and entry_type is EntryType.BYTES:
        raw = _base64(raw, f"{where}.bytes")
    return entry_type, raw


def _properties(document: Any, json: bool) -> dict[str, Property]:
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise FormatError("properties: expected a map of PropertyValue records")
    properties = {}
    for name, item in document.items():
        where = f"properties[{name!r}]"
        entry_type, value = _typed(item, where, json)
        property_type = PROPERTY_OF_ENTRY.get(entry_type)
        if property_type is None:
            raise FormatError(f"{where}: a JMS property cannot be of type {entry_type.value}")
        try:
            properties[str(name)] = Property(property_type, value)
        except ValueError as error:
            raise FormatError(f"{where}: {error}") from None
    return properties


def _required(document: Mapping[str, Any], name: str, kind: type) -> Any:
    value = document.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FormatError(f"{name}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _long(document: Mapping[str, Any], name: str) -> int:
    """A Java long: JSON's integers have no bound, the JMS client's do."""
    found: int = _required(document, name, int)
    if not -(2**63) <= found < 2**63:
        raise FormatError(f"{name}: {found} is out of range for a long")
    return found


def _optional(document: Mapping[str, Any], name: str, kind: type, what: str) -> Any:
    value = document.get(name)
    if value is not None and not isinstance(value, kind):
        raise FormatError(f"{name}: expected {what} or null, got {type(value).__name__}")
    return value


def _base64(text: str | None, where: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise FormatError(f"{where}: expected base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise FormatError(f"{where}: not base64 ({error})") from None
