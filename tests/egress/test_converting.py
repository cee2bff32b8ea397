"""Egress conversion: keys, formats, soft failures and their policies, dead-letter records."""

from __future__ import annotations

from typing import Any

import pytest

from bridge_job.config import Format
from bridge_job.egress.converting import Action, Egress
from bridge_job.formats import KafkaRecord, native
from bridge_job.formats.codecs import registered
from bridge_job.formats.journal import JournalEntry, journal_record
from bridge_job.message import (
    BodyType,
    Destination,
    DestinationKind,
    Entry,
    EntryType,
    JmsMessage,
    Property,
    PropertyType,
)
from testbed.builders import config, route
from tests.support.registered import IDS, KAFKA, Registered


def order(**fields: object) -> JmsMessage:
    base: dict[str, object] = {
        "destination": Destination(DestinationKind.QUEUE, "orders.in"),
        "body": "hello",
        "message_id": "ID:1",
        "correlation_id": "corr-7",
        "properties": {"customerId": Property(PropertyType.LONG, 1234), "vip": Property.of(True)},
    }
    base.update(fields)
    return JmsMessage(**base)  # type: ignore[arg-type]


def handle(egress: Egress, message: JmsMessage):  # type: ignore[no-untyped-def]
    return egress.handle(JournalEntry.of(message, partition=0, offset=42))


def test_publish_with_default_key_and_typed_headers() -> None:
    egress = Egress(config(route("orders", "orders")))
    outcome = handle(egress, order())
    assert outcome.action is Action.PUBLISH
    assert outcome.topic == "orders"
    assert outcome.record is not None
    assert outcome.record.key == b"ID:1"
    assert outcome.record.header("jmsbridge.origin") == b"orders"
    back = native.decode(outcome.record)
    assert back.properties["customerId"] == Property(PropertyType.LONG, 1234)
    assert back.correlation_id == "corr-7"
    assert back.body == "hello"


@pytest.mark.parametrize(
    ("key", "expected"),
    [({"header": "JMSCorrelationID"}, b"corr-7"), ({"property": "customerId"}, b"1234")],
)
def test_key_from_header_or_property(key: dict[str, str], expected: bytes) -> None:
    outcome = handle(Egress(config(route("orders", "orders", key=key))), order())
    assert outcome.record is not None and outcome.record.key == expected


def test_bytes_body_passes_as_is() -> None:
    body = bytes(range(256))
    outcome = handle(Egress(config(route("orders", "orders"))), order(body_type=BodyType.BYTES, body=body))
    assert outcome.record is not None and outcome.record.value == body


def test_a_map_message_goes_as_a_json_object_of_its_entries() -> None:
    entries = {"sku": Entry(EntryType.STRING, "A-1"), "qty": Entry(EntryType.INT, 3)}
    message = order(body_type=BodyType.MAP, body=None, entries=entries)
    outcome = handle(Egress(config(route("orders", "orders"))), message)
    assert outcome.record is not None and outcome.record.value == b'{"sku":"A-1","qty":3}'
    assert outcome.record.header("jmsbridge.entryTypes") == b'{"qty":"int"}'


@pytest.mark.parametrize(
    ("message", "key", "reason"),
    [
        (order(), {"property": "missing"}, "NoKey"),
        (order(), {"property": "vip"}, "InvalidKey"),
        (order(body_type=BodyType.OBJECT, body=None), None, "ObjectMessageRefused"),
        (order(body_type=BodyType.MESSAGE, body=None), None, "UnsupportedMessageType"),
    ],
)
def test_soft_failures_follow_the_policy(
    message: JmsMessage, key: dict[str, str] | None, reason: str
) -> None:
    spec: dict[str, Any] = {"key": key} if key else {}
    for policy, action in [("fail", Action.FAIL), ("skip", Action.SKIP)]:
        outcome = handle(Egress(config(route("r", "orders", onSoftFailure=policy, **spec))), message)
        assert outcome.action is action
        assert outcome.failure is not None and outcome.failure.reason.value == reason


def test_no_route_uses_the_bridge_policy_and_dead_letters_with_reason_and_source() -> None:
    egress = Egress(
        config(
            route("other", "other", match={"address": "other"}),
            routing={"deadLetterTopic": "dlq", "onSoftFailure": "deadLetter"},
        )
    )
    message = order()
    original = journal_record(message)
    outcome = handle(egress, message)
    assert outcome.action is Action.DEAD_LETTER
    assert outcome.topic == "dlq"
    record = outcome.record
    assert isinstance(record, KafkaRecord)
    assert record.value == original.value and record.key == b"ID:1"
    assert record.header("jmsbridge.deadletter.reason") == b"NoRoute"
    assert record.header("jmsbridge.deadletter.error") == b"no route matches"
    assert record.header("jmsbridge.deadletter.source") == b"queue://orders.in"
    assert record.header("jmsbridge.deadletter.journal") == b"orders.jms-bridge.journal/0"
    assert record.header("jmsbridge.deadletter.offset") == b"42"
    # the original headers are kept, so the message can be replayed as it was
    assert native.decode(record).properties == message.properties


def test_route_policy_overrides_bridge_policy() -> None:
    egress = Egress(
        config(
            route("r", "orders", key={"property": "missing"}, onSoftFailure="skip"),
            routing={"onSoftFailure": "fail"},
        )
    )
    assert handle(egress, order()).action is Action.SKIP


@pytest.mark.parametrize("fmt", [Format.AVRO, Format.JSON_SCHEMA], ids=["avro", "jsonSchema"])
def test_a_registered_format_keys_by_its_key_record_unless_the_route_names_a_key(fmt: Format) -> None:
    registry = Registered()
    egress = Egress(config(route("orders", "orders", format=fmt.value), kafka=KAFKA), schemas=registry)
    outcome = handle(egress, order())
    assert outcome.action is Action.PUBLISH and outcome.record is not None
    codec = registered(fmt)
    assert outcome.record.key == codec.encode(order(), None, IDS[fmt]).key  # {messageID: ID:1}
    assert codec.decode(outcome.record, None, registry.schema) == order()
    assert registry.asked == ["orders"]
    keyed = config(route("orders", "orders", format=fmt.value, key={"property": "customerId"}), kafka=KAFKA)
    record = handle(Egress(keyed, schemas=registry), order()).record
    assert record is not None and record.key == b"1234"  # as text; the value in the format
    assert codec.decode(record, None, registry.schema) == order()
