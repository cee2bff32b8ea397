"""The `avro` format: a JMS message as an Avro `io.confluent.connect.jms.Value` record
(formats/connect_jms.py) in the schema registry's wire format, keyed by an `io.confluent.connect.jms.Key`
record.

The schemas: formats/avro_schema.py (`VALUE_SCHEMA`, `KEY_SCHEMA`).

Writing is the hot path of a route, so the bridge writes its own records' Avro binary itself, from a
precomputed layout (this schema has no choices left but the union branches). Reading a record written
with the bridge's schema does the same in reverse; a record written with another schema (a connector's,
an older version of this one) is read with fastavro, resolved against the bridge's schema, so that fields
either side lacks are filled with their defaults. A writer's schema that does not resolve is not a JMS
message shape: FormatError says why.
"""

from __future__ import annotations

import functools
import io
import json
import struct
from collections.abc import Callable
from typing import Any

import fastavro
from fastavro.schema import to_parsing_canonical_form

from bridge_job.formats import FormatError, KafkaRecord, avro_schema, utf8
from bridge_job.formats.connect_jms import (
    BODY_TYPES,
    ENTRY_OF_PROPERTY,
    PROPERTY_OF_ENTRY,
    PROPERTY_TYPES,
    VALUE_FIELDS,
    checked_delivery_mode,
    checked_destination,
    checked_priority,
    message_of,
    message_type,
)
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.formats.registry_wire import SchemaIds, SchemaLookup, framed, unframed
from bridge_job.message import (
    BodyType,
    Destination,
    Entries,
    Entry,
    EntryType,
    JmsMessage,
    Property,
)

VALUE_SCHEMA = avro_schema.VALUE_SCHEMA  # the format's schemas, as json_schema has them
KEY_SCHEMA = avro_schema.KEY_SCHEMA
_VALUE_PARSED = fastavro.parse_schema(json.loads(VALUE_SCHEMA))
_VALUE_CANONICAL = to_parsing_canonical_form(_VALUE_PARSED)


# ---------------------------------------------------------------------------------------------------
# Avro binary, written


def _long(n: int) -> bytes:
    """An Avro int or long: zigzag, then 7 bits a byte, low first."""
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        return _SMALL[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_SMALL = [bytes([z]) for z in range(0x80)]


def _bytes(data: bytes) -> bytes:
    return _long(len(data)) + data


def _string(text: str, where: str) -> bytes:
    return _bytes(utf8(text, where))


def _optional_string(text: str | None, where: str) -> bytes:
    return b"\x00" if text is None else b"\x02" + _string(text, where)


def _destination(destination: Destination | None) -> bytes:
    if destination is None:
        return b"\x00"
    return b"\x02" + _string(destination.kind.value, "destination") + _string(destination.name, "destination")


_WRITE_VALUE: dict[EntryType, Callable[[Any], bytes]] = {
    EntryType.BOOLEAN: lambda v: b"\x01" if v else b"\x00",
    EntryType.BYTE: _long,
    EntryType.SHORT: _long,
    EntryType.INT: _long,
    EntryType.LONG: _long,
    EntryType.FLOAT: lambda v: struct.pack("<f", v),
    EntryType.DOUBLE: lambda v: struct.pack("<d", v),
    EntryType.STRING: lambda v: _string(v, "string"),
    EntryType.CHAR: lambda v: _string(v, "char"),
    EntryType.BYTES: _bytes,
    EntryType.NULL: lambda v: b"",
}
_FIELD_INDEX = {name: index for index, (name, _) in enumerate(VALUE_FIELDS)}


def _pv_layout(entry_type: EntryType) -> tuple[bytes, bytes]:
    """What a PropertyValue of this type writes before and after its value: propertyType, the null
    branches of the fields before it, the value's branch; the null branches after it."""
    property_type, value_field = PROPERTY_TYPES[entry_type]
    head = _string(property_type, "propertyType")
    if value_field is None:
        return head + b"\x00" * len(VALUE_FIELDS), b""
    index = _FIELD_INDEX[value_field]
    return head + b"\x00" * index + b"\x02", b"\x00" * (len(VALUE_FIELDS) - index - 1)


_PV_LAYOUT = {entry_type: _pv_layout(entry_type) for entry_type in PROPERTY_TYPES}


def _property_value(entry_type: EntryType, value: Any) -> bytes:
    head, tail = _PV_LAYOUT[entry_type]
    return head + _WRITE_VALUE[entry_type](value) + tail


def _named(items: list[tuple[str, bytes]], where: str) -> bytes:
    if not items:
        return b"\x00"
    return _long(len(items)) + b"".join(_string(name, where) + data for name, data in items) + b"\x00"


def _entries_map(entries: Entries | None) -> bytes:
    if entries is None:
        return b"\x00"
    if not isinstance(entries, dict):
        raise FormatError("map: a MapMessage's entries are named")
    return b"\x02" + _named([(n, _property_value(e.type, e.value)) for n, e in entries.items()], "map")


def _entries_stream(entries: Entries | None) -> bytes:
    if entries is None:
        return b"\x00"
    if isinstance(entries, dict):
        raise FormatError("stream: a StreamMessage's items are in order, not named")
    if not entries:
        return b"\x02\x00"
    return (
        b"\x02" + _long(len(entries)) + b"".join(_property_value(e.type, e.value) for e in entries) + b"\x00"
    )


def value_binary(message: JmsMessage) -> bytes:
    """The Avro binary of the message's Value record (VALUE_SCHEMA)."""
    body_type, kind = message.body_type, message_type(message)
    body = message.body
    properties = [
        (name, _property_value(ENTRY_OF_PROPERTY[p.type], p.value)) for name, p in message.properties.items()
    ]
    return b"".join(
        (
            _optional_string(message.message_id, "messageID"),
            _string(kind, "messageType"),
            _long(message.timestamp),
            _long(int(message.delivery_mode)),
            _optional_string(message.correlation_id, "correlationID"),
            _destination(message.reply_to),
            _destination(message.destination),
            b"\x01" if message.redelivered else b"\x00",
            _optional_string(message.type, "type"),
            _long(message.expiration),
            _long(message.priority),
            _named(properties, "properties"),
            b"\x02" + _bytes(body) if body_type is BodyType.BYTES and isinstance(body, bytes) else b"\x00",
            _entries_map(message.entries) if body_type is BodyType.MAP else b"\x00",
            b"\x02" + _string(body, "text")
            if body_type is BodyType.TEXT and isinstance(body, str)
            else b"\x00",
            _entries_stream(message.entries) if body_type is BodyType.STREAM else b"\x00",
        )
    )


def key_binary(message: JmsMessage) -> bytes:
    return _optional_string(message.message_id, "messageID")


def encode(message: JmsMessage, origin: str | None, ids: SchemaIds) -> KafkaRecord:
    headers = [] if origin is None else [(ORIGIN_HEADER, utf8(origin, "origin"))]
    return KafkaRecord(
        value=framed(ids.value, value_binary(message)),
        headers=headers,
        key=None if ids.key is None else framed(ids.key, key_binary(message)),
    )


# ---------------------------------------------------------------------------------------------------
# Avro binary, read


class _Cursor:
    """A read position in a record's Avro binary. Reading past the end raises IndexError."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        data, pos = self.data, self.pos
        byte = data[pos]
        if byte < 0x80:  # most: one byte
            self.pos = pos + 1
            return (byte >> 1) ^ -(byte & 1)
        pos += 1
        z, shift = byte & 0x7F, 7
        while byte & 0x80:
            byte = data[pos]
            pos += 1
            z |= (byte & 0x7F) << shift
            shift += 7
        self.pos = pos
        return (z >> 1) ^ -(z & 1)

    def raw(self) -> bytes:
        size = self.long()
        start = self.pos
        end = start + size
        if size < 0 or end > len(self.data):
            raise IndexError(end)
        self.pos = end
        return self.data[start:end]

    def string(self, where: str) -> str:
        try:
            return self.raw().decode()
        except UnicodeDecodeError as error:
            raise FormatError(f"{where}: byte {error.start} of the string is not UTF-8") from None

    def present(self, where: str) -> bool:
        """An optional field's union branch: False for null, True for a value."""
        branch = self.data[self.pos]
        self.pos += 1
        if branch > 2 or branch == 1:
            raise FormatError(f"{where}: union branch {branch} of ['null', ...] does not exist")
        return branch == 2

    def optional_string(self, where: str) -> str | None:
        return self.string(where) if self.present(where) else None

    def expect(self, layout: bytes) -> None:
        if not self.data.startswith(layout, self.pos):
            raise FormatError(": holds a value beside its propertyType's, or is truncated")
        self.pos += len(layout)

    def count(self) -> int:
        """The item count of the next block of a map or an array (0: the end)."""
        count = self.long()
        if count < 0:  # a block that also gives its size in bytes
            self.long()
            count = -count
        return count

    def float32(self) -> float:
        value: float = struct.unpack_from("<f", self.data, self.pos)[0]
        self.pos += 4
        return value

    def float64(self) -> float:
        value: float = struct.unpack_from("<d", self.data, self.pos)[0]
        self.pos += 8
        return value

    def boolean(self, where: str) -> bool:
        byte = self.data[self.pos]
        self.pos += 1
        if byte > 1:
            raise FormatError(f"{where}: {byte} is not a boolean (0 or 1)")
        return byte == 1


_READ_VALUE: dict[EntryType, Callable[[_Cursor], Any]] = {
    EntryType.BOOLEAN: lambda c: c.boolean(".boolean"),
    EntryType.BYTE: _Cursor.long,
    EntryType.SHORT: _Cursor.long,
    EntryType.INT: _Cursor.long,
    EntryType.LONG: _Cursor.long,
    EntryType.FLOAT: _Cursor.float32,
    EntryType.DOUBLE: _Cursor.float64,
    EntryType.STRING: lambda c: c.string(".string"),
    EntryType.CHAR: lambda c: c.string(".string"),
    EntryType.BYTES: _Cursor.raw,
    EntryType.NULL: lambda c: None,
}
# propertyType -> its entry type and what a PropertyValue writes around the value, past propertyType.
_PV_READ = {
    PROPERTY_TYPES[entry_type][0]: (entry_type, head[len(_string(PROPERTY_TYPES[entry_type][0], "")) :], tail)
    for entry_type, (head, tail) in _PV_LAYOUT.items()
}


def _typed(cursor: _Cursor) -> tuple[EntryType, Any]:
    """A PropertyValue's JMS type and value. FormatError's message is to follow where it is."""
    property_type = cursor.string(".propertyType")
    known = _PV_READ.get(property_type)
    if known is None:
        raise FormatError(f".propertyType: {property_type!r} is not one of {', '.join(_PV_READ)}")
    entry_type, head, tail = known
    cursor.expect(head)
    value = _READ_VALUE[entry_type](cursor)
    cursor.expect(tail)
    return entry_type, value


def _entry(cursor: _Cursor, where: str) -> Entry:
    try:
        entry_type, value = _typed(cursor)
        return Entry(entry_type, value)
    except FormatError as error:
        raise FormatError(f"{where}{error}") from None
    except ValueError as error:
        raise FormatError(f"{where}: {error}") from None


def _properties(cursor: _Cursor) -> dict[str, Property]:
    properties = {}
    count = cursor.count()
    while count:
        for _ in range(count):
            name = cursor.string("properties: a name")
            try:
                entry_type, value = _typed(cursor)
                properties[name] = Property(PROPERTY_OF_ENTRY[entry_type], value)
            except FormatError as error:
                raise FormatError(f"properties[{name!r}]{error}") from None
            except KeyError:
                raise FormatError(
                    f"properties[{name!r}]: a JMS property cannot be of type {entry_type.value}"
                ) from None
            except ValueError as error:
                raise FormatError(f"properties[{name!r}]: {error}") from None
        count = cursor.count()
    return properties


def _named_entries(cursor: _Cursor, where: str) -> dict[str, Entry]:
    entries = {}
    count = cursor.count()
    while count:
        for _ in range(count):
            name = cursor.string(f"{where}: a name")
            entries[name] = _entry(cursor, f"{where}[{name!r}]")
        count = cursor.count()
    return entries


def _destination_of(cursor: _Cursor, where: str) -> Destination | None:
    if not cursor.present(where):
        return None
    kind = cursor.string(f"{where}.destinationType")
    return checked_destination(kind, cursor.string(f"{where}.name"), where)


def _read_value(payload: bytes, destination: Destination | None) -> JmsMessage:
    """A Value record written with VALUE_SCHEMA, read without a schema library."""
    c = _Cursor(payload)
    message_id = c.optional_string("messageID")
    message_type = c.string("messageType")
    body_type = BODY_TYPES.get(message_type)
    if body_type is None:
        raise FormatError(f"messageType: {message_type!r} is not one of {', '.join(BODY_TYPES)}")
    timestamp, mode = c.long(), checked_delivery_mode(c.long())
    correlation_id = c.optional_string("correlationID")
    reply_to = _destination_of(c, "replyTo")
    target = _destination_of(c, "destination") or destination
    if target is None:
        raise FormatError("destination: missing, and the route names no destination")
    redelivered = c.boolean("redelivered")
    jms_type = c.optional_string("type")
    expiration, priority = c.long(), checked_priority(c.long())
    properties = _properties(c)
    raw = c.raw() if c.present("bytes") else None
    named = _named_entries(c, "map") if c.present("map") else None
    text = c.optional_string("text")
    stream: tuple[Entry, ...] | None = None
    if c.present("stream"):
        items: list[Entry] = []
        count = c.count()
        while count:
            items.extend(_entry(c, f"stream[{len(items)}]") for _ in range(count))
            count = c.count()
        stream = tuple(items)
    if c.pos != len(payload):
        raise FormatError(f"value: {len(payload) - c.pos} bytes after the record")
    body = text if body_type is BodyType.TEXT else raw if body_type is BodyType.BYTES else None
    entries = named if body_type is BodyType.MAP else stream if body_type is BodyType.STREAM else None
    return JmsMessage(
        destination=target,
        body_type=body_type,
        body=body,
        entries=entries,
        message_id=message_id,
        correlation_id=correlation_id,
        reply_to=reply_to,
        type=jms_type,
        priority=priority,
        delivery_mode=mode,
        expiration=expiration,
        timestamp=timestamp,
        redelivered=redelivered,
        properties=properties,
    )


@functools.lru_cache(maxsize=64)
def _writer(text: str, schema_id: int) -> tuple[Any, bool]:
    """A writer's schema, parsed, and whether it is the bridge's own (its binary is read directly)."""
    try:
        parsed = fastavro.parse_schema(json.loads(text))
    except Exception as error:  # the registry's content is input too: whatever fastavro makes of it
        what = f"{type(error).__name__}: {error}"
        raise FormatError(
            f"value: the writer's schema (registry id {schema_id}) is not Avro: {what}"
        ) from None
    return parsed, to_parsing_canonical_form(parsed) == _VALUE_CANONICAL


def decode(record: KafkaRecord, destination: Destination | None, schemas: SchemaLookup) -> JmsMessage:
    """The JMS message an Avro Value record carries; `schemas` finds the writer's schema by its id."""
    schema_id, payload = unframed(record.value, "value")
    writer, ours = _writer(schemas(schema_id), schema_id)
    try:
        if ours:
            return _read_value(payload, destination)
        document = fastavro.schemaless_reader(io.BytesIO(payload), writer, _VALUE_PARSED)
    except IndexError:
        raise FormatError("value: the Avro record ends early") from None
    except fastavro.read.SchemaResolutionError as error:
        raise FormatError(
            f"value: the writer's schema (registry id {schema_id}) is not a JMS message record: {error}"
        ) from None
    except (EOFError, ValueError, struct.error) as error:
        raise FormatError(f"value: not an Avro record of the writer's schema ({error})") from None
    except Exception as error:  # a writer's schema of another shape: fastavro's reading of it, refused
        if ours:
            raise
        raise FormatError(
            f"value: not readable with the writer's schema (registry id {schema_id}): "
            f"{type(error).__name__}: {error}"
        ) from None
    if not isinstance(document, dict):
        raise FormatError(f"value: the writer's schema (registry id {schema_id}) is not a record")
    return message_of(document, destination)
