"""The native format: exact Kafka headers, typed round trips, refusals, malformed headers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.message import BodyType, Destination, JmsMessage, Property, PropertyType
from tests.formats.strategies import QUEUE, canonical, messages
from tests.support.examples import examples

GOLDEN_MESSAGE = JmsMessage(
    QUEUE,
    body="hello",
    message_id="ID:1",
    correlation_id="c-7",
    type="order",
    timestamp=1_700_000_000_000,
    properties={
        "region": Property.string("emea"),
        "count": Property(PropertyType.INT, 3),
        "ratio": Property(PropertyType.FLOAT, 0.5),
        "express": Property(PropertyType.BOOLEAN, True),
    },
)
GOLDEN_HEADERS = [
    ("jms.JMSDestination", b"queue://orders"),
    ("jms.JMSMessageID", b"ID:1"),
    ("jms.JMSCorrelationID", b"c-7"),
    ("jms.JMSType", b"order"),
    ("jms.JMSPriority", b"4"),
    ("jms.JMSDeliveryMode", b"2"),
    ("jms.JMSExpiration", b"0"),
    ("jms.JMSTimestamp", b"1700000000000"),
    ("jms.JMSRedelivered", b"false"),
    ("jms.region", b"emea"),
    ("jms.count", b"3"),
    ("jms.ratio", b"0.5"),
    ("jms.express", b"true"),
    ("jmsbridge.types", b"count=int,ratio=float,express=boolean"),
    ("jmsbridge.messageType", b"TextMessage"),
    ("jmsbridge.origin", b"orders"),
]


def test_golden_encode() -> None:
    record = native.encode(GOLDEN_MESSAGE, origin="orders")
    assert record.headers == GOLDEN_HEADERS
    assert record.value == b"hello"


def test_golden_decode() -> None:
    assert native.decode(KafkaRecord(value=b"hello", headers=GOLDEN_HEADERS), None) == GOLDEN_MESSAGE


def test_plain_kafka_record() -> None:
    record = KafkaRecord(value=b"\x00\x01", headers=[("jms.who", b"me"), ("other", b"x")])
    message = native.decode(record, QUEUE)
    assert message == JmsMessage(
        QUEUE, body_type=BodyType.BYTES, body=b"\x00\x01", properties={"who": Property.string("me")}
    )


@settings(max_examples=examples(150), deadline=None)
@given(messages())
def test_round_trip(message: JmsMessage) -> None:
    decoded = native.decode(native.encode(message, "b"), None)
    assert canonical(decoded) == canonical(message)


def test_large_body() -> None:
    message = JmsMessage(QUEUE, body="é" * 500_000)
    assert native.decode(native.encode(message), None) == message


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            JmsMessage(QUEUE, properties={"JMSType": Property.string("x")}),
            "property JMSType: the name of a JMS header",
        ),
        (JmsMessage(QUEUE, properties={"a,b": Property(PropertyType.INT, 1)}), "without ',' or '='"),
        (JmsMessage(QUEUE, properties={"a=b": Property(PropertyType.INT, 1)}), "without ',' or '='"),
        (JmsMessage(QUEUE, properties={"": Property(PropertyType.INT, 1)}), "must be non-empty"),
        (JmsMessage(QUEUE, type="\ud800"), "header jms.JMSType: character 0 is a lone surrogate"),
        (JmsMessage(QUEUE, body="\ud800"), "value: character 0 is a lone surrogate"),
    ],
)
def test_refusals(message: JmsMessage, error: str) -> None:
    with pytest.raises(FormatError, match=error):
        native.encode(message)


def test_string_properties_may_have_any_name() -> None:
    message = JmsMessage(QUEUE, properties={"a,b=c": Property.string("v"), "": Property.string("")})
    assert native.decode(native.encode(message), None) == message


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ([("jms.x", b"\xff")], r"header jms.x: not UTF-8 at byte 0"),
        ([("jms.x", b"1.5"), ("jmsbridge.types", b"x=int")], r"header jms.x: invalid literal"),
        ([("jms.x", b"300"), ("jmsbridge.types", b"x=byte")], r"header jms.x: 300 is not a valid JMS byte"),
        ([("jms.x", b"yes"), ("jmsbridge.types", b"x=boolean")], r"header jms.x: 'yes' is not true or false"),
        ([("jms.x", b"1e999"), ("jmsbridge.types", b"x=double")], r"header jms.x: '1e999' is not a finite"),
        ([("jms.x", b"0.1"), ("jmsbridge.types", b"x=float")], r"header jms.x: 0.1 is not a valid JMS float"),
        ([("jmsbridge.types", b"x=integer")], r"header jmsbridge.types: entry 'x=integer' is not NAME=TYPE"),
        ([("jmsbridge.messageType", b"Text")], r"header jmsbridge.messageType: unknown JMS message type"),
        ([("jms.JMSDeliveryMode", b"3")], r"header jms.JMSDeliveryMode: 3 is neither 1 nor 2"),
        ([("jms.JMSPriority", b"high")], r"header jms.JMSPriority: invalid literal"),
        ([("jms.JMSReplyTo", b"x")], r"header jms.JMSReplyTo: destination 'x' is not"),
        ([("jmsbridge.messageType", b"TextMessage")], r"value: TextMessage body is not UTF-8 at byte 1"),
    ],
)
def test_malformed(headers: list[tuple[str, bytes]], error: str) -> None:
    with pytest.raises(FormatError, match=error):
        native.decode(KafkaRecord(value=b"a\xff", headers=headers), QUEUE)


def test_missing_destination() -> None:
    with pytest.raises(FormatError, match=r"jms.JMSDestination: missing"):
        native.decode(KafkaRecord(value=None), None)
    assert native.decode(KafkaRecord(value=None), QUEUE).destination == QUEUE
    record = KafkaRecord(value=None, headers=[("jms.JMSDestination", b"topic://t")])
    assert native.decode(record, QUEUE).destination == Destination.parse("topic://t")
