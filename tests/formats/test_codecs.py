"""The one interface the job calls: every format behind `codec(format)`, or `registered(format)` for those
whose records name their schema in the registry."""

from __future__ import annotations

import pytest

from bridge_job.config import Format
from bridge_job.formats import KafkaRecord
from bridge_job.formats.codecs import codec, origin, registered
from bridge_job.formats.registry_wire import SchemaIds
from bridge_job.message import JmsMessage, Property, PropertyType
from tests.formats.strategies import QUEUE

MESSAGE = JmsMessage(QUEUE, body="hi", message_id="ID:1", properties={"n": Property(PropertyType.INT, 1)})
PLAIN = [f for f in Format if not f.registered]
REGISTERED = [f for f in Format if f.registered]
IDS = SchemaIds(1, 2)


@pytest.mark.parametrize("fmt", PLAIN)
def test_every_format_has_a_codec(fmt: Format) -> None:
    assert codec(fmt).format is fmt


@pytest.mark.parametrize("fmt", REGISTERED)
def test_every_registered_format_has_its_codec(fmt: Format) -> None:
    assert registered(fmt).format is fmt
    assert REGISTERED == [Format.AVRO, Format.JSON_SCHEMA]


@pytest.mark.parametrize("fmt", PLAIN)
def test_origin_is_a_kafka_header_of_every_format(fmt: Format) -> None:
    record = codec(fmt).encode(MESSAGE, "bridge-a")
    assert origin(record) == "bridge-a"
    assert b"bridge-a" not in (record.value or b"")
    assert origin(codec(fmt).encode(MESSAGE, None)) is None


@pytest.mark.parametrize("fmt", REGISTERED)
def test_origin_is_a_kafka_header_of_every_registered_format(fmt: Format) -> None:
    record = registered(fmt).encode(MESSAGE, "bridge-a", IDS)
    assert origin(record) == "bridge-a"
    assert b"bridge-a" not in (record.value or b"")
    assert origin(registered(fmt).encode(MESSAGE, None, IDS)) is None


@pytest.mark.parametrize("fmt", [Format.NATIVE, Format.JSON, Format.ENVELOPE])
def test_round_trip_through_the_interface(fmt: Format) -> None:
    c = codec(fmt)
    assert c.decode(c.encode(MESSAGE, "orders"), None) == MESSAGE


@pytest.mark.parametrize("fmt", PLAIN)
def test_route_destination_fills_in(fmt: Format) -> None:
    assert codec(fmt).decode(KafkaRecord(value=b"{}"), QUEUE).destination == QUEUE


def test_origin_of_a_plain_record() -> None:
    assert (
        origin(KafkaRecord(value=b"x", headers=[("jmsbridge.origin", b"a"), ("jmsbridge.origin", b"b")]))
        == "b"
    )
