"""The json format: exact JSON, typed round trips, plain JSON from other producers, malformed JSON."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from bridge_job.formats import FormatError, KafkaRecord, jsonmode
from bridge_job.message import BodyType, DeliveryMode, Destination, JmsMessage, Property, PropertyType
from tests.formats.strategies import QUEUE, canonical, messages
from tests.support.examples import examples


def read(value: str | bytes) -> JmsMessage:
    data = value.encode() if isinstance(value, str) else value
    return jsonmode.decode(KafkaRecord(value=data), QUEUE)


GOLDEN_MESSAGE = JmsMessage(
    Destination.parse("queue://orders"),
    body="héllo",
    message_id="ID:1",
    reply_to=Destination.parse("topic://replies"),
    timestamp=1_700_000_000_000,
    properties={
        "region": Property.string("emea"),
        "express": Property(PropertyType.BOOLEAN, True),
        "count": Property(PropertyType.INT, 3),
        "ratio": Property(PropertyType.FLOAT, 0.5),
        "big": Property(PropertyType.DOUBLE, -math.inf),
    },
)
GOLDEN_JSON = (
    '{"headers":{"JMSDestination":"queue://orders","JMSMessageID":"ID:1","JMSReplyTo":"topic://replies",'
    '"JMSPriority":4,"JMSDeliveryMode":2,"JMSExpiration":0,"JMSTimestamp":1700000000000,"JMSRedelivered":false},'
    '"properties":{"region":"emea","express":true,"count":3,"ratio":0.5,"big":"-Infinity"},'
    '"types":{"count":"int","ratio":"float","big":"double"},'
    '"text":"héllo"}'
)


def test_golden_encode() -> None:
    record = jsonmode.encode(GOLDEN_MESSAGE, origin="orders")
    assert record.value == GOLDEN_JSON.encode()
    assert record.headers == [("jmsbridge.origin", b"orders")]


def test_golden_decode() -> None:
    assert read(GOLDEN_JSON) == GOLDEN_MESSAGE


def test_bytes_body_is_base64() -> None:
    message = JmsMessage(QUEUE, body_type=BodyType.BYTES, body=b"\x00\xffhi")
    value = jsonmode.encode(message).value or b""
    assert value.endswith(b',"properties":{},"bytes":"AP9oaQ=="}')
    assert read(value) == message


def test_no_body_and_other_message_types() -> None:
    for body_type, member in ((BodyType.TEXT, b'"text":null'), (BodyType.BYTES, b'"bytes":null')):
        message = JmsMessage(QUEUE, body_type=body_type)
        value = jsonmode.encode(message).value or b""
        assert value.endswith(member + b"}")
        assert read(value) == message
    message = JmsMessage(QUEUE, body_type=BodyType.MAP)
    value = jsonmode.encode(message).value or b""
    assert value.endswith(b'"messageType":"MapMessage"}')
    assert read(value) == message


def test_plain_json_from_other_producers() -> None:
    assert read('{"text": "hi"}') == JmsMessage(QUEUE, body="hi")
    assert read("{}") == JmsMessage(QUEUE)
    message = read('{"properties": {"n": 3, "x": 2.5, "e": 1e3, "s": "v", "b": false}}')
    assert message.properties == {
        "n": Property(PropertyType.LONG, 3),
        "x": Property(PropertyType.DOUBLE, 2.5),
        "e": Property(PropertyType.DOUBLE, 1000.0),
        "s": Property.string("v"),
        "b": Property(PropertyType.BOOLEAN, False),
    }
    message = read('{"headers": {"JMSType": "abc", "JMSPriority": 9, "JMSCorrelationID": null}, "text": "t"}')
    assert (message.type, message.priority, message.correlation_id) == ("abc", 9, None)
    assert read('{"headers": {"JMSDestination": "topic://t"}}').destination == Destination.parse("topic://t")


def test_types_written_by_others_are_converted() -> None:
    message = read(
        '{"properties": {"f": 0.1, "d": 3, "n": "NaN"}, "types": {"f": "float", "d": "double", "n": "float"}}'
    )
    assert message.properties["f"] == Property(PropertyType.FLOAT, float.fromhex("0x1.99999ap-4"))
    assert message.properties["d"] == Property(PropertyType.DOUBLE, 3.0)
    assert math.isnan(float(message.properties["n"].value))


@settings(max_examples=examples(150), deadline=None)
@given(messages())
def test_round_trip(message: JmsMessage) -> None:
    decoded = jsonmode.decode(jsonmode.encode(message, "b"), None)
    assert canonical(decoded) == canonical(message)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (b"\xff", r"value byte 0: not UTF-8"),
        ('{"text": "a",}', r"value byte 13: invalid JSON: Expecting property name"),
        ('{"text": "é" x}', r"value byte 14: invalid JSON: Expecting ',' delimiter"),
        ('{"properties": {"x": NaN}}', r"NaN is not JSON"),
        ("[" * 100_000 + "]" * 100_000, r"value: (JSON nested too deeply|invalid JSON)"),
        ('{"n": ' + "9" * 5000 + "}", r"value: invalid JSON"),
        ("[1]", r"value: expected a JSON object, got an array"),
        ('{"txt": "a"}', r"txt: unknown member"),
        ('{"headers": []}', r"headers: expected a JSON object, got an array"),
        ('{"headers": {"JMSFoo": 1}}', r"headers.JMSFoo: not a JMS header"),
        ('{"headers": {"JMSDestination": "orders"}}', r"headers.JMSDestination: destination 'orders' is not"),
        ('{"headers": {"JMSDestination": 5}}', r"headers.JMSDestination: expected a string, got a number 5"),
        (
            '{"headers": {"JMSPriority": "4"}}',
            r"headers.JMSPriority: expected an integer \(int\), got a string",
        ),
        ('{"headers": {"JMSPriority": true}}', r"headers.JMSPriority: expected an integer \(int\), got true"),
        ('{"headers": {"JMSDeliveryMode": 3}}', r"headers.JMSDeliveryMode: 3 is neither 1"),
        (
            '{"headers": {"JMSTimestamp": 1.5}}',
            r"headers.JMSTimestamp: expected an integer \(long\), got a number",
        ),
        ('{"headers": {"JMSExpiration": 9223372036854775808}}', r"headers.JMSExpiration: .* out of range"),
        ('{"headers": {"JMSRedelivered": 1}}', r"headers.JMSRedelivered: expected true or false"),
        ('{"properties": {"x": [1]}}', r"properties.x: expected a string, boolean or number, got an array"),
        ('{"properties": {"x": null}}', r"properties.x: expected a string, boolean or number, got null"),
        ('{"properties": {"x": 9223372036854775808}}', r"properties.x: 9223372036854775808 is out of range"),
        (
            '{"properties": {"x": 128}, "types": {"x": "byte"}}',
            r"properties.x: 128 is out of range for a byte",
        ),
        ('{"properties": {"x": 1.5}, "types": {"x": "int"}}', r"properties.x: expected an integer \(int\)"),
        ('{"properties": {"x": "1"}, "types": {"x": "double"}}', r"properties.x: expected a number, NaN"),
        ('{"properties": {"x": 1e300}, "types": {"x": "float"}}', r"properties.x: 1e\+300 is out of range"),
        ('{"properties": {"x": 1}, "types": {"x": "string"}}', r"properties.x: expected a string"),
        ('{"properties": {"x": 1}, "types": {"x": "boolean"}}', r"properties.x: expected true or false"),
        ('{"properties": {"x": 1}, "types": {"x": "integer"}}', r"types.x: expected one of string, boolean"),
        ('{"properties": {}, "types": {"x": "int"}}', r"types.x: there is no property 'x'"),
        ('{"types": []}', r"types: expected a JSON object"),
        ('{"text": 1}', r"text: expected a string, got a number 1"),
        ('{"bytes": "a"}', r"bytes: not base64"),
        ('{"bytes": "é"}', r"bytes: not base64"),
        ('{"text": "a", "bytes": ""}', r"text, bytes: a message has one body"),
        ('{"messageType": "Bytes"}', r"messageType: expected one of TextMessage"),
        (
            '{"messageType": "BytesMessage", "text": "a"}',
            r"messageType: BytesMessage does not have a text body",
        ),
    ],
)
def test_malformed(value: str | bytes, error: str) -> None:
    with pytest.raises(FormatError, match=error):
        read(value)


def test_missing_destination_and_null_value() -> None:
    with pytest.raises(
        FormatError, match=r"headers.JMSDestination: missing, and the route names no destination"
    ):
        jsonmode.decode(KafkaRecord(value=b"{}"), None)
    with pytest.raises(FormatError, match="value: missing"):
        jsonmode.decode(KafkaRecord(value=None), QUEUE)


def test_refusals() -> None:
    with pytest.raises(FormatError, match=r"value: character \d+ is a lone surrogate"):
        jsonmode.encode(JmsMessage(QUEUE, body="a\ud800"))
    with pytest.raises(FormatError, match="a TextMessage body must be text"):
        jsonmode.encode(JmsMessage(QUEUE, body=b"x"))
    with pytest.raises(FormatError, match="a MapMessage has no body"):
        jsonmode.encode(JmsMessage(QUEUE, body_type=BodyType.MAP, body=b"x"))


def test_delivery_mode_is_a_number() -> None:
    message = JmsMessage(QUEUE, delivery_mode=DeliveryMode.NON_PERSISTENT)
    assert b'"JMSDeliveryMode":1' in (jsonmode.encode(message).value or b"")
