"""The JMS message as the bridge carries it: every header, every typed property, the body.

This model is what the JMS adapter produces and consumes and what every format converts from and to.
It keeps what JMS distinguishes and Python does not: the eight property types (a Python `int` may be a
JMS byte, short, int or long; a `float` a JMS float or double), queue versus topic, text versus bytes.
"""

from __future__ import annotations

import enum
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field


class DestinationKind(enum.StrEnum):
    QUEUE = "queue"
    TOPIC = "topic"


@dataclass(frozen=True, slots=True)
class Destination:
    kind: DestinationKind
    name: str

    def uri(self) -> str:
        """`queue://name` or `topic://name`, the form ActiveMQ and most tools print."""
        return f"{self.kind.value}://{self.name}"

    @classmethod
    def parse(cls, text: str) -> Destination:
        kind, sep, name = text.partition("://")
        if not sep or not name or kind not in ("queue", "topic"):
            raise ValueError(f"destination {text!r} is not of the form queue://NAME or topic://NAME")
        return cls(DestinationKind(kind), name)


class BodyType(enum.StrEnum):
    """The JMS message interfaces. The bridge passes text, bytes, map and stream bodies; an ObjectMessage
    (never deserialized) and a plain Message are soft failures."""

    TEXT = "TextMessage"
    BYTES = "BytesMessage"
    MAP = "MapMessage"
    OBJECT = "ObjectMessage"
    STREAM = "StreamMessage"
    MESSAGE = "Message"


# The bodies the bridge carries: text, bytes, and a map's or a stream's entries.
CARRIED_BODIES = (BodyType.TEXT, BodyType.BYTES, BodyType.MAP, BodyType.STREAM)


class PropertyType(enum.StrEnum):
    STRING = "string"
    BOOLEAN = "boolean"
    BYTE = "byte"
    SHORT = "short"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"


_INT_BITS = {PropertyType.BYTE: 8, PropertyType.SHORT: 16, PropertyType.INT: 32, PropertyType.LONG: 64}

PropertyValue = str | bool | int | float


@dataclass(frozen=True, slots=True)
class Property:
    """A typed JMS property value. Construction checks that the value fits the type."""

    type: PropertyType
    value: PropertyValue

    def __post_init__(self) -> None:
        t, v = self.type, self.value
        if t is PropertyType.STRING:
            ok = isinstance(v, str)
        elif t is PropertyType.BOOLEAN:
            ok = isinstance(v, bool)
        elif t in _INT_BITS:
            bits = _INT_BITS[t]
            ok = isinstance(v, int) and not isinstance(v, bool) and -(2 ** (bits - 1)) <= v < 2 ** (bits - 1)
        elif t is PropertyType.FLOAT:
            ok = isinstance(v, float) and (not math.isfinite(v) or _is_float32(v))
        else:
            ok = isinstance(v, float)
        if not ok:
            raise ValueError(f"{v!r} is not a valid JMS {t.value} value")

    @classmethod
    def string(cls, value: str) -> Property:
        return cls(PropertyType.STRING, value)

    @classmethod
    def of(cls, value: PropertyValue) -> Property:
        """The natural JMS type of a Python value: str, boolean, long, double."""
        if isinstance(value, bool):
            return cls(PropertyType.BOOLEAN, value)
        if isinstance(value, int):
            return cls(PropertyType.LONG, value)
        if isinstance(value, float):
            return cls(PropertyType.DOUBLE, value)
        return cls(PropertyType.STRING, value)


def _is_float32(value: float) -> bool:
    try:
        return bool(struct.unpack(">f", struct.pack(">f", value))[0] == value)
    except OverflowError:
        return False


def to_float32(value: float) -> float:
    """The nearest JMS float to a Python float (what Java's `(float)` cast gives)."""
    return float(struct.unpack(">f", struct.pack(">f", value))[0])


class DeliveryMode(enum.IntEnum):
    NON_PERSISTENT = 1
    PERSISTENT = 2


class EntryType(enum.StrEnum):
    """The types of a MapMessage's entries and a StreamMessage's items: the property types, char, bytes, and
    null (an entry set to null has no type left)."""

    STRING = "string"
    BOOLEAN = "boolean"
    BYTE = "byte"
    SHORT = "short"
    CHAR = "char"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    BYTES = "bytes"
    NULL = "null"


EntryValue = str | bool | int | float | bytes | None


@dataclass(frozen=True, slots=True)
class Entry:
    """A typed value of a MapMessage or StreamMessage. Construction checks that the value fits the type."""

    type: EntryType
    value: EntryValue

    def __post_init__(self) -> None:
        t, v = self.type, self.value
        if t is EntryType.NULL:
            ok = v is None
        elif t is EntryType.BYTES:
            ok = isinstance(v, bytes)
        elif t is EntryType.CHAR:
            ok = isinstance(v, str) and len(v) == 1 and ord(v) < 0x10000  # one UTF-16 unit
        elif isinstance(v, bytes) or v is None:
            ok = False
        else:
            Property(PropertyType(t.value), v)  # the property types' own check (ValueError)
            ok = True
        if not ok:
            raise ValueError(f"{v!r} is not a valid JMS {t.value} value")


# A MapMessage's entries by name, or a StreamMessage's items in order.
Entries = dict[str, Entry] | tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class JmsMessage:
    """A JMS message with everything a bridge must keep.

    `body` is `str` for TextMessage, `bytes` for BytesMessage, and `None` for a message without a body
    (or one of a type the bridge does not carry); a MapMessage's or StreamMessage's body is `entries`.
    Header fields left at their defaults are "not set".
    """

    destination: Destination
    body_type: BodyType = BodyType.TEXT
    body: str | bytes | None = None
    message_id: str | None = None
    correlation_id: str | None = None
    reply_to: Destination | None = None
    type: str | None = None
    priority: int = 4
    delivery_mode: DeliveryMode = DeliveryMode.PERSISTENT
    expiration: int = 0
    timestamp: int = 0
    redelivered: bool = False
    properties: dict[str, Property] = field(default_factory=dict)
    entries: Entries | None = None  # a MapMessage's (dict) or a StreamMessage's (tuple); `body` is None
    # What the JMS client could not read (its body, a property) and why: the message is what could be.
    unreadable: str | None = None

    def header(self, name: str) -> PropertyValue | None:
        """A JMS header by its JMS name (JMSMessageID, ...), or a property by its name."""
        getter = _HEADER_GETTERS.get(name)
        if getter is not None:
            return getter(self)
        prop = self.properties.get(name)
        return None if prop is None else prop.value

    def invalid_text(self) -> str | None:
        """Where the message holds text that UTF-8 cannot carry (a lone UTF-16 surrogate, which a Java
        string may hold), e.g. `property note`; None when all its text is valid."""
        texts: list[tuple[str, str | None]] = [
            ("header JMSMessageID", self.message_id),
            ("header JMSCorrelationID", self.correlation_id),
            ("header JMSType", self.type),
            ("header JMSDestination", self.destination.name),
            ("header JMSReplyTo", None if self.reply_to is None else self.reply_to.name),
        ]
        for name, prop in self.properties.items():
            texts.append((f"the name of property {name.encode('utf-8', 'replace').decode()}", name))
            if isinstance(prop.value, str):
                texts.append((f"property {name}", prop.value))
        if isinstance(self.body, str):
            texts.append(("the text body", self.body))
        for where, text in texts:
            if text is not None and not is_utf8_text(text):
                return where
        return None


def is_utf8_text(text: str) -> bool:
    """False when `text` holds a lone surrogate (UTF-8 has no form for one)."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _dest_uri(d: Destination | None) -> str | None:
    return None if d is None else d.uri()


_HEADER_GETTERS: dict[str, Callable[[JmsMessage], PropertyValue | None]] = {
    "JMSDestination": lambda m: m.destination.uri(),
    "JMSMessageID": lambda m: m.message_id,
    "JMSCorrelationID": lambda m: m.correlation_id,
    "JMSReplyTo": lambda m: _dest_uri(m.reply_to),
    "JMSType": lambda m: m.type,
    "JMSPriority": lambda m: m.priority,
    "JMSDeliveryMode": lambda m: int(m.delivery_mode),
    "JMSExpiration": lambda m: m.expiration,
    "JMSTimestamp": lambda m: m.timestamp,
    "JMSRedelivered": lambda m: m.redelivered,
}

HEADER_NAMES: tuple[str, ...] = tuple(_HEADER_GETTERS)
