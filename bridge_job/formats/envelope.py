"""The `envelope` format: the record value is the nats-io/nats-jms-bridge binary header protocol.

The value holds what the reference bridge itself carries, so its decoder and ours read the same message
(`envelope_wire.py` has the bytes):

- JMS headers with a well-known envelope name: JMSDeliveryMode -> `BRIDGE_mode` and JMSPriority ->
  `BRIDGE_priority` (small ints, always written); JMSTimestamp -> `BRIDGE_timestamp` and JMSExpiration
  -> `BRIDGE_expirationTime` (longs, written when not 0); JMSType -> `BRIDGE_type` and JMSCorrelationID
  -> `BRIDGE_correlation_id` (strings, when set); JMSRedelivered -> `BRIDGE_redelivered` (when true).
- JMS properties as envelope headers of the same name and type (an int property is an envelope int, a
  short a short, ...). The envelope's delivery time has no JMS header in our model: it is the long
  property `BRIDGE_deliveryTime` both ways. The other `BRIDGE_*` names are the JMS headers above and
  cannot name a property.
- the body: a text body as UTF-8, a bytes body as it is, no body as an empty one.

The JMS headers the envelope has no slot for travel as Kafka headers, named as in the `native` format:
`jms.JMSDestination`, `jms.JMSMessageID`, `jms.JMSReplyTo`, plus `jmsbridge.messageType` (so a
TextMessage comes back as one) and `jmsbridge.origin`. A record without them (a NATS producer's) is a
BytesMessage for the route's destination. Only text and bytes messages have an envelope; the reference
bridge refuses the other JMS message types too.
"""

from __future__ import annotations

from bridge_job.formats import FormatError, KafkaRecord, envelope_wire, utf8
from bridge_job.formats.envelope_wire import (
    CORRELATION_ID,
    EXPIRATION,
    MODE,
    PRIORITY,
    REDELIVERED,
    TIMESTAMP,
    TYPE,
)
from bridge_job.formats.native import MESSAGE_TYPE_HEADER, ORIGIN_HEADER, PREFIX, header_text
from bridge_job.message import BodyType, DeliveryMode, Destination, JmsMessage, Property, PropertyType

_CARRIED = (BodyType.TEXT, BodyType.BYTES)
# Envelope names that stand for JMS headers; a property of that name would be read back as the header.
_HEADER_SLOTS = {
    MODE: "JMSDeliveryMode",
    PRIORITY: "JMSPriority",
    TIMESTAMP: "JMSTimestamp",
    EXPIRATION: "JMSExpiration",
    TYPE: "JMSType",
    CORRELATION_ID: "JMSCorrelationID",
    REDELIVERED: "JMSRedelivered",
}
_INT32 = range(-(2**31), 2**31)
_INT64 = range(-(2**63), 2**63)


def encode(message: JmsMessage, origin: str | None = None) -> KafkaRecord:
    if message.body_type not in _CARRIED:
        raise FormatError(f"message type {message.body_type.value}: the envelope carries text and bytes only")
    body = message.body
    payload = utf8(body, "body") if isinstance(body, str) else body or b""
    value = envelope_wire.pack(_envelope_headers(message), payload)

    headers = [(PREFIX + "JMSDestination", utf8(message.destination.uri(), "JMSDestination"))]
    if message.message_id is not None:
        headers.append((PREFIX + "JMSMessageID", utf8(message.message_id, "JMSMessageID")))
    if message.reply_to is not None:
        headers.append((PREFIX + "JMSReplyTo", utf8(message.reply_to.uri(), "JMSReplyTo")))
    headers.append((MESSAGE_TYPE_HEADER, message.body_type.value.encode()))
    if origin is not None:
        headers.append((ORIGIN_HEADER, utf8(origin, "origin")))
    return KafkaRecord(value=value, headers=headers)


def _envelope_headers(message: JmsMessage) -> dict[str, Property]:
    def number(header: str, type_: PropertyType, value: int, bounds: range) -> Property:
        if value not in bounds:
            raise FormatError(f"{header} {value}: out of range for an envelope {type_.value}")
        return Property(type_, value)

    # In the reference encoder's order, which makes our bytes easy to compare with its output.
    headers = {MODE: Property(PropertyType.INT, int(message.delivery_mode))}
    if message.expiration:
        headers[EXPIRATION] = number("JMSExpiration", PropertyType.LONG, message.expiration, _INT64)
    if message.correlation_id is not None:
        headers[CORRELATION_ID] = Property.string(message.correlation_id)
    if message.timestamp:
        headers[TIMESTAMP] = number("JMSTimestamp", PropertyType.LONG, message.timestamp, _INT64)
    if message.type is not None:
        headers[TYPE] = Property.string(message.type)
    headers[PRIORITY] = number("JMSPriority", PropertyType.INT, message.priority, _INT32)
    if message.redelivered:
        headers[REDELIVERED] = Property(PropertyType.BOOLEAN, True)
    for name, prop in message.properties.items():
        if name in _HEADER_SLOTS:
            raise FormatError(f"property {name}: the envelope reads this name as {_HEADER_SLOTS[name]}")
        headers[name] = prop
    return headers


def decode(record: KafkaRecord, destination: Destination | None = None) -> JmsMessage:
    """The JMS message a record carries. `destination` is used when the record names none."""
    target = _destination_header(record, "JMSDestination") or destination
    if target is None:
        raise FormatError(f"header {PREFIX}JMSDestination: missing, and the route names no destination")
    body_type = _body_type(record)
    value = record.value
    envelope = None if value is None else envelope_wire.unpack(value)
    if envelope is None:
        headers: dict[str, Property] = {}
        payload, offset = value, 0
    else:
        headers, payload, offset = envelope.headers, envelope.body, envelope.body_offset

    def take(name: str) -> Property | None:
        return headers.pop(name, None)

    mode = _value(take(MODE), int(DeliveryMode.PERSISTENT))
    if mode not in (1, 2):
        raise FormatError(f"envelope header {MODE}: {mode} is neither 1 (non-persistent) nor 2 (persistent)")
    redelivered = take(REDELIVERED)
    return JmsMessage(
        destination=target,
        body_type=body_type,
        body=_body(payload, offset, body_type),
        message_id=_text_header(record, "JMSMessageID"),
        correlation_id=_optional_text(take(CORRELATION_ID)),
        reply_to=_destination_header(record, "JMSReplyTo"),
        type=_optional_text(take(TYPE)),
        priority=_value(take(PRIORITY), 4),
        delivery_mode=DeliveryMode(mode),
        expiration=_value(take(EXPIRATION), 0),
        timestamp=_value(take(TIMESTAMP), 0),
        redelivered=redelivered is not None and redelivered.value is True,
        properties=headers,
    )


def _value(prop: Property | None, default: int) -> int:
    # envelope_wire guarantees the well-known headers' types: ints for these.
    return default if prop is None else int(prop.value)


def _optional_text(prop: Property | None) -> str | None:
    return None if prop is None else str(prop.value)


def _body(payload: bytes | None, offset: int, body_type: BodyType) -> str | bytes | None:
    if payload is None or body_type is BodyType.BYTES:
        return payload
    try:
        return payload.decode()
    except UnicodeDecodeError as error:
        raise FormatError(f"value byte {offset + error.start}: TextMessage body is not UTF-8") from None


def _text_header(record: KafkaRecord, name: str) -> str | None:
    raw = record.header(PREFIX + name)
    return None if raw is None else header_text(PREFIX + name, raw)


def _destination_header(record: KafkaRecord, name: str) -> Destination | None:
    text = _text_header(record, name)
    try:
        return None if text is None else Destination.parse(text)
    except ValueError as error:
        raise FormatError(f"header {PREFIX}{name}: {error}") from None


def _body_type(record: KafkaRecord) -> BodyType:
    raw = record.header(MESSAGE_TYPE_HEADER)
    if raw is None:
        return BodyType.BYTES
    text = raw.decode(errors="replace")
    if text not in _CARRIED:
        raise FormatError(f"header {MESSAGE_TYPE_HEADER}: {text!r} is not TextMessage or BytesMessage")
    return BodyType(text)
