"""Messages keep everything on a round trip through a real JMS producer, broker and consumer."""

from __future__ import annotations

import math
import time
from typing import Any

import jpype
import pytest

from bridge_job.config import JmsSource
from bridge_job.jms import JmsConnection
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    Entry,
    EntryType,
    JmsMessage,
    Property,
    PropertyType,
)
from testbed.jms import java_string, receive, send_built
from tests.support.entries import EVERY_ENTRY, EVERY_ITEM, same_entries


def queue_of(source: JmsSource) -> Destination:
    assert source.queue is not None
    return Destination(DestinationKind.QUEUE, source.queue)


def round_trip(connection: JmsConnection, source: JmsSource, *messages: JmsMessage) -> list[JmsMessage]:
    with connection.producer() as producer:
        ids = [producer.send(m) for m in messages]
    with connection.consumer(source) as consumer:
        received = receive(consumer, len(messages))
        consumer.commit()
    # In the order sent: the broker may reorder (priorities, persistent and non-persistent cursors).
    by_id = {m.message_id: m for m in received}
    assert set(by_id) == set(ids)
    return [by_id[i] for i in ids]


EDGE_PROPERTIES = {
    # BMP only: ActiveMQ Classic's OpenWire writes property strings as CESU-8 and reads them as UTF-8,
    # which turns characters outside the BMP (emoji) into U+FFFD; text bodies are not affected.
    "s": Property(PropertyType.STRING, "héllo ✓ Ω 中文"),
    "s_empty": Property(PropertyType.STRING, ""),
    "t": Property(PropertyType.BOOLEAN, True),
    "f": Property(PropertyType.BOOLEAN, False),
    "b_min": Property(PropertyType.BYTE, -128),
    "b_max": Property(PropertyType.BYTE, 127),
    "h_min": Property(PropertyType.SHORT, -32768),
    "h_max": Property(PropertyType.SHORT, 32767),
    "i_min": Property(PropertyType.INT, -(2**31)),
    "i_max": Property(PropertyType.INT, 2**31 - 1),
    "l_min": Property(PropertyType.LONG, -(2**63)),
    "l_max": Property(PropertyType.LONG, 2**63 - 1),
    "l_zero": Property(PropertyType.LONG, 0),
    "fl": Property(PropertyType.FLOAT, 1.5),
    "fl_inf": Property(PropertyType.FLOAT, -math.inf),
    "fl_nan": Property(PropertyType.FLOAT, math.nan),
    "d": Property(PropertyType.DOUBLE, 0.1),
    "d_nan": Property(PropertyType.DOUBLE, math.nan),
    "d_inf": Property(PropertyType.DOUBLE, math.inf),
    "d_neg_zero": Property(PropertyType.DOUBLE, -0.0),
}


def same_value(a: Property, b: Property) -> bool:
    if isinstance(a.value, float) and isinstance(b.value, float):
        if math.isnan(a.value):
            return math.isnan(b.value)
        return a.value == b.value and math.copysign(1, a.value) == math.copysign(1, b.value)
    return a.value == b.value and type(a.value) is type(b.value)


def test_typed_properties_keep_type_and_value(connection: JmsConnection, queue: JmsSource) -> None:
    sent = JmsMessage(destination=queue_of(queue), body="p", properties=EDGE_PROPERTIES)
    (got,) = round_trip(connection, queue, sent)
    assert set(got.properties) == set(EDGE_PROPERTIES)
    for name, prop in EDGE_PROPERTIES.items():
        assert got.properties[name].type is prop.type, name
        assert same_value(got.properties[name], prop), (name, got.properties[name], prop)


@pytest.mark.parametrize(
    ("body_type", "body", "expected"),
    [
        (BodyType.TEXT, "plain text", "plain text"),
        (BodyType.TEXT, "ünïcødé ✓ 😀 \u0000 end", "ünïcødé ✓ 😀 \u0000 end"),
        (BodyType.TEXT, "", ""),
        (BodyType.TEXT, None, None),
        (BodyType.BYTES, bytes(range(256)) * 4, bytes(range(256)) * 4),
        (BodyType.BYTES, b"", b""),
        (BodyType.BYTES, None, b""),  # JMS cannot tell an empty BytesMessage from one without a body
        (BodyType.MESSAGE, None, None),
    ],
    ids=["text", "unicode", "empty-text", "null-text", "bytes", "empty-bytes", "null-bytes", "message"],
)
def test_bodies(
    connection: JmsConnection, queue: JmsSource, body_type: BodyType, body: Any, expected: Any
) -> None:
    (got,) = round_trip(connection, queue, JmsMessage(queue_of(queue), body_type=body_type, body=body))
    assert got.body_type is body_type
    assert got.body == expected
    assert type(got.body) is type(expected)


def test_headers(connection: JmsConnection, queue: JmsSource, unique: str) -> None:
    reply_queue = Destination(DestinationKind.QUEUE, f"replies.{unique}")
    reply_topic = Destination(DestinationKind.TOPIC, f"replies.{unique}")
    before_ms = time.time_ns() // 1_000_000
    first = JmsMessage(
        destination=queue_of(queue),
        body="request",
        correlation_id="corr-é-1",
        reply_to=reply_queue,
        type="OrderCreated",
        priority=7,
        delivery_mode=DeliveryMode.NON_PERSISTENT,
        expiration=before_ms + 60_000,
    )
    second = JmsMessage(destination=queue_of(queue), body="defaults", reply_to=reply_topic, priority=0)
    got_first, got_second = round_trip(connection, queue, first, second)
    after_ms = time.time_ns() // 1_000_000

    assert got_first.destination == queue_of(queue)
    assert got_first.correlation_id == "corr-é-1"
    assert got_first.reply_to == reply_queue
    assert got_first.type == "OrderCreated"
    assert got_first.priority == 7
    assert got_first.delivery_mode is DeliveryMode.NON_PERSISTENT
    assert before_ms + 60_000 <= got_first.expiration <= after_ms + 60_000
    assert before_ms <= got_first.timestamp <= after_ms
    assert got_first.redelivered is False
    assert got_first.message_id and got_first.message_id != got_second.message_id

    assert got_second.reply_to == reply_topic
    assert got_second.correlation_id is None
    assert got_second.type is None
    assert got_second.priority == 0
    assert got_second.delivery_mode is DeliveryMode.PERSISTENT
    assert got_second.expiration == 0


@pytest.mark.parametrize("body_type", [BodyType.MAP, BodyType.STREAM])
def test_map_and_stream_entries_of_every_type_come_back_equal(
    connection: JmsConnection, queue: JmsSource, body_type: BodyType
) -> None:
    entries = EVERY_ENTRY if body_type is BodyType.MAP else EVERY_ITEM
    sent = JmsMessage(queue_of(queue), body_type=body_type, entries=entries, properties=EDGE_PROPERTIES)
    (got,) = round_trip(connection, queue, sent)
    assert got.body_type is body_type and got.body is None
    assert same_entries(got.entries, entries), got.entries


def test_map_and_stream_messages_of_another_client_are_read_and_an_object_message_is_not(
    connection: JmsConnection, spec: Any, queue: JmsSource
) -> None:
    """Messages a JMS application built with the plain API; an ObjectMessage's body is never read."""
    from bridge_job.jms.factories import connection_factory

    raw = connection_factory(spec).createConnection()
    try:
        session = raw.createSession(False, 1)
        destination = session.createQueue(queue.queue)
        producer = session.createProducer(destination)
        map_message = session.createMapMessage()
        map_message.setString("key", "value")
        map_message.setObject("count", jpype.JClass("java.lang.Short")(3))
        map_message.setIntProperty("n", 1)
        object_message = session.createObjectMessage(jpype.JClass("java.lang.String")("serialized"))
        stream_message = session.createStreamMessage()
        stream_message.writeInt(5)
        stream_message.writeBytes(jpype.JArray(jpype.JByte)([1, -1]))
        stream_message.writeObject(None)
        for m in (map_message, object_message, stream_message):
            producer.send(m)
    finally:
        raw.close()

    with connection.consumer(queue) as consumer:
        got = receive(consumer, 3)
        consumer.commit()
    assert [m.body_type for m in got] == [BodyType.MAP, BodyType.OBJECT, BodyType.STREAM]
    assert got[0].entries == {"key": Entry(EntryType.STRING, "value"), "count": Entry(EntryType.SHORT, 3)}
    assert got[0].properties == {"n": Property(PropertyType.INT, 1)}
    assert got[1].body is None and got[1].entries is None
    assert got[2].entries == (
        Entry(EntryType.INT, 5),
        Entry(EntryType.BYTES, b"\x01\xff"),
        Entry(EntryType.NULL, None),
    )
    assert all(m.message_id for m in got)


def test_lone_surrogates_are_read_as_they_are(spec: Any, connection: JmsConnection, queue: JmsSource) -> None:
    """A Java string may hold a lone UTF-16 surrogate (UTF-8 has no form for it): reading keeps it, so that
    one such message never fails a whole receive."""
    assert queue.queue is not None
    lone = "a\ud800b"

    def text_body(session: Any) -> Any:
        return session.createTextMessage(java_string(lone))

    def string_property(session: Any) -> Any:
        message = session.createTextMessage("fine")
        message.setStringProperty("p", java_string(lone))
        message.setJMSCorrelationID(java_string("c\udfff"))
        return message

    send_built(spec.connection_factory.properties["brokerURL"], queue.queue, [text_body, string_property])
    with connection.consumer(queue) as consumer:
        first, second = receive(consumer, 2)
        consumer.commit()
    assert first.body == lone
    assert first.invalid_text() == "the text body"
    assert second.body == "fine"
    # ActiveMQ's OpenWire writes property strings as CESU-8 and reads them as UTF-8: the broker hands
    # the property over with U+FFFD in place of the surrogate (another provider may hand it over as is).
    assert second.properties["p"] in (Property.string(lone), Property.string("a\ufffdb"))
    assert second.correlation_id == "c\udfff"
    assert second.invalid_text() == "header JMSCorrelationID"


def test_send_to_another_destination(connection: JmsConnection, queue: JmsSource, unique: str) -> None:
    elsewhere = JmsSource(queue=f"{queue.queue}.elsewhere")
    message = JmsMessage(destination=queue_of(queue), body="redirected")
    with connection.producer() as producer:
        producer.send(message, queue_of(elsewhere))
    with connection.consumer(elsewhere) as consumer:
        (got,) = receive(consumer, 1)
        consumer.commit()
    assert got.destination == queue_of(elsewhere)
    assert got.body == "redirected"


def test_unsendable_bodies_are_refused(connection: JmsConnection, queue: JmsSource) -> None:
    with connection.producer() as producer:
        with pytest.raises(ValueError, match="MapMessage"):
            producer.send(JmsMessage(queue_of(queue), body_type=BodyType.MAP))  # without its entries
        with pytest.raises(ValueError, match="TextMessage body must be str"):
            producer.send(JmsMessage(queue_of(queue), body_type=BodyType.TEXT, body=b"bytes"))
