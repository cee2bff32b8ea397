"""Bounded fuzzing of every decoder: random bytes and mutated valid encodings.

Each decoder must return a message or raise FormatError, quickly. max_examples is fixed so the run time
is bounded; the per-example deadline catches a decoder that loops or allocates its way into slowness.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge_job.formats import (
    FormatError,
    KafkaRecord,
    avro,
    basic,
    envelope,
    envelope_wire,
    json_schema,
    jsonmode,
    native,
    records,
)
from bridge_job.formats.registry_wire import SchemaIds, framed
from bridge_job.message import CARRIED_BODIES, BodyType, JmsMessage
from tests.formats.strategies import QUEUE, messages
from tests.support.examples import examples

fuzz = settings(
    max_examples=examples(400), deadline=timedelta(seconds=2), suppress_health_check=[HealthCheck.too_slow]
)


def reads_or_refuses(decode: Callable[[KafkaRecord, Any], JmsMessage], record: KafkaRecord) -> None:
    try:
        decode(record, QUEUE)
    except FormatError as error:
        assert str(error)


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["set", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if kind == "set" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


def _value(
    encode: Callable[[JmsMessage], KafkaRecord], body_types: tuple[BodyType, ...], min_string: int = 0
) -> st.SearchStrategy[bytes]:
    return messages(body_types, min_string=min_string, max_properties=4).map(lambda m: encode(m).value or b"")


_envelopes = _value(envelope.encode, (BodyType.TEXT, BodyType.BYTES), min_string=1)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
# Documents shaped like ours, with members of any JSON type: the field checks get exercised.
_json_documents = st.dictionaries(
    st.sampled_from([*jsonmode.MEMBERS, "other"]),
    _json_values
    | st.dictionaries(st.sampled_from(["JMSPriority", "JMSDestination", "x", "n"]), _json_values),
    max_size=4,
)
_header_names = [
    *(f"jms.{name}" for name in ("JMSDestination", "JMSReplyTo", "JMSPriority", "JMSDeliveryMode", "x")),
    "jmsbridge.types",
    "jmsbridge.messageType",
    "other",
]
_header_values = [b"queue://q", b"x=int", b"x=float", b"TextMessage", b"1", b"nan"]
_kafka_headers = st.lists(
    st.tuples(st.sampled_from(_header_names), st.binary(max_size=12) | st.sampled_from(_header_values)),
    max_size=6,
)


@fuzz
@given(
    st.binary(max_size=200) | st.binary(max_size=200).map(envelope_wire.MARKER.__add__) | mutated(_envelopes)
)
def test_envelope(value: bytes) -> None:
    reads_or_refuses(envelope.decode, KafkaRecord(value=value))
    reads_or_refuses(
        envelope.decode, KafkaRecord(value=value, headers=[("jmsbridge.messageType", b"TextMessage")])
    )


@fuzz
@given(
    st.binary(max_size=200)
    | _json_values.map(lambda v: json.dumps(v).encode())
    | _json_documents.map(lambda v: json.dumps(v).encode())
    | mutated(_value(jsonmode.encode, tuple(BodyType)))
)
def test_json(value: bytes) -> None:
    reads_or_refuses(jsonmode.decode, KafkaRecord(value=value))


@fuzz
@given(_kafka_headers, st.none() | st.binary(max_size=20))
def test_native(headers: list[tuple[str, bytes]], value: bytes | None) -> None:
    reads_or_refuses(native.decode, KafkaRecord(value=value, headers=headers))


@fuzz
@given(st.none() | st.binary(max_size=200))
def test_basic(value: bytes | None) -> None:
    reads_or_refuses(basic.decode, KafkaRecord(value=value))


@fuzz
@given(
    _json_values
    | st.fixed_dictionaries(
        {}, optional={"key": _json_values, "headers": _json_values, "value": _json_values}
    )
)
def test_record_documents(doc: Any) -> None:
    try:
        records.record_of(doc)
    except FormatError as error:
        assert str(error)


_IDS = SchemaIds(key=1, value=2)


@fuzz
@given(
    st.binary(max_size=200).map(lambda b: framed(2, b))
    | mutated(_value(lambda m: avro.encode(m, None, _IDS), CARRIED_BODIES))
)
def test_avro(value: bytes) -> None:
    reads_or_refuses(
        lambda r, d: avro.decode(r, d, lambda schema_id: avro.VALUE_SCHEMA), KafkaRecord(value=value)
    )


@fuzz
@given(
    st.binary(max_size=200).map(lambda b: framed(2, b))
    | _json_values.map(lambda v: framed(2, json.dumps(v).encode()))
    | mutated(_value(lambda m: json_schema.encode(m, None, _IDS), CARRIED_BODIES))
)
def test_json_schema(value: bytes) -> None:
    reads_or_refuses(
        lambda r, d: json_schema.decode(r, d, lambda schema_id: json_schema.VALUE_SCHEMA),
        KafkaRecord(value=value),
    )
