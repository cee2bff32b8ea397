"""The basic format: the text alone, both ways."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_job.formats import FormatError, KafkaRecord, basic
from bridge_job.message import BodyType, JmsMessage, Property
from tests.formats.strategies import QUEUE, messages
from tests.support.examples import examples


def test_golden() -> None:
    message = JmsMessage(QUEUE, body="héllo", message_id="ID:1", properties={"p": Property.string("v")})
    record = basic.encode(message, origin="orders")
    assert record == KafkaRecord(value=b"h\xc3\xa9llo", headers=[("jmsbridge.origin", b"orders")])
    assert basic.decode(
        KafkaRecord(value=b"h\xc3\xa9llo", headers=[("jms.JMSType", b"x")]), QUEUE
    ) == JmsMessage(QUEUE, body="héllo")


def test_no_text() -> None:
    assert basic.encode(JmsMessage(QUEUE)).value is None
    assert basic.decode(KafkaRecord(value=None), QUEUE) == JmsMessage(QUEUE)


@settings(max_examples=examples(100), deadline=None)
@given(messages(body_types=(BodyType.TEXT,)))
def test_round_trip_keeps_the_text_only(message: JmsMessage) -> None:
    decoded = basic.decode(basic.encode(message), message.destination)
    assert decoded == JmsMessage(message.destination, body=message.body)


@settings(max_examples=examples(20), deadline=None)
@given(st.text(min_size=1, max_size=10).map(lambda t: t * 50_000) | st.just(""))
def test_large_and_empty_text(text: str) -> None:
    assert basic.decode(basic.encode(JmsMessage(QUEUE, body=text)), QUEUE).body == text


@pytest.mark.parametrize("body_type", [t for t in BodyType if t is not BodyType.TEXT])
def test_refuses_what_has_no_text(body_type: BodyType) -> None:
    with pytest.raises(
        FormatError, match=f"message type {body_type.value}: the basic format relays TextMessage only"
    ):
        basic.encode(JmsMessage(QUEUE, body_type=body_type))


def test_malformed() -> None:
    with pytest.raises(FormatError, match="value byte 2: not UTF-8"):
        basic.decode(KafkaRecord(value=b"ab\xc3"), QUEUE)
    with pytest.raises(FormatError, match="the basic format carries none, and the route names none"):
        basic.decode(KafkaRecord(value=b"ab"), None)
    with pytest.raises(FormatError, match="lone surrogate"):
        basic.encode(JmsMessage(QUEUE, body="\udfff"))
