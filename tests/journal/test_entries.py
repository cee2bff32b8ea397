"""A journal entry read lazily gives what decoding the whole message gives: headers, keys, routes, and
the `native` pass-through record equals the record a full decode and re-encode would write."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bridge_job.config import IDENTIFIER_PATTERN
from bridge_job.egress.converting import convert, kafka_key
from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.formats.journal import JournalEntry
from bridge_job.message import HEADER_NAMES, BodyType, JmsMessage
from bridge_job.routing.failures import SoftFailure
from bridge_job.routing.routes import RouteTable
from testbed.builders import config, route
from tests.formats.strategies import messages
from tests.support.examples import examples

carried = messages(body_types=(BodyType.TEXT, BodyType.BYTES))


def entry_of(message: JmsMessage) -> JournalEntry:
    try:
        return JournalEntry.of(message)
    except FormatError:  # not journalled at all (a lone surrogate, a property named like a header)
        assume(False)
        raise


@settings(max_examples=examples(200), deadline=None)
@given(carried)
def test_native_pass_through_equals_a_full_re_encode(message: JmsMessage) -> None:
    entry = entry_of(message)
    record = convert(entry, config(route("r", "t", key={"header": "JMSPriority"})).routes[0], "bridge", b"k")
    expected = native.signed(native.encode(message, "bridge"), "bridge", b"k")
    assert (record.value, record.headers) == (expected.value, expected.headers)
    assert record.key == str(message.priority).encode()


@settings(max_examples=examples(200), deadline=None)
@given(carried, st.data())
def test_keys_and_header_matches_read_like_the_decoded_message(
    message: JmsMessage, data: st.DataObject
) -> None:
    entry = entry_of(message)
    routable = [n for n in message.properties if re.fullmatch(IDENTIFIER_PATTERN, n)]  # what a route can name
    name = data.draw(st.sampled_from([*HEADER_NAMES, *routable]))
    value = message.header(name)
    text = None if value is None else native.render_value(value)
    assert entry.text(name) == text
    assert entry.message_id == message.message_id and entry.redelivered == message.redelivered
    assert entry.destination == message.destination and entry.body_type == message.body_type

    keyed = config(route("r", "t", key={"header": name})).routes[0]
    if text is None or isinstance(value, bool):
        with pytest.raises(SoftFailure):
            kafka_key(entry, keyed)
    else:
        assert kafka_key(entry, keyed) == text.encode()
    if text is not None:
        table = RouteTable.of(config(route("r", "t", match={"headers": {name: text}})).routes)
        assert table.route(entry) is not None


def test_a_malformed_record_says_which_header() -> None:
    entry = JournalEntry(
        KafkaRecord(b"x", [("jms.JMSDestination", b"nowhere"), ("jmsbridge.messageType", b"Odd")])
    )
    with pytest.raises(FormatError, match="JMSDestination"):
        _ = entry.destination
    with pytest.raises(FormatError, match="unknown JMS message type 'Odd'"):
        _ = entry.body_type
    assert JournalEntry(KafkaRecord(b"x")).body_type is BodyType.BYTES  # like a plain Kafka record
