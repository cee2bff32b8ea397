"""The `native` format: JMS headers and properties as Kafka headers, the body as-is.

Encoding (documented in docs/formats.md):

- every JMS header and property becomes a Kafka header `jms.<Name>` whose value is the UTF-8 text of the
  JMS value: strings as they are, booleans `true`/`false`, integers in decimal, floating point in
  Python's shortest round-trip form (`repr`: `1.5`, `inf`, `nan`), destinations as `queue://NAME` or
  `topic://NAME`. A plain Kafka consumer reads them without knowing anything about the bridge.
- the types that text cannot tell apart are recorded once, in `jmsbridge.types`: a comma-separated list
  of `Name=type` for every property that is not a string (`count=int,ratio=double`). Header types are
  fixed by the JMS specification and need no entry. A record without `jmsbridge.types` (a plain Kafka
  producer's) has string properties only.
- `jmsbridge.messageType` is the JMS message interface (`TextMessage`, `BytesMessage`, `MapMessage`,
  `StreamMessage`); without it a record is a BytesMessage, which loses nothing.
- `jmsbridge.origin` names the bridge that wrote the record, so that a bridge never feeds its own
  output back to JMS (cycle prevention): its ingress drops a record of its own whose `jms.JMSDestination`
  is where the record would go. A record's producer may write any header, so the bridge also writes
  `jmsbridge.origin.mac`, a MAC with the bridge's key (bridge_job/signing.py) over the origin, the
  `jms.JMSDestination` header and the value (`signed`): only a record with a MAC that verifies is a loop
  (`loop_mark`); one that merely claims the bridge's origin is delivered like any other.
- text bodies are UTF-8, bytes bodies are passed as they are; no body is a null value. A MapMessage's
  entries are a JSON object, a StreamMessage's items a JSON array, and the types JSON cannot tell are in
  `jmsbridge.entryTypes` (formats/entries.py).
"""

from __future__ import annotations

import math
from typing import Any

from bridge_job.formats import FormatError, KafkaRecord, utf8
from bridge_job.formats import entries as entries_json
from bridge_job.formats.json_values import ENCODER, parse_json
from bridge_job.message import (
    HEADER_NAMES,
    BodyType,
    DeliveryMode,
    Destination,
    JmsMessage,
    Property,
    PropertyType,
    PropertyValue,
)
from bridge_job.signing import LoopMark, mac, vouched

PREFIX = "jms."
TYPES_HEADER = "jmsbridge.types"
MESSAGE_TYPE_HEADER = "jmsbridge.messageType"
ENTRY_TYPES_HEADER = "jmsbridge.entryTypes"  # a Map or Stream message's entry types (formats/entries.py)
STRUCTURED = (BodyType.MAP, BodyType.STREAM)  # bodies carried as JSON
ORIGIN_HEADER = "jmsbridge.origin"
ORIGIN_MAC_HEADER = "jmsbridge.origin.mac"
DESTINATION_HEADER = PREFIX + "JMSDestination"
_SIGNED = b"origin"  # what the MAC signs besides the record: no other mark of the bridge signs alike


def _origin_signed(origin: bytes, record: KafkaRecord) -> tuple[bytes, ...]:
    """What the origin's MAC signs: the destination and the value too, so that it cannot be moved to a
    record of another destination or content."""
    return (_SIGNED, origin, record.header(DESTINATION_HEADER) or b"", record.value or b"")


def origin_mac(key: bytes, origin: str, record: KafkaRecord) -> str:
    return mac(key, *_origin_signed(origin.encode(), record))


def signed(record: KafkaRecord, origin: str, key: bytes) -> KafkaRecord:
    """`record`, which names `origin` in ORIGIN_HEADER, with the MAC that vouches for it."""
    headers = [*record.headers, (ORIGIN_MAC_HEADER, origin_mac(key, origin, record).encode())]
    return KafkaRecord(value=record.value, headers=headers, key=record.key)


def loop_mark(record: KafkaRecord, target: Destination, bridge_id: str, key: bytes) -> LoopMark:
    """Whether `record` is one this bridge wrote from `target`, the destination it would now go to."""
    origin = record.header(ORIGIN_HEADER)
    if origin != bridge_id.encode() or record.header(DESTINATION_HEADER) != target.uri().encode():
        return LoopMark.NONE
    given = record.header(ORIGIN_MAC_HEADER)
    text = None if given is None else given.decode(errors="replace")
    return vouched(key, text, *_origin_signed(origin, record))


def render_value(value: PropertyValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_value(text: str, type_: PropertyType) -> PropertyValue:
    """The inverse of `render_value` for a declared type; raises ValueError when the text does not fit."""
    if type_ is PropertyType.STRING:
        return text
    if type_ is PropertyType.BOOLEAN:
        if text not in ("true", "false"):
            raise ValueError(f"{text!r} is not true or false")
        return text == "true"
    if type_ in (PropertyType.FLOAT, PropertyType.DOUBLE):
        value = float(text)
        if not math.isfinite(value) and text not in ("inf", "-inf", "nan"):
            raise ValueError(f"{text!r} is not a finite number")
        return value
    return int(text, 10)


def encode(message: JmsMessage, origin: str | None = None) -> KafkaRecord:
    headers: list[tuple[str, bytes]] = []

    def add(name: str, text: str) -> None:
        headers.append((name, utf8(text, f"header {name}")))

    add(PREFIX + "JMSDestination", message.destination.uri())
    if message.message_id is not None:
        add(PREFIX + "JMSMessageID", message.message_id)
    if message.correlation_id is not None:
        add(PREFIX + "JMSCorrelationID", message.correlation_id)
    if message.reply_to is not None:
        add(PREFIX + "JMSReplyTo", message.reply_to.uri())
    if message.type is not None:
        add(PREFIX + "JMSType", message.type)
    add(PREFIX + "JMSPriority", str(message.priority))
    add(PREFIX + "JMSDeliveryMode", str(int(message.delivery_mode)))
    add(PREFIX + "JMSExpiration", str(message.expiration))
    add(PREFIX + "JMSTimestamp", str(message.timestamp))
    add(PREFIX + "JMSRedelivered", "true" if message.redelivered else "false")
    types = []
    for name, prop in message.properties.items():
        _check_property_name(name, prop)
        add(PREFIX + name, render_value(prop.value))
        if prop.type is not PropertyType.STRING:
            types.append(f"{name}={prop.type.value}")
    if types:
        add(TYPES_HEADER, ",".join(types))
    add(MESSAGE_TYPE_HEADER, message.body_type.value)
    if origin is not None:
        add(ORIGIN_HEADER, origin)
    value, entry_types = _value(message)
    if entry_types:
        add(ENTRY_TYPES_HEADER, entry_types)
    return KafkaRecord(value=value, headers=headers)


def _value(message: JmsMessage) -> tuple[bytes | None, str | None]:
    """The record's value, and the JSON of a Map or Stream message's entry types (None when there are
    none to say)."""
    body = message.body
    if message.body_type not in STRUCTURED:
        return (utf8(body, "value") if isinstance(body, str) else body), None
    if message.entries is None:
        raise FormatError(f"body: a {message.body_type.value} without its entries")
    entries, types = entries_json.to_json(message.entries)
    return utf8(ENCODER.encode(entries), "value"), ENCODER.encode(types) if types else None


def _check_property_name(name: str, prop: Property) -> None:
    """Refuse the names that `decode` would read back as something else."""
    if name in HEADER_NAMES:
        raise FormatError(f"property {name}: the name of a JMS header cannot name a property")
    if prop.type is not PropertyType.STRING and (not name or "," in name or "=" in name):
        raise FormatError(f"property {name!r}: a typed property's name must be non-empty, without ',' or '='")


def header_text(name: str, raw: bytes) -> str:
    """A header's value as text; FormatError naming the header and the byte when it is not UTF-8."""
    try:
        return raw.decode()
    except UnicodeDecodeError as error:
        raise FormatError(f"header {name}: not UTF-8 at byte {error.start}") from None


def parse_types(text: str) -> dict[str, PropertyType]:
    types: dict[str, PropertyType] = {}
    for entry in filter(None, text.split(",")):
        name, sep, type_name = entry.partition("=")
        try:
            types[name] = PropertyType(type_name)
        except ValueError:
            raise FormatError(
                f"header {TYPES_HEADER}: entry {entry!r} is not NAME=TYPE with TYPE one of "
                f"{', '.join(t.value for t in PropertyType)}"
            ) from None
        if not sep or not name:
            raise FormatError(f"header {TYPES_HEADER}: entry {entry!r} is not NAME=TYPE")
    return types


class _Headers:
    """A record's `jms.` headers, taken one by one and parsed; what is left are the properties."""

    def __init__(self, record: KafkaRecord) -> None:
        self.texts: dict[str, str] = {}
        self.types: dict[str, PropertyType] = {}
        self.entry_types: Any = None
        self.body_type = BodyType.BYTES
        for name, raw in record.headers:
            if name.startswith(PREFIX):
                self.texts[name[len(PREFIX) :]] = header_text(name, raw)
            elif name == TYPES_HEADER:
                self.types = parse_types(header_text(name, raw))
            elif name == ENTRY_TYPES_HEADER:
                self.entry_types = parse_json(raw, f"header {name}")
            elif name == MESSAGE_TYPE_HEADER:
                text = header_text(name, raw)
                try:
                    self.body_type = BodyType(text)
                except ValueError:
                    raise FormatError(f"header {name}: unknown JMS message type {text!r}") from None

    def take(self, name: str, type_: PropertyType) -> PropertyValue | None:
        text = self.texts.pop(name, None)
        if text is None:
            return None
        try:
            return parse_value(text, type_)
        except ValueError as error:
            raise FormatError(f"header {PREFIX}{name}: {error}") from None

    def text(self, name: str) -> str | None:
        value = self.take(name, PropertyType.STRING)
        return None if value is None else str(value)

    def number(self, name: str, default: int) -> int:
        value = self.take(name, PropertyType.LONG)
        return default if value is None else int(value)

    def destination(self, name: str) -> Destination | None:
        text = self.texts.pop(name, None)
        try:
            return None if text is None else Destination.parse(text)
        except ValueError as error:
            raise FormatError(f"header {PREFIX}{name}: {error}") from None

    def delivery_mode(self) -> DeliveryMode:
        mode = self.number("JMSDeliveryMode", DeliveryMode.PERSISTENT)
        try:
            return DeliveryMode(mode)
        except ValueError:
            raise FormatError(f"header {PREFIX}JMSDeliveryMode: {mode!r} is neither 1 nor 2") from None

    def properties(self) -> dict[str, Property]:
        """The headers not taken yet, with their declared types (string when none is declared)."""
        properties: dict[str, Property] = {}
        for name, text in self.texts.items():
            type_ = self.types.get(name, PropertyType.STRING)
            try:
                properties[name] = Property(type_, parse_value(text, type_))
            except ValueError as error:
                raise FormatError(f"header {PREFIX}{name}: {error}") from None
        return properties


def _body(value: bytes | None, body_type: BodyType) -> str | bytes | None:
    if value is None or body_type is not BodyType.TEXT:
        return value
    try:
        return value.decode()
    except UnicodeDecodeError as error:
        raise FormatError(f"value: TextMessage body is not UTF-8 at byte {error.start}") from None


def decode(record: KafkaRecord, destination: Destination | None = None) -> JmsMessage:
    """The JMS message a record carries. `destination` is used when the record names none."""
    headers = _Headers(record)
    target = headers.destination("JMSDestination") or destination
    if target is None:
        raise FormatError(f"header {PREFIX}JMSDestination: missing, and the route names no destination")
    reply_to = headers.destination("JMSReplyTo")
    message_id = headers.text("JMSMessageID")
    correlation_id = headers.text("JMSCorrelationID")
    jms_type = headers.text("JMSType")
    priority = headers.number("JMSPriority", 4)
    delivery_mode = headers.delivery_mode()
    expiration = headers.number("JMSExpiration", 0)
    timestamp = headers.number("JMSTimestamp", 0)
    redelivered = headers.take("JMSRedelivered", PropertyType.BOOLEAN)
    entries = None
    if headers.body_type in STRUCTURED:
        if record.value is None:
            raise FormatError(f"value: missing, and a {headers.body_type.value}'s entries are its JSON")
        value = parse_json(record.value)
        entries = entries_json.from_json(value, headers.entry_types, headers.body_type, "value")
    return JmsMessage(
        destination=target,
        body_type=headers.body_type,
        body=None if entries is not None else _body(record.value, headers.body_type),
        entries=entries,
        message_id=message_id,
        correlation_id=correlation_id,
        reply_to=reply_to,
        type=jms_type,
        priority=priority,
        delivery_mode=delivery_mode,
        expiration=expiration,
        timestamp=timestamp,
        redelivered=bool(redelivered),
        properties=headers.properties(),  # the headers not taken above
    )
