"""The envelope format: byte-exact vectors worked out from the reference protocol, round trips, refusals."""

from __future__ import annotations

import dataclasses
import math
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_job.formats import FormatError, KafkaRecord, envelope, envelope_wire
from bridge_job.message import BodyType, DeliveryMode, JmsMessage, Property, PropertyType
from tests.formats.strategies import QUEUE, canonical, messages, property_values
from tests.support.examples import examples

TEXT_HEADERS = [("jmsbridge.messageType", b"TextMessage")]


def h(hex_bytes: str) -> bytes:
    """Bytes from hex written with spaces and `|` separators for reading."""
    return bytes.fromhex(hex_bytes.replace("|", " "))


def read(value: bytes, headers: list[tuple[str, bytes]] | None = None) -> JmsMessage:
    return envelope.decode(KafkaRecord(value=value, headers=headers or []), QUEUE)


# ---------------------------------------------------------------------------------------------------
# Golden vectors, worked out by hand from the protocol facts


def test_body_hash_is_javas_int_hash_over_unsigned_bytes() -> None:
    assert envelope_wire.body_hash(b"") == 0
    assert envelope_wire.body_hash(b"hi") == 31 * 0x68 + 0x69 == 0x0D01
    assert envelope_wire.body_hash(b"\xff") == 255  # b & 0xff: the byte counts as 255, not -1
    # Java folklore: "polygenelubricants".hashCode() == Integer.MIN_VALUE (same sum for ASCII bytes).
    assert envelope_wire.body_hash(b"polygenelubricants") == 0x80000000


def test_encode_minimal_message() -> None:
    message = JmsMessage(QUEUE, body_type=BodyType.BYTES, body=b"hi")
    record = envelope.encode(message)
    assert record.value == h(
        "ab cd 01 00"  # marker, version 1.0
        "| 02"  # two headers
        "| 82 02"  # -126 BRIDGE_mode, small int 2 (persistent)
        "| 85 04"  # -123 BRIDGE_priority, small int 4
        "| 00 00 00 02 | 00 00 0d 01 | 68 69"  # body length 2, hash 3329, "hi"
    )
    assert record.headers == [
        ("jms.JMSDestination", b"queue://orders"),
        ("jmsbridge.messageType", b"BytesMessage"),
    ]


EVERY_TYPE = h(
    "ab cd 01 00 | 10"  # 16 headers
    "| 81 88 00 00 01 8b cf e5 68 00"  # -127 BRIDGE_timestamp, long 1700000000000
    "| 82 01"  # -126 BRIDGE_mode, small int 1 (non-persistent)
    "| 83 88 00 00 01 8b cf e5 6b e8"  # -125 BRIDGE_expirationTime, long 1700000001000
    "| 87 92 03 61 62 63"  # -121 BRIDGE_correlation_id, short string "abc"
    "| 84 91 00 05 6f 72 64 65 72"  # -124 BRIDGE_type, string (u16 length) "order"
    "| 85 09"  # -123 BRIDGE_priority, small int 9
    "| 86 90"  # -122 BRIDGE_redelivered, true
    "| 80 88 00 00 00 00 00 00 00 07"  # -128 BRIDGE_deliveryTime, long 7
    "| 01 62 8e ff"  # "b": byte -1
    "| 01 73 8c 80 00"  # "s": short -32768
    "| 01 69 8a 7f ff ff ff"  # "i": int 2147483647
    "| 01 6e 93"  # "n": -109, the smallest small int
    "| 01 6c 88 80 00 00 00 00 00 00 00"  # "l": long -2**63
    "| 01 66 86 3f c0 00 00"  # "f": float 1.5
    "| 01 64 85 40 09 21 fb 54 44 2d 18"  # "d": double pi
    "| 88 92 04 70 72 6f 64 | 00 00 00 00 | 00 00 00 00"  # -120 ENV, "prod"; empty body, hash 0
)


def test_decode_every_type_and_well_known_name() -> None:
    message = read(EVERY_TYPE)
    assert message.timestamp == 1_700_000_000_000
    assert message.delivery_mode is DeliveryMode.NON_PERSISTENT
    assert message.expiration == 1_700_000_001_000
    assert message.correlation_id == "abc"
    assert message.type == "order"
    assert message.priority == 9
    assert message.redelivered is True
    assert message.body_type is BodyType.BYTES  # no messageType header: a NATS producer's record
    assert message.body == b""
    assert message.properties == {
        "BRIDGE_deliveryTime": Property(PropertyType.LONG, 7),
        "b": Property(PropertyType.BYTE, -1),
        "s": Property(PropertyType.SHORT, -32768),
        "i": Property(PropertyType.INT, 2147483647),
        "n": Property(PropertyType.INT, -109),
        "l": Property(PropertyType.LONG, -(2**63)),
        "f": Property(PropertyType.FLOAT, 1.5),
        "d": Property(PropertyType.DOUBLE, math.pi),
        "ENV": Property.string("prod"),
    }


def test_every_type_vector_survives_our_encoder() -> None:
    message = read(EVERY_TYPE)
    assert read(envelope.encode(message).value or b"") == message


def test_type_bytes_from_minus_109_up_are_small_ints() -> None:
    for code in range(-109, 128):
        value = bytes([0xAB, 0xCD, 1, 0, 1, 1, ord("x"), code & 0xFF]) + bytes(8)
        assert read(value).properties["x"] == Property(PropertyType.INT, code)


def test_decode_what_the_reference_encoder_writes() -> None:
    # BaseMessageWithHeaders for a JMS message with timestamp, priority 4, persistent, an int property 5
    # and a string property: its inverted small-int test writes 5 as a full int (8a 00000005).
    value = h(
        "ab cd 01 00 | 05"
        "| 82 02 | 81 88 00 00 01 8b cf e5 68 00 | 85 04"
        "| 05 63 6f 75 6e 74 8a 00 00 00 05"  # "count": int 5, full form
        "| 06 72 65 67 69 6f 6e 92 04 65 6d 65 61"  # "region": short string "emea"
        "| 00 00 00 05 | 05 e9 18 d2 | 68 65 6c 6c 6f"  # "hello", hash 99162322
    )
    message = read(value, TEXT_HEADERS)
    assert message.body == "hello"
    assert message.timestamp == 1_700_000_000_000
    assert message.properties == {"count": Property(PropertyType.INT, 5), "region": Property.string("emea")}


def test_small_int_form_only_in_its_range() -> None:
    def written(value: int) -> bytes:
        prop = {"x": Property(PropertyType.INT, value)}
        return envelope_wire.pack(prop, b"")[5 + 2 : -8]  # after marker, count and the name "x"

    assert written(127) == h("7f")
    assert written(0) == h("00")
    assert written(-109) == h("93")
    # The reference writes -110..-127 as one byte, which its decoder reads as a type code (-112: true).
    assert written(-112) == h("8a ff ff ff 90")
    assert written(128) == h("8a 00 00 00 80")


def test_string_forms_by_utf8_length() -> None:
    def written(text: str) -> bytes:
        return envelope_wire.pack({"x": Property.string(text)}, b"")[5 + 2 : -8]

    assert written("é") == h("92 02 c3 a9")  # length in bytes, not characters
    assert written("a" * 127)[:2] == h("92 7f")
    assert written("a" * 128)[:3] == h("91 00 80")
    assert written("a" * 65535)[:3] == h("91 ff ff")


def test_reference_reads_invalid_utf8_as_replacement_characters() -> None:
    value = h("ab cd 01 00 | 01 | 01 78 92 02 c3 28 | 00 00 00 00 | 00 00 00 00")
    assert read(value).properties["x"] == Property.string("\ufffd(")


def test_plain_bodies() -> None:
    assert read(b"hello").body == b"hello"
    assert read(b"hello", TEXT_HEADERS).body == "hello"
    assert read(h("ab cd 01")).body == h("ab cd 01")  # too short for the marker
    assert read(h("ab cd 02 00 05")).body == h("ab cd 02 00 05")  # another version: not an envelope
    assert read(b"").body == b""
    assert envelope.decode(KafkaRecord(value=None), QUEUE).body is None


def test_count_of_zero_or_less_means_no_headers_and_trailing_bytes_are_ignored() -> None:
    for count in ("00", "80", "ff"):
        message = read(h(f"ab cd 01 00 | {count} | 00 00 00 01 | 00 00 00 41 | 41 | ff ff"))
        assert message.properties == {}
        assert message.body == b"A"
        assert message.priority == 4
        assert message.delivery_mode is DeliveryMode.PERSISTENT


def test_repeated_name_last_wins_and_literal_names_equal_codes() -> None:
    value = h(
        "ab cd 01 00 | 02"
        "| 0f 42 52 49 44 47 45 5f 70 72 69 6f 72 69 74 79 01"  # "BRIDGE_priority" spelled out, 1
        "| 85 07"  # then its code, 7
        "| 00 00 00 00 | 00 00 00 00"
    )
    assert read(value).priority == 7


def test_kafka_headers_carry_what_the_envelope_has_no_slot_for() -> None:
    message = JmsMessage(QUEUE, body="hi", message_id="ID:1", reply_to=QUEUE, redelivered=True)
    record = envelope.encode(message, origin="orders")
    assert record.headers == [
        ("jms.JMSDestination", b"queue://orders"),
        ("jms.JMSMessageID", b"ID:1"),
        ("jms.JMSReplyTo", b"queue://orders"),
        ("jmsbridge.messageType", b"TextMessage"),
        ("jmsbridge.origin", b"orders"),
    ]
    assert envelope.decode(record, None) == message


def test_no_body_comes_back_empty() -> None:
    for body_type, empty in ((BodyType.TEXT, ""), (BodyType.BYTES, b"")):
        message = JmsMessage(QUEUE, body_type=body_type, body=None)
        assert envelope.decode(envelope.encode(message), None).body == empty


def test_large_body() -> None:
    body = bytes(range(256)) * 4096  # 1 MiB
    message = JmsMessage(QUEUE, body_type=BodyType.BYTES, body=body)
    assert envelope.decode(envelope.encode(message), None) == message


# ---------------------------------------------------------------------------------------------------
# Round trips


def normalised(message: JmsMessage) -> JmsMessage:
    """What the envelope gives back: an empty body for no body."""
    if message.body is None:
        return dataclasses.replace(message, body="" if message.body_type is BodyType.TEXT else b"")
    return message


@settings(max_examples=examples(150), deadline=None)
@given(messages(body_types=(BodyType.TEXT, BodyType.BYTES), min_string=1, max_properties=12))
def test_round_trip(message: JmsMessage) -> None:
    decoded = envelope.decode(envelope.encode(message, "b"), None)
    assert canonical(decoded) == canonical(normalised(message))


_typed = st.one_of(*(property_values(t, min_string=1) for t in PropertyType))


@settings(max_examples=examples(10), deadline=None)
@given(st.lists(_typed, min_size=126, max_size=126))
def test_header_limit(values: list[Property]) -> None:
    """mode + priority + properties: 125 properties fit, 126 do not."""
    props = {f"prop_é{index}": value for index, value in enumerate(values)}
    fitting = JmsMessage(QUEUE, body="x", properties=dict(list(props.items())[:125]))
    assert canonical(envelope.decode(envelope.encode(fitting), None)) == canonical(fitting)
    with pytest.raises(FormatError, match="128 headers, at most 127 fit"):
        envelope.encode(JmsMessage(QUEUE, body="x", properties=props))


# ---------------------------------------------------------------------------------------------------
# What the envelope cannot carry


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (JmsMessage(QUEUE, body_type=BodyType.MAP), "MapMessage: the envelope carries text and bytes only"),
        (JmsMessage(QUEUE, properties={"x": Property.string("")}), "header 'x': empty strings"),
        (JmsMessage(QUEUE, type=""), "header 'BRIDGE_type': empty strings"),
        (JmsMessage(QUEUE, correlation_id=""), "header 'BRIDGE_correlation_id': empty strings"),
        (JmsMessage(QUEUE, properties={"x": Property.string("a" * 65536)}), "65536 UTF-8 bytes"),
        (JmsMessage(QUEUE, properties={"é" * 64: Property.string("a")}), "128 UTF-8 bytes, at most 127"),
        (JmsMessage(QUEUE, properties={"x": Property.string("\ud800")}), "lone surrogate"),
        (JmsMessage(QUEUE, body="\udc00"), "body: character 0 is a lone surrogate"),
        (JmsMessage(QUEUE, timestamp=2**63), "JMSTimestamp 9223372036854775808: out of range"),
        (JmsMessage(QUEUE, priority=2**31), "JMSPriority 2147483648: out of range"),
        (JmsMessage(QUEUE, properties={"BRIDGE_timestamp": Property.string("x")}), "as JMSTimestamp"),
        (
            JmsMessage(QUEUE, properties={"BRIDGE_deliveryTime": Property(PropertyType.INT, 1)}),
            "header 'BRIDGE_deliveryTime' must be of type long, not int",
        ),
    ],
)
def test_refusals(message: JmsMessage, error: str) -> None:
    with pytest.raises(FormatError, match=error.replace("(", r"\(")):
        envelope.encode(message)


# ---------------------------------------------------------------------------------------------------
# Malformed input


def _valid() -> bytes:
    properties = {"n": Property.string("v")}
    message = JmsMessage(QUEUE, body="hello", correlation_id="c", timestamp=5, properties=properties)
    value = envelope.encode(message).value
    assert value is not None
    return value


VALID = _valid()


def test_every_truncation_is_an_error_naming_the_byte() -> None:
    for end in range(4, len(VALID)):
        with pytest.raises(FormatError, match=r"envelope byte \d+: .* needs \d+ bytes, only \d+ left"):
            read(VALID[:end])


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("ab cd 01 00 | 01 | 01 78 92 00", r"byte 8: header 'x' string length 0 is not >= 1"),
        ("ab cd 01 00 | 01 | 01 78 92 ff", r"byte 8: header 'x' string length -1 is not >= 1"),
        ("ab cd 01 00 | 01 | 01 78 91 00 00", r"byte 8: header 'x' string length 0 is not >= 1"),
        ("ab cd 01 00 | 01 | 01 78 8b", r"byte 7: header 'x' has unknown type code -117"),
        ("ab cd 01 00 | 01 | 01 78 80", r"byte 7: header 'x' has unknown type code -128"),
        ("ab cd 01 00 | 01 | 8f 01", r"byte 5: header name code -113 is not a well-known name"),
        ("ab cd 01 00 | 00 | ff ff ff ff | 00 00 00 00", r"byte 5: body length -1 is negative"),
        (
            "ab cd 01 00 | 00 | 7f ff ff ff | 00 00 00 00 | 41",
            r"byte 13: body needs 2147483647 bytes, only 1",
        ),
        ("ab cd 01 00 | 00 | 00 00 00 01 | 00 00 00 42 | 41", r"byte 9: body hash 66 does not match .* 65"),
        (
            "ab cd 01 00 | 01 | 81 8a 00 00 00 01",
            r"byte 5: header 'BRIDGE_timestamp' must be of type long, not int",
        ),
        (
            "ab cd 01 00 | 01 | 85 92 01 39",
            r"byte 5: header 'BRIDGE_priority' must be of type int, not string",
        ),
        ("ab cd 01 00 | 01 | 82 03 | 00 00 00 00 | 00 00 00 00", r"BRIDGE_mode: 3 is neither 1"),
    ],
)
def test_malformed(value: str, error: str) -> None:
    with pytest.raises(FormatError, match=error):
        read(h(value))


def test_bad_kafka_headers() -> None:
    with pytest.raises(FormatError, match=r"jmsbridge.messageType: 'MapMessage' is not TextMessage"):
        read(b"x", [("jmsbridge.messageType", b"MapMessage")])
    with pytest.raises(FormatError, match=r"jms.JMSReplyTo: destination 'nowhere' is not"):
        read(b"x", [("jms.JMSReplyTo", b"nowhere")])
    with pytest.raises(FormatError, match=r"jms.JMSMessageID: not UTF-8 at byte 0"):
        read(b"x", [("jms.JMSMessageID", b"\xff")])
    with pytest.raises(FormatError, match="JMSDestination: missing, and the route names no destination"):
        envelope.decode(KafkaRecord(value=b"x"), None)


def test_text_body_not_utf8_names_its_byte_in_the_value() -> None:
    value = h("ab cd 01 00 | 00 | 00 00 00 02 | 00 00 08 de | 41 ff")
    with pytest.raises(FormatError, match="value byte 14: TextMessage body is not UTF-8"):
        read(value, TEXT_HEADERS)


def test_a_huge_declared_length_allocates_nothing() -> None:
    value = h("ab cd 01 00 | 00 | 7f ff ff ff | 00 00 00 00")
    tracemalloc.start()
    try:
        with pytest.raises(FormatError):
            read(value)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
