"""The `json` format: the record value is one JSON object with the message's headers, properties and body.

The whole message as JSON (docs/formats.md, `json`), exact enough to come back as the same JMS message:

    {"headers": {"JMSDestination": "queue://orders", "JMSMessageID": "ID:1", "JMSPriority": 4,
                 "JMSDeliveryMode": 2, "JMSExpiration": 0, "JMSTimestamp": 1700000000000,
                 "JMSRedelivered": false},
     "properties": {"region": "emea", "express": true, "count": 3, "ratio": 0.5},
     "types": {"count": "int", "ratio": "float"},
     "text": "hello"}

- `headers`: the JMS headers by name; destinations as `queue://NAME` / `topic://NAME`, delivery mode 1
  (non-persistent) or 2 (persistent). Unset headers are left out (`null` reads as unset too).
- `properties`: name-value pairs in plain JSON types. JSON has one number type, so `types` gives the JMS
  type of every numeric property (byte, short, int, long, float, double). Without an entry a number is a
  long when written without fraction or exponent and a double otherwise, a string a string and a
  boolean a boolean: plain JSON from other producers converts. Non-finite floating-point values are the
  strings "NaN", "Infinity" and "-Infinity" (with a `types` entry), since JSON has no literal for them.
- the body: `text` for a TextMessage, `bytes` (base64, RFC 4648 with padding) for a BytesMessage; either
  may be `null` (a message without a body). `map` (an object) for a MapMessage's entries, `stream` (an
  array) for a StreamMessage's items, with `entryTypes` for the types JSON cannot tell
  (formats/entries.py). Other JMS message types have no body the bridge carries: `messageType` names
  them. No body member means a TextMessage without a body.

Members or headers not listed here are errors rather than silently dropped data.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

from bridge_job.formats import FormatError, KafkaRecord, utf8
from bridge_job.formats import entries as entries_json
from bridge_job.formats.json_values import ENCODER, floating, kind, parse_json, written
from bridge_job.formats.native import ORIGIN_HEADER, STRUCTURED
from bridge_job.message import (
    HEADER_NAMES,
    BodyType,
    DeliveryMode,
    Destination,
    Entries,
    JmsMessage,
    Property,
    PropertyType,
    to_float32,
)

MEMBERS = ("headers", "properties", "types", "text", "bytes", "map", "stream", "entryTypes", "messageType")
_BODIES = ("text", "bytes", "map", "stream")
_BOUNDS = {
    PropertyType.BYTE: range(-(2**7), 2**7),
    PropertyType.SHORT: range(-(2**15), 2**15),
    PropertyType.INT: range(-(2**31), 2**31),
    PropertyType.LONG: range(-(2**63), 2**63),
}


# ---------------------------------------------------------------------------------------------------
# JMS message -> JSON


def document(message: JmsMessage) -> dict[str, Any]:
    """The JSON object for a message (the value `encode` writes, before serialising)."""
    doc: dict[str, Any] = {"headers": _headers(message)}
    properties: dict[str, Any] = {}
    types: dict[str, str] = {}
    for name, prop in message.properties.items():
        properties[name] = written(prop.value)
        if prop.type is not PropertyType.STRING and prop.type is not PropertyType.BOOLEAN:
            types[name] = prop.type.value
    doc["properties"] = properties
    if types:
        doc["types"] = types
    body = message.body
    if message.body_type is BodyType.TEXT:
        if isinstance(body, bytes):
            raise FormatError("text: a TextMessage body must be text, not bytes")
        doc["text"] = body
    elif message.body_type is BodyType.BYTES:
        doc["bytes"] = None if body is None else base64.b64encode(_as_bytes(body)).decode("ascii")
    elif message.body_type in STRUCTURED and message.entries is not None:
        value, entry_types = entries_json.to_json(message.entries)
        doc["map" if message.body_type is BodyType.MAP else "stream"] = value
        if entry_types:
            doc["entryTypes"] = entry_types
    elif body is not None:
        raise FormatError(f"body: a {message.body_type.value} has no body the bridge carries")
    else:
        doc["messageType"] = message.body_type.value
    return doc


def encode(message: JmsMessage, origin: str | None = None) -> KafkaRecord:
    value = utf8(ENCODER.encode(document(message)), "value")
    headers = [] if origin is None else [(ORIGIN_HEADER, utf8(origin, "origin"))]
    return KafkaRecord(value=value, headers=headers)


def _headers(message: JmsMessage) -> dict[str, Any]:
    headers: dict[str, Any] = {"JMSDestination": message.destination.uri()}
    if message.message_id is not None:
        headers["JMSMessageID"] = message.message_id
    if message.correlation_id is not None:
        headers["JMSCorrelationID"] = message.correlation_id
    if message.reply_to is not None:
        headers["JMSReplyTo"] = message.reply_to.uri()
    if message.type is not None:
        headers["JMSType"] = message.type
    headers["JMSPriority"] = message.priority
    headers["JMSDeliveryMode"] = int(message.delivery_mode)
    headers["JMSExpiration"] = message.expiration
    headers["JMSTimestamp"] = message.timestamp
    headers["JMSRedelivered"] = message.redelivered
    return headers


def _as_bytes(body: str | bytes) -> bytes:
    return body if isinstance(body, bytes) else utf8(body, "bytes")


# ---------------------------------------------------------------------------------------------------
# JSON -> JMS message


def decode(record: KafkaRecord, destination: Destination | None = None) -> JmsMessage:
    """The JMS message a record carries. `destination` is used when the JSON names none."""
    if record.value is None:
        raise FormatError("value: missing (a null record); the json format needs a JSON object")
    return message_of(parse_json(record.value), destination)


def message_of(doc: Any, destination: Destination | None) -> JmsMessage:
    """The JMS message a parsed JSON document describes; FormatError names the offending field."""
    if not isinstance(doc, dict):
        raise FormatError(f"value: expected a JSON object, got {kind(doc)}")
    for member in doc:
        if member not in MEMBERS:
            raise FormatError(f"{member}: unknown member; expected one of {', '.join(MEMBERS)}")
    fields = _read_headers(_object(doc, "headers"))
    target = fields.pop("destination", None) or destination
    if target is None:
        raise FormatError("headers.JMSDestination: missing, and the route names no destination")
    body_type, body, entries = _read_body(doc)
    return JmsMessage(
        destination=target,
        body_type=body_type,
        body=body,
        entries=entries,
        properties=_read_properties(_object(doc, "properties"), _object(doc, "types")),
        **fields,
    )


def _read_headers(headers: dict[str, Any]) -> dict[str, Any]:
    """The JmsMessage fields of the document's `headers` (a null header is as good as absent)."""
    fields: dict[str, Any] = {}
    for name, value in headers.items():
        where = f"headers.{name}"
        if value is None:
            continue
        if name not in _HEADERS:
            raise FormatError(f"{where}: not a JMS header; expected one of {', '.join(HEADER_NAMES)}")
        field, read = _HEADERS[name]
        fields[field] = read(value, where)
    return fields


def _delivery_mode(value: Any, where: str) -> DeliveryMode:
    mode = _integer(value, PropertyType.INT, where)
    if mode not in (1, 2):
        raise FormatError(f"{where}: {mode} is neither 1 (non-persistent) nor 2 (persistent)")
    return DeliveryMode(mode)


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise FormatError(f"{where}: expected true or false, got {kind(value)}")
    return value


def _int(value: Any, where: str) -> int:
    return _integer(value, PropertyType.INT, where)


def _long(value: Any, where: str) -> int:
    return _integer(value, PropertyType.LONG, where)


def _read_properties(properties: dict[str, Any], types: dict[str, Any]) -> dict[str, Property]:
    declared: dict[str, PropertyType] = {}
    for name, type_name in types.items():
        if name not in properties:
            raise FormatError(f"types.{name}: there is no property {name!r}")
        try:
            declared[name] = PropertyType(type_name)
        except ValueError:
            raise FormatError(
                f"types.{name}: expected one of {', '.join(t.value for t in PropertyType)}, got {type_name!r}"
            ) from None
    return {
        name: _property(value, declared.get(name), f"properties.{name}") for name, value in properties.items()
    }


def _property(value: Any, type_: PropertyType | None, where: str) -> Property:
    if type_ is None:
        if isinstance(value, bool):
            type_ = PropertyType.BOOLEAN
        elif isinstance(value, int):
            type_ = PropertyType.LONG
        elif isinstance(value, float):
            type_ = PropertyType.DOUBLE
        elif isinstance(value, str):
            type_ = PropertyType.STRING
        else:
            raise FormatError(f"{where}: expected a string, boolean or number, got {kind(value)}")
    if type_ is PropertyType.STRING:
        return Property(type_, _string(value, where))
    if type_ is PropertyType.BOOLEAN:
        if not isinstance(value, bool):
            raise FormatError(f"{where}: expected true or false for a boolean, got {kind(value)}")
        return Property(type_, value)
    if type_ in _BOUNDS:
        return Property(type_, _integer(value, type_, where))
    number = floating(value, where)
    if type_ is PropertyType.FLOAT and math.isfinite(number):
        try:
            number = to_float32(number)  # what Java's (float) cast gives, for JSON written by others
        except OverflowError:
            raise FormatError(f"{where}: {number!r} is out of range for a float") from None
    return Property(type_, number)


def _integer(value: Any, type_: PropertyType, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise FormatError(f"{where}: expected an integer ({type_.value}), got {kind(value)}")
    if value not in _BOUNDS[type_]:
        raise FormatError(f"{where}: {value} is out of range for a {type_.value}")
    return value


def _read_body(doc: dict[str, Any]) -> tuple[BodyType, str | bytes | None, Entries | None]:
    named = None
    if doc.get("messageType") is not None:
        text = _string(doc["messageType"], "messageType")
        try:
            named = BodyType(text)
        except ValueError:
            raise FormatError(
                f"messageType: expected one of {', '.join(t.value for t in BodyType)}, got {text!r}"
            ) from None
    given = [member for member in _BODIES if member in doc]
    if len(given) > 1:
        raise FormatError(f"{', '.join(given)}: a message has one body, not {len(given)}")
    if "entryTypes" in doc and not ({"map", "stream"} & set(given)):
        raise FormatError("entryTypes: only a map or a stream has entry types")
    body: str | bytes | None = None
    entries: Entries | None = None
    if "map" in doc or "stream" in doc:
        member = given[0]
        body_type = BodyType.MAP if member == "map" else BodyType.STREAM
        entries = entries_json.from_json(doc[member], doc.get("entryTypes"), body_type, member)
    elif "text" in doc:
        body_type, member = BodyType.TEXT, "text"
        body = None if doc["text"] is None else _string(doc["text"], "text")
    elif "bytes" in doc:
        body_type, member = BodyType.BYTES, "bytes"
        body = None if doc["bytes"] is None else _base64(doc["bytes"], "bytes")
    else:
        return named or BodyType.TEXT, None, None
    if named is not None and named is not body_type:
        raise FormatError(f"messageType: {named.value} does not have a {member} body")
    return body_type, body, entries


def _base64(value: Any, where: str) -> bytes:
    text = _string(value, where)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise FormatError(f"{where}: not base64 ({error})") from None


def _destination(value: Any, where: str) -> Destination:
    text = _string(value, where)
    try:
        return Destination.parse(text)
    except ValueError as error:
        raise FormatError(f"{where}: {error}") from None


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{where}: expected a string, got {kind(value)}")
    return value


def _object(doc: dict[str, Any], member: str) -> dict[str, Any]:
    value = doc.get(member)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FormatError(f"{member}: expected a JSON object, got {kind(value)}")
    return value


# JMS header -> (JmsMessage field, reader of its JSON value)
_HEADERS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "JMSDestination": ("destination", _destination),
    "JMSReplyTo": ("reply_to", _destination),
    "JMSMessageID": ("message_id", _string),
    "JMSCorrelationID": ("correlation_id", _string),
    "JMSType": ("type", _string),
    "JMSPriority": ("priority", _int),
    "JMSDeliveryMode": ("delivery_mode", _delivery_mode),
    "JMSExpiration": ("expiration", _long),
    "JMSTimestamp": ("timestamp", _long),
    "JMSRedelivered": ("redelivered", _boolean),
}
