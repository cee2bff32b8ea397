"""Map and Stream message bodies in the `native` and `json` formats: plain JSON for any consumer, the
types kept beside it, and back to equal entries."""

from __future__ import annotations

import base64
import json
import math
import re

import pytest

from bridge_job.formats import FormatError, KafkaRecord, jsonmode, native
from bridge_job.message import BodyType, Destination, DestinationKind, Entry, EntryType, JmsMessage
from tests.support.entries import EVERY_ENTRY, EVERY_ITEM, same_entries

QUEUE = Destination(DestinationKind.QUEUE, "orders")


def message(body_type: BodyType) -> JmsMessage:
    entries = EVERY_ENTRY if body_type is BodyType.MAP else EVERY_ITEM
    return JmsMessage(QUEUE, body_type=body_type, entries=entries)


@pytest.mark.parametrize("body_type", [BodyType.MAP, BodyType.STREAM])
@pytest.mark.parametrize("codec", [native, jsonmode])
def test_every_entry_type_comes_back_equal(codec: object, body_type: BodyType) -> None:
    sent = message(body_type)
    back = codec.decode(codec.encode(sent))  # type: ignore[attr-defined]
    assert back.body_type is body_type and back.body is None
    assert same_entries(back.entries, sent.entries)


def test_a_native_map_is_a_json_object_any_consumer_reads_with_the_types_beside_it() -> None:
    record = native.encode(message(BodyType.MAP))
    value = json.loads(record.value or b"")
    assert value["string"] == "héllo ✓ 中文" and value["long"] == 2**63 - 1 and value["true"] is True
    assert value["bytes"] == base64.b64encode(bytes(range(256))).decode()
    assert value["char"] == "Ω" and value["null"] is None and value["float nan"] == "NaN"
    assert record.header("jmsbridge.messageType") == b"MapMessage"
    types = json.loads(record.header("jmsbridge.entryTypes") or b"")
    # only what JSON cannot tell: not strings, booleans, null, longs or finite doubles
    assert types == {
        "byte": "byte",
        "short": "short",
        "char": "char",
        "int": "int",
        "float": "float",
        "float nan": "float",
        "double -inf": "double",
        "bytes": "bytes",
        "no bytes": "bytes",
        "a=b, c": "int",
    }


def test_a_json_stream_is_an_array_with_its_types_by_index() -> None:
    stream = JmsMessage(
        QUEUE, body_type=BodyType.STREAM, entries=(Entry(EntryType.INT, 1), Entry(EntryType.STRING, "x"))
    )
    document = jsonmode.document(stream)
    assert document["stream"] == [1, "x"] and document["entryTypes"] == {"0": "int"}
    assert "map" not in document and "text" not in document


def test_another_producer_s_plain_json_has_the_natural_types() -> None:
    record = KafkaRecord(
        value=b'{"n": 3, "x": 0.5, "s": "t", "b": false, "z": null}',
        headers=[("jmsbridge.messageType", b"MapMessage")],
    )
    assert native.decode(record, QUEUE).entries == {
        "n": Entry(EntryType.LONG, 3),
        "x": Entry(EntryType.DOUBLE, 0.5),
        "s": Entry(EntryType.STRING, "t"),
        "b": Entry(EntryType.BOOLEAN, False),
        "z": Entry(EntryType.NULL, None),
    }


@pytest.mark.parametrize(
    ("value", "types", "error"),
    [
        (b'{"a": [1]}', None, "value entry 'a': an array inside a map or stream"),
        (b'{"a": 300}', b'{"a": "byte"}', "value entry 'a': 300 is not a valid JMS byte value"),
        (b'{"a": "AA="}', b'{"a": "bytes"}', "value entry 'a': 'AA=' is not base64"),
        (b'{"a": "ab"}', b'{"a": "char"}', "value entry 'a': 'ab' is not a valid JMS char value"),
        (b'{"a": 1e300}', b'{"a": "float"}', "value entry 'a': 1e+300 is out of range for a float"),
        (b'{"a": 1}', b'{"b": "int"}', "value types: 'b' names no entry"),
        (b'{"a": 1}', b'{"a": "decimal"}', "value entry 'a': unknown type 'decimal'"),
        (b"[1]", None, "value: a MapMessage's entries are a JSON object, not an array"),
        (b'{"a": NaN}', None, "value: invalid JSON: NaN is not JSON; write it as the string 'NaN'"),
    ],
)
def test_bad_entries_say_which_and_why(value: bytes, types: bytes | None, error: str) -> None:
    headers = [("jmsbridge.messageType", b"MapMessage")]
    if types is not None:
        headers.append(("jmsbridge.entryTypes", types))
    with pytest.raises(FormatError, match=re.escape(error)):
        native.decode(KafkaRecord(value=value, headers=headers), QUEUE)


def test_a_float_entry_of_another_producer_is_the_nearest_jms_float() -> None:
    record = KafkaRecord(
        value=b"[0.1]",
        headers=[("jmsbridge.messageType", b"StreamMessage"), ("jmsbridge.entryTypes", b'{"0": "float"}')],
    )
    items = native.decode(record, QUEUE).entries
    assert isinstance(items, tuple)
    (item,) = items
    assert item.type is EntryType.FLOAT and isinstance(item.value, float)
    assert item.value != 0.1 and math.isclose(item.value, 0.1, rel_tol=1e-7)
