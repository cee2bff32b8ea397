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
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    JmsMessage,
    Property,
    PropertyType,
    PropertyValue,
)

_DELIVERY_MODES = {int(mode): mode for mode in DeliveryMode}

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
        body_type = BodyType.MESSAGE
        for interface, kind in self._body_types:
            if isinstance(m, interface):
                body_type = kind
                break
        body: str | bytes | None = None
        if body_type is BodyType.TEXT:
            body = _optional_text(self._get_text(m))
        elif body_type is BodyType.BYTES:
            buffer = self._byte_array(int(self._get_body_length(m)))
            self._read_bytes(m, buffer)
            body = bytes(buffer)

        properties: dict[str, Property] = {}
        names = self._get_property_names(m)
        has_more, next_name, get_property = self._has_more, self._next, self._get_property
        property_types = self._property_types
        while has_more(names):
            name = next_name(names)
            value = get_property(m, name)
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
        )


class MessageWriter:
    """Builds Java messages in one session from `JmsMessage`s; caches the session's destinations."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._destinations: dict[Destination, Any] = {}
        self._byte_array = jpype.JArray(jpype.JByte)

    def destination(self, destination: Destination) -> Any:
        java_destination = self._destinations.get(destination)
        if java_destination is None:
            if destination.kind is DestinationKind.QUEUE:
                java_destination = self._session.createQueue(destination.name)
            else:
                java_destination = self._session.createTopic(destination.name)
            self._destinations[destination] = java_destination
        return java_destination

    def build(self, message: JmsMessage) -> Any:
        body = message.body
        body_type = message.body_type
        if body_type is BodyType.TEXT:
            if body is not None and not isinstance(body, str):
                raise ValueError("a TextMessage body must be str or None")
            m = self._session.createTextMessage(body)
        elif body_type is BodyType.BYTES:
            if body is not None and not isinstance(body, bytes):
                raise ValueError("a BytesMessage body must be bytes or None")
            m = self._session.createBytesMessage()
            if body:
                m.writeBytes(self._byte_array(body))
        elif body_type is BodyType.MESSAGE:
            if body is not None:
                raise ValueError("a plain Message has no body")
            m = self._session.createMessage()
        else:
            raise ValueError(
                f"cannot send a {body_type.value}: the bridge carries text and bytes bodies only"
            )

        for name, prop in message.properties.items():
            getattr(m, _PROPERTY_SETTERS[prop.type])(name, prop.value)
        if message.correlation_id is not None:
            m.setJMSCorrelationID(message.correlation_id)
        if message.type is not None:
            m.setJMSType(message.type)
        if message.reply_to is not None:
            m.setJMSReplyTo(self.destination(message.reply_to))
        return m
