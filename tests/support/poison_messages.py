"""Poison messages as a JMS producer can really send them, each with the reason the bridge must give.

The adapter's own writer refuses what the bridge cannot carry, so these are built on a raw
`javax.jms.Session` (`testbed.jms.send_built`). A lone surrogate in a string *property* is not
among them: ActiveMQ's OpenWire hands such a property over with U+FFFD in its place, so on this broker
it never reaches the bridge; a header (JMSType) keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from testbed.jms import java_string

Builder = Callable[[Any], Any]

LARGE_BODY_CHARS = 5_000_000  # over the 1,000,000 bytes of librdkafka's default message.max.bytes


def lone_surrogate_body(session: Any) -> Any:
    return session.createTextMessage(java_string("half a pair: \ud800"))


def lone_surrogate_header(session: Any) -> Any:
    message = session.createTextMessage("a fine body")
    message.setJMSType(java_string("type \udfff"))
    return message


def too_large(session: Any) -> Any:
    return session.createTextMessage("x" * LARGE_BODY_CHARS)


def unmappable_property(session: Any) -> Any:
    message = session.createTextMessage("a fine body")
    message.setIntProperty("a,b", 1)  # `native` records typed properties as `name=type,...`
    return message


def unreadable_text(session: Any) -> Any:
    """A TextMessage whose OpenWire content is no UTF-8 the Java client decodes: what an OpenWire producer
    of another language can put on the wire. ActiveMQ stores it; the bridge's `getText()` throws
    (`UTFDataFormatException`)."""
    import jpype

    message = session.createTextMessage()
    content = jpype.JArray(jpype.JByte)([0, 0, 0, 4, -1, -1, -1, -1])  # a length, then 4 invalid bytes
    message.setContent(jpype.JClass("org.apache.activemq.util.ByteSequence")(content))
    message.setLongProperty("seq", -1)
    return message


POISON: dict[str, tuple[Builder, str]] = {
    "lone surrogate in the body": (lone_surrogate_body, "InvalidText"),
    "lone surrogate in JMSType": (lone_surrogate_header, "InvalidText"),
    "5 MB text": (too_large, "MessageTooLarge"),
    "typed property named a,b": (unmappable_property, "UnmappableProperty"),
    "text the client cannot decode": (unreadable_text, "UnreadableMessage"),
}


def good(seq: int) -> Builder:
    def build(session: Any) -> Any:
        message = session.createTextMessage(f"good {seq}")
        message.setLongProperty("seq", seq)
        return message

    return build
