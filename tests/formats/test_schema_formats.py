"""The `avro` and `jsonSchema` formats (issue 47): Confluent's JMS connector record, in the registry's wire
format. Round trips of every carried message, the bridge's own Avro writer and reader checked byte for byte
against fastavro's, a connector's older schema read by resolution, and input that is refused with where.

confluent-kafka's deserializers reading the records from a real registry: tests/test_registry_formats.py.
"""

from __future__ import annotations

import copy
import io
import json
import math
from typing import Any

import fastavro
import jsonschema
import pytest
from hypothesis import given, settings

from bridge_job.formats import FormatError, KafkaRecord, avro, connect_jms, json_schema
from bridge_job.formats.registry_wire import SchemaIds, framed
from bridge_job.message import (
    CARRIED_BODIES,
    BodyType,
    Destination,
    Entry,
    EntryType,
    JmsMessage,
    Property,
    PropertyType,
)
from tests.formats.strategies import QUEUE, canonical, messages
from tests.support.examples import examples

IDS = SchemaIds(key=7, value=8)
ORDER = JmsMessage(
    Destination.parse("queue://orders"),
    body="hello",
    message_id="ID:1",
    correlation_id="c-1",
    reply_to=Destination.parse("topic://replies"),
    type="order",
    timestamp=1_700_000_000_000,
    properties={
        "region": Property.string("emea"),
        "count": Property(PropertyType.INT, 3),
        "ratio": Property(PropertyType.FLOAT, 0.5),
        "big": Property(PropertyType.DOUBLE, -math.inf),
        "express": Property(PropertyType.BOOLEAN, True),
    },
)


def schemas_of(text: str) -> Any:
    return lambda schema_id: text


@settings(max_examples=examples(150), deadline=None)
@given(messages(body_types=CARRIED_BODIES))
def test_every_carried_message_comes_back_equal_from_avro(message: JmsMessage) -> None:
    record = avro.encode(message, "bridge-a", IDS)
    assert canonical(avro.decode(record, None, schemas_of(avro.VALUE_SCHEMA))) == canonical(message)


@settings(max_examples=examples(150), deadline=None)
@given(messages(body_types=CARRIED_BODIES))
def test_every_carried_message_comes_back_equal_from_json_schema(message: JmsMessage) -> None:
    record = json_schema.encode(message, "bridge-a", IDS)
    assert canonical(json_schema.decode(record, None, schemas_of(json_schema.VALUE_SCHEMA))) == canonical(
        message
    )


@settings(max_examples=examples(100), deadline=None)
@given(messages(body_types=CARRIED_BODIES))
def test_the_bridges_avro_binary_is_fastavros_to_the_byte(message: JmsMessage) -> None:
    """The hand-written writer and fastavro's, given the same record, write the same bytes."""
    parsed = fastavro.parse_schema(json.loads(avro.VALUE_SCHEMA))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, connect_jms.value_document(message))
    assert avro.value_binary(message) == out.getvalue()


@settings(max_examples=examples(100), deadline=None)
@given(messages(body_types=CARRIED_BODIES))
def test_the_json_text_written_from_templates_is_the_document(message: JmsMessage) -> None:
    written = json.loads(json_schema.value_json(message), parse_constant=str)
    assert canonical(connect_jms.message_of(written, None, json=True)) == canonical(message)
    document = connect_jms.value_document(message, json=True)
    assert json.dumps(written, sort_keys=True) == json.dumps(document, sort_keys=True)
    assert list(written) == list(document)  # fields in order


@settings(max_examples=examples(50), deadline=None)
@given(messages(body_types=CARRIED_BODIES))
def test_every_json_schema_record_is_valid_under_its_schema(message: JmsMessage) -> None:
    value = json_schema.encode(message, None, IDS).value
    assert value is not None
    document = json.loads(value[5:], parse_constant=str)  # a non-finite float is a string in the document
    if any(isinstance(p.value, float) and not math.isfinite(p.value) for p in message.properties.values()):
        return  # JSON's `number` has no NaN; the converter writes the string, which the schema refuses
    if message.entries is not None:
        items = message.entries.values() if isinstance(message.entries, dict) else message.entries
        if any(isinstance(e.value, float) and not math.isfinite(e.value) for e in items):
            return
    jsonschema.validate(document, json.loads(json_schema.VALUE_SCHEMA))


def test_the_record_is_framed_with_the_registrys_ids_and_carries_the_origin() -> None:
    for fmt in (avro, json_schema):
        record = fmt.encode(ORDER, "bridge-a", IDS)
        assert record.value is not None and record.key is not None
        assert record.value[:5] == b"\x00\x00\x00\x00\x08" and record.key[:5] == b"\x00\x00\x00\x00\x07"
        assert record.headers == [("jmsbridge.origin", b"bridge-a")]


def test_the_json_schema_record_is_the_connectors_document() -> None:
    record = json_schema.encode(ORDER, None, IDS)
    assert record.key == framed(7, b'{"messageID":"ID:1"}')
    assert record.value is not None
    document = json.loads(record.value[5:])
    assert document["properties"]["count"] == {
        "propertyType": "integer",
        "boolean": None,
        "byte": None,
        "short": None,
        "integer": 3,
        "long": None,
        "float": None,
        "double": None,
        "string": None,
        "bytes": None,
    }
    assert document["properties"]["big"]["double"] == "-Infinity"
    assert {k: v for k, v in document.items() if k != "properties"} == {
        "messageID": "ID:1",
        "messageType": "text",
        "timestamp": 1_700_000_000_000,
        "deliveryMode": 2,
        "correlationID": "c-1",
        "replyTo": {"destinationType": "topic", "name": "replies"},
        "destination": {"destinationType": "queue", "name": "orders"},
        "redelivered": False,
        "type": "order",
        "expiration": 0,
        "priority": 4,
        "bytes": None,
        "map": None,
        "text": "hello",
        "stream": None,
    }


def test_the_avro_schemas_are_the_connectors_names_and_types() -> None:
    value = json.loads(avro.VALUE_SCHEMA)
    assert (value["namespace"], value["name"], value["connect.name"]) == (
        "io.confluent.connect.jms",
        "Value",
        "io.confluent.connect.jms.Value",
    )
    fields = {f["name"]: f["type"] for f in value["fields"]}
    assert list(fields)[:15] == [
        "messageID", "messageType", "timestamp", "deliveryMode", "correlationID", "replyTo", "destination",
        "redelivered", "type", "expiration", "priority", "properties", "bytes", "map", "text",
    ]  # fmt: skip
    assert fields["stream"] == ["null", {"type": "array", "items": "io.confluent.connect.jms.PropertyValue"}]
    assert fields["timestamp"] == "long" and fields["deliveryMode"] == "int"
    property_value = fields["properties"]["values"]
    assert property_value["connect.name"] == "io.confluent.connect.jms.PropertyValue"
    assert {f["name"]: f["type"] for f in property_value["fields"]}["byte"] == [
        "null",
        {"type": "int", "connect.type": "int8"},
    ]
    assert json.loads(avro.KEY_SCHEMA)["name"] == "Key"


def connector_schema() -> dict[str, Any]:
    """The connectors' own (older) Value schema: messageID required, no `stream`, PropertyValue without
    `bytes`."""
    schema: dict[str, Any] = copy.deepcopy(json.loads(avro.VALUE_SCHEMA))
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "stream"]
    schema["fields"][0] = {"name": "messageID", "type": "string"}
    property_value = next(f for f in schema["fields"] if f["name"] == "properties")["type"]["values"]
    property_value["fields"] = [f for f in property_value["fields"] if f["name"] != "bytes"]
    return schema


def test_a_record_of_the_connectors_own_schema_is_read_by_resolution() -> None:
    schema = connector_schema()
    document = connect_jms.value_document(ORDER)
    del document["stream"]
    for property_value in document["properties"].values():
        del property_value["bytes"]
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(copy.deepcopy(schema)), document)
    record = KafkaRecord(value=framed(3, out.getvalue()))
    assert canonical(avro.decode(record, None, schemas_of(json.dumps(schema)))) == canonical(ORDER)


def test_a_writer_schema_that_is_no_jms_message_is_refused_with_its_id() -> None:
    order = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(order), {"id": "o-1"})
    with pytest.raises(FormatError, match=r"registry id 5\) is not a JMS message record"):
        avro.decode(KafkaRecord(value=framed(5, out.getvalue())), QUEUE, schemas_of(json.dumps(order)))
    titled = json.dumps({"type": "object", "title": "test.Order"})
    with pytest.raises(FormatError, match=r"registry id 5\) is test.Order, not the JMS message record"):
        json_schema.decode(KafkaRecord(value=framed(5, b"{}")), QUEUE, schemas_of(titled))


@pytest.mark.parametrize("fmt", [avro, json_schema], ids=["avro", "jsonSchema"])
def test_a_value_not_in_the_wire_format_is_refused(fmt: Any) -> None:
    with pytest.raises(FormatError, match="not in the schema registry's wire format"):
        fmt.decode(KafkaRecord(value=b'{"messageType": "text"}'), QUEUE, schemas_of(fmt.VALUE_SCHEMA))
    with pytest.raises(FormatError, match="missing"):
        fmt.decode(KafkaRecord(value=None), QUEUE, schemas_of(fmt.VALUE_SCHEMA))


def test_a_truncated_avro_record_is_refused() -> None:
    value = avro.encode(ORDER, None, IDS).value
    assert value is not None
    with pytest.raises(FormatError, match="ends early"):
        avro.decode(KafkaRecord(value=value[:-3]), QUEUE, schemas_of(avro.VALUE_SCHEMA))
    with pytest.raises(FormatError, match="bytes after the record"):
        avro.decode(KafkaRecord(value=value + b"\x00"), QUEUE, schemas_of(avro.VALUE_SCHEMA))


def json_record(**changes: Any) -> KafkaRecord:
    value = json_schema.encode(ORDER, None, IDS).value
    assert value is not None
    document = json.loads(value[5:], parse_constant=str)
    document.update(changes)
    return KafkaRecord(value=framed(8, json.dumps(document).encode()))


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        (
            {"messageType": "object-ish"},
            "messageType: 'object-ish' is not one of text, bytes, map, stream, object",
        ),
        ({"deliveryMode": 3}, "deliveryMode: 3 is neither 1"),
        ({"priority": 11}, "priority: 11 is not between 0 and 9"),
        (
            {"destination": {"destinationType": "exchange", "name": "x"}},
            "destination.destinationType: 'exchange'",
        ),
        (
            {"properties": {"n": {"propertyType": "integer", "integer": None}}},
            r"properties\['n'\].integer: null",
        ),
        (
            {"properties": {"n": {"propertyType": "char", "string": "x"}}},
            "a JMS property cannot be of type char",
        ),
        (
            {"properties": {"n": {"propertyType": "byte", "byte": 300}}},
            r"properties\['n'\]: 300 is not a valid",
        ),
        ({"properties": {"n": {"propertyType": "decimal"}}}, r"propertyType: 'decimal' is not one of"),
        ({"messageType": "bytes", "bytes": "%%"}, "bytes: not base64"),
        ({"timestamp": "yesterday"}, "timestamp: expected int, got str"),
        ({"expiration": 2**63}, "expiration: 9223372036854775808 is out of range for a long"),
    ],
)
def test_a_json_schema_record_that_does_not_describe_a_message_is_refused_with_where(
    changes: dict[str, Any], where: str
) -> None:
    with pytest.raises(FormatError, match=where):
        json_schema.decode(json_record(**changes), QUEUE, schemas_of(json_schema.VALUE_SCHEMA))


def test_the_routes_destination_stands_in_when_the_record_names_none() -> None:
    record = json_record(destination=None)
    assert json_schema.decode(record, QUEUE, schemas_of(json_schema.VALUE_SCHEMA)).destination == QUEUE
    with pytest.raises(FormatError, match="destination: missing, and the route names no destination"):
        json_schema.decode(record, None, schemas_of(json_schema.VALUE_SCHEMA))


def test_an_avro_property_value_holding_two_values_is_refused() -> None:
    document = connect_jms.value_document(ORDER)
    document["properties"]["count"]["string"] = "three"  # integer and string both set
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(avro.VALUE_SCHEMA)), document)
    with pytest.raises(FormatError, match=r"properties\['count'\]: holds a value beside its propertyType's"):
        avro.decode(KafkaRecord(value=framed(8, out.getvalue())), QUEUE, schemas_of(avro.VALUE_SCHEMA))


@pytest.mark.parametrize("fmt", [avro, json_schema], ids=["avro", "jsonSchema"])
def test_a_message_without_a_carried_body_is_refused(fmt: Any) -> None:
    with pytest.raises(FormatError, match="a ObjectMessage has no body this record carries"):
        fmt.encode(JmsMessage(QUEUE, BodyType.OBJECT), None, IDS)


def test_map_entries_keep_char_bytes_and_null() -> None:
    message = JmsMessage(
        QUEUE,
        BodyType.MAP,
        entries={
            "c": Entry(EntryType.CHAR, "x"),
            "b": Entry(EntryType.BYTES, b"\x00\xff"),
            "n": Entry(EntryType.NULL, None),
        },
    )
    value = json_schema.encode(message, None, IDS).value
    assert value is not None
    document = json.loads(value[5:])
    assert document["map"]["c"]["propertyType"] == "char" and document["map"]["c"]["string"] == "x"
    assert document["map"]["b"]["bytes"] == "AP8="
    null_value = document["map"]["n"]
    assert null_value.pop("propertyType") == "null-value" and set(null_value.values()) == {None}
    for fmt in (avro, json_schema):
        assert fmt.decode(fmt.encode(message, None, IDS), None, schemas_of(fmt.VALUE_SCHEMA)) == message
