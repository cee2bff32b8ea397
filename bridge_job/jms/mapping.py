"""A Java JMS `Message` (javax.jms or jakarta.jms) <-> `JmsMessage`, keeping every header, typed property
and the body.

This runs once per message in both directions, so it is written for few Python <-> Java crossings: the
Java classes are looked up once per reader or writer; the message interface is found with `isinstance`
(a Python-side check against the proxy's class); each Java string is converted exactly once; a
property's JMS type comes from the Java class of `getObjectProperty`'s boxed result through a dict; a
bytes body is read with one `readBytes` into a Java `byte[]` and copied out with `bytes(...)`.

Reading keeps what the provider reports through `getPropertyNames()`, including the JMSX properties it
adds (ActiveMQ reports `JMSXDeliveryCount` on redelivery, `JMSXGroupID` when set). A property of a type
outside the eight JMS types (only a non-conforming provider returns one) is kept as its string form.
A BytesMessage always has a `bytes` body (JMS cannot tell an empty body from none); MapMessage,
ObjectMessage, StreamMessage and plain Message have body None and their `BodyType`, for the job to treat
as soft failures.

A Java string may hold a lone UTF-16 surrogate, which has no UTF-8 form (JPype's `str()` raises
UnicodeDecodeError on it). Reading keeps such text exactly, as a Python `str` with the surrogate in it
(`java_text`), so that reading never fails on one message's content: the job decides what to do with
text that Kafka cannot carry (`JmsMessage.invalid_text`).

Writing builds a TextMessage, BytesMessage or plain Message; the other interfaces cannot be written
(`ValueError`): the bridge carries text and bytes bodies only. Headers that the provider sets on send
(JMSMessageID, JMSTimestamp, JMSDestination, JMSRedelivered, JMSExpiration) are not copied; delivery mode,
priority and time-to-live are arguments of `send` (see producing.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jpype

from bridge_job.jms.api import JmsApi
from bridge_job.jms.errors import JavaException, reason
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    Entries,
    Entry,
    EntryType,
    EntryValue,
    JmsMessage,
    Property,
    PropertyType,
    PropertyValue,
)

_DELIVERY_MODES = {int(mode): mode for mode in DeliveryMode}

# A MapMessage's setX(name, value) and a StreamMessage's writeX(value) for each entry type; a null goes as
# an Object (JMS allows null there).
_JAVA_SUFFIXES = {
    EntryType.STRING: "String",
    EntryType.BOOLEAN: "Boolean",
    EntryType.BYTE: "Byte",
    EntryType.SHORT: "Short",
    EntryType.CHAR: "Char",
    EntryType.INT: "Int",
    EntryType.LONG: "Long",
    EntryType.FLOAT: "Float",
    EntryType.DOUBLE: "Double",
    EntryType.BYTES: "Bytes",
    EntryType.NULL: "Object",
}
_JAVA_PRIMITIVES = {
    EntryType.BYTE: jpype.JByte,
    EntryType.SHORT: jpype.JShort,
    EntryType.CHAR: jpype.JChar,
    EntryType.INT: jpype.JInt,
    EntryType.LONG: jpype.JLong,
    EntryType.FLOAT: jpype.JFloat,
    EntryType.DOUBLE: jpype.JDouble,
}

_PROPERTY_SETTERS = {
    PropertyType.STRING: "setStringProperty",
    PropertyType.BOOLEAN: "setBooleanProperty",
    PropertyType.BYTE: "setByteProperty",
    PropertyType.SHORT: "setShortProperty",
    PropertyType.INT: "setIntProperty",
    PropertyType.LONG: "setLongProperty",
    PropertyType.FLOAT: "setFloatProperty",
    PropertyType.DOUBLE: "setDoubleProperty",
}


def _java(name: str) -> Any:
    return jpype.JClass(name)


_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # a Java char[]'s buffer is native


def java_text(value: Any) -> str:
    """A Java string as Python text, exactly, lone surrogates included."""
    try:
        return str(value)
    except UnicodeDecodeError:
        return bytes(memoryview(value.toCharArray())).decode(_UTF16, "surrogatepass")


def _optional_text(value: Any) -> str | None:
    return None if value is None else java_text(value)


class MessageReader:
    """Turns received Java messages into `JmsMessage`s."""

    def __init__(self, api: JmsApi, fallback_destination: Destination) -> None:
        # Used when a provider returns no JMSDestination (the JMS spec says it always sets one).
        self._fallback = fallback_destination
        self._queue = api.type("Queue")
        self._topic = api.type("Topic")
        text_message = api.type("TextMessage")
        bytes_message = api.type("BytesMessage")
        self._body_types: tuple[tuple[Any, BodyType], ...] = (
            (text_message, BodyType.TEXT),
            (bytes_message, BodyType.BYTES),
            (api.type("MapMessage"), BodyType.MAP),
            (api.type("ObjectMessage"), BodyType.OBJECT),
            (api.type("StreamMessage"), BodyType.STREAM),
        )
        self._byte_array = jpype.JArray(jpype.JByte)
        self._property_types: dict[Any, tuple[PropertyType, Callable[[Any], PropertyValue]]] = {
            _java("java.lang.String"): (PropertyType.STRING, java_text),
            _java("java.lang.Boolean"): (PropertyType.BOOLEAN, bool),
            _java("java.lang.Byte"): (PropertyType.BYTE, int),
            _java("java.lang.Short"): (PropertyType.SHORT, int),
            _java("java.lang.Integer"): (PropertyType.INT, int),
            _java("java.lang.Long"): (PropertyType.LONG, int),
            _java("java.lang.Float"): (PropertyType.FLOAT, float),
            _java("java.lang.Double"): (PropertyType.DOUBLE, float),
        }
        # The JMS interface methods, looked up once and called with the message as first argument:
        # a little faster than a lookup on each message's class, and immune to provider overloads.
        message = api.type("Message")
        enumeration = _java("java.util.Enumeration")
        map_message, stream_message = api.type("MapMessage"), api.type("StreamMessage")
        self._get_map_names = map_message.getMapNames
        self._get_object = map_message.getObject
        self._reset = stream_message.reset
        self._read_object = stream_message.readObject
        self._end_of_stream = api.type("MessageEOFException")
        self._entry_types: dict[Any, tuple[EntryType, Callable[[Any], EntryValue]]] = {
            java: (EntryType(kind.value), convert) for java, (kind, convert) in self._property_types.items()
        }
        self._entry_types[_java("java.lang.Character")] = (EntryType.CHAR, str)
        self._get_text = text_message.getText
        self._get_body_length = bytes_message.getBodyLength
        self._read_bytes = bytes_message.readBytes
        self._get_property_names = message.getPropertyNames
        self._has_more = enumeration.hasMoreElements
        self._next = enumeration.nextElement
        self._get_property = message.getObjectProperty
        self._headers = (
            message.getJMSMessageID,
            message.getJMSCorrelationID,
            message.getJMSType,
            message.getJMSDestination,
            message.getJMSReplyTo,
            message.getJMSPriority,
            message.getJMSDeliveryMode,
            message.getJMSExpiration,
            message.getJMSTimestamp,
            message.getJMSRedelivered,
        )

    def destination(self, java_destination: Any) -> Destination | None:
        if java_destination is None:
            return None
        if isinstance(java_destination, self._queue):
            return Destination(DestinationKind.QUEUE, java_text(java_destination.getQueueName()))
        if isinstance(java_destination, self._topic):
            return Destination(DestinationKind.TOPIC, java_text(java_destination.getTopicName()))
        return Destination(self._fallback.kind, java_text(java_destination.toString()))

    def read(self, m: Any) -> JmsMessage:
        """The message as far as the client can read it: a body or a property it cannot read (the
        provider throws) is left out and said in `unreadable`, for the ingest to treat as poison."""
        body_type = BodyType.MESSAGE
        for interface, kind in self._body_types:
            if isinstance(m, interface):
                body_type = kind
                break
        body: str | bytes | None = None
        entries: Entries | None = None
        unreadable = None
        try:
            if body_type is BodyType.TEXT:
                body = _optional_text(self._get_text(m))
            elif body_type is BodyType.BYTES:
                buffer = self._byte_array(int(self._get_body_length(m)))
                self._read_bytes(m, buffer)
                body = bytes(buffer)
            elif body_type is BodyType.MAP:
                entries = self._map_entries(m)
            elif body_type is BodyType.STREAM:
                entries = self._stream_items(m)
        except JavaException as error:
            unreadable = f"its {body_type.value} body: {reason(error)}"

        properties: dict[str, Property] = {}
        try:
            names = self._get_property_names(m)
        except JavaException as error:
            names, unreadable = None, unreadable or f"its property names: {reason(error)}"
        has_more, next_name, get_property = self._has_more, self._next, self._get_property
        property_types = self._property_types
        while names is not None and has_more(names):
            name = next_name(names)
            try:
                value = get_property(m, name)
            except JavaException as error:
                unreadable = unreadable or f"property {java_text(name)}: {reason(error)}"
                continue
            known = property_types.get(type(value))
            if known is None:
                properties[java_text(name)] = Property(PropertyType.STRING, java_text(value))
            else:
                properties[java_text(name)] = Property(known[0], known[1](value))

        (
            message_id,
            correlation_id,
            jms_type,
            destination,
            reply_to,
            priority,
            delivery_mode,
            expiration,
            timestamp,
            redelivered,
        ) = (get(m) for get in self._headers)
        return JmsMessage(
            destination=self.destination(destination) or self._fallback,
            body_type=body_type,
            body=body,
            message_id=_optional_text(message_id),
            correlation_id=_optional_text(correlation_id),
            reply_to=self.destination(reply_to),
            type=_optional_text(jms_type),
            priority=int(priority),
            delivery_mode=_DELIVERY_MODES.get(int(delivery_mode), DeliveryMode.PERSISTENT),
            expiration=int(expiration),
            timestamp=int(timestamp),
            redelivered=bool(redelivered),
            properties=properties,
            entries=entries,
            unreadable=unreadable,
        )

    def _entry(self, value: Any) -> Entry:
        """A map entry's or a stream item's Java value (its boxed type tells the JMS one)."""
        if value is None:
            return Entry(EntryType.NULL, None)
        if isinstance(value, self._byte_array):
            return Entry(EntryType.BYTES, bytes(value))
        known = self._entry_types.get(type(value))
        if known is None:  # a provider's extension (JMS allows only the types above)
            return Entry(EntryType.STRING, java_text(value.toString()))
        return Entry(known[0], known[1](value))

    def _map_entries(self, m: Any) -> dict[str, Entry]:
        names = self._get_map_names(m)
        entries: dict[str, Entry] = {}
        while self._has_more(names):
            name = self._next(names)
            entries[java_text(name)] = self._entry(self._get_object(m, name))
        return entries

    def _stream_items(self, m: Any) -> tuple[Entry, ...]:
        self._reset(m)  # a received message reads from its start; reset makes sure
        items: list[Entry] = []
        while True:
            try:
                value = self._read_object(m)
            except self._end_of_stream:
                return tuple(items)
            items.append(self._entry(value))


class MessageWriter:
    """Builds Java messages in one session from `JmsMessage`s; caches the session's destinations."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._destinations: dict[Destination, Any] = {}
        self._byte_array = jpype.JArray(jpype.JByte)

    def _java_value(self, entry: Entry) -> Any:
        """An entry's value typed for its setter: JPype picks the Java primitive by the wrapper."""
        if entry.type is EntryType.BYTES:
            return self._byte_array(entry.value)
        primitive = _JAVA_PRIMITIVES.get(entry.type)
        return entry.value if primitive is None else primitive(entry.value)

    def destination(self, destination: Destination) -> Any:
        java_destination = self._destinations.get(destination)
        if java_destination is None:
            if destination.kind is DestinationKind.QUEUE:
                java_destination = self._session.createQueue(destination.name)
            else:
                java_destination = self._session.createTopic(destination.name)
            self._destinations[destination] = java_destination
        return java_destination

    def _with_body(self, message: JmsMessage) -> Any:
        """A new Java message of the message's type, with its body."""
        body, body_type, entries = message.body, message.body_type, message.entries
        if body_type is BodyType.TEXT:
            if body is not None and not isinstance(body, str):
                raise ValueError("a TextMessage body must be str or None")
            return self._session.createTextMessage(body)
        if body_type is BodyType.BYTES:
            if body is not None and not isinstance(body, bytes):
                raise ValueError("a BytesMessage body must be bytes or None")
            m = self._session.createBytesMessage()
            if body:
                m.writeBytes(self._byte_array(body))
            return m
        if body_type is BodyType.MAP and isinstance(entries, dict):
            m = self._session.createMapMessage()
            for name, entry in entries.items():
                getattr(m, f"set{_JAVA_SUFFIXES[entry.type]}")(name, self._java_value(entry))
            return m
        if body_type is BodyType.STREAM and isinstance(entries, tuple):
            m = self._session.createStreamMessage()
            for item in entries:
                getattr(m, f"write{_JAVA_SUFFIXES[item.type]}")(self._java_value(item))
            return m
        if body_type is BodyType.MESSAGE and body is None:
            return self._session.createMessage()
        raise ValueError(f"cannot send a {body_type.value} with this body")

    def build(self, message: JmsMessage) -> Any:
        m = self._with_body(message)
        for name, prop in message.properties.items():
            getattr(m, _PROPERTY_SETTERS[prop.type])(name, prop.value)
        if message.correlation_id is not None:
            m.setJMSCorrelationID(message.correlation_id)
        if message.type is not None:
            m.setJMSType(message.type)
        if message.reply_to is not None:
            m.setJMSReplyTo(self.destination(message.reply_to))
        return m
