"""NATS <-> JMS conversion, the way back of a JMS request and the in-flight table: pure functions over
plain data."""

from __future__ import annotations

import dataclasses

import pytest

from bridge_job.config import Format, JmsBridgeRouteSpec, Route
from bridge_job.formats.journal import JournalEntry
from bridge_job.message import BodyType, Destination, DestinationKind, JmsMessage, Property
from bridge_job.nats.message import NatsMessage
from bridge_job.nats_egress.converting import to_nats
from bridge_job.nats_service.converting import (
    answer,
    first_route,
    nats_answer_to_jms,
    nats_loop_mark,
    queue_group,
    to_jms,
)
from bridge_job.nats_service.inflight import InFlight, Request
from bridge_job.routing.failures import SoftFailure, SoftFailureReason
from bridge_job.routing.nats_replies import (
    CLOCK_SKEW_SECONDS,
    LONGEST_WAIT_SECONDS,
    WayBack,
    reply_subject,
    way_back,
)
from bridge_job.signing import LoopMark

REPLIES = Destination(DestinationKind.QUEUE, "ID:replies-1")
KEY = b"the bridge's key"
NOW = 1_800_000_000.0  # unix seconds: when the egress publishes, when the service takes an answer


def journal_entry(message: JmsMessage) -> JournalEntry:
    return JournalEntry.of(message, partition=0, offset=7)


def nats_route(name: str, subject: str, order: int = 0, **spec: object) -> Route:
    body = {"bridgeRef": {"name": "b"}, "direction": "natsToJms", "natsSubject": subject, "order": order}
    body["jmsDestination"] = spec.pop("jmsDestination", {"queue": "svc"})
    return Route(name=name, spec=JmsBridgeRouteSpec.model_validate(body | spec))


def test_the_first_route_in_order_takes_a_subject_that_several_match() -> None:
    routes = [nats_route("orders", "svc.orders.*", 1), nats_route("all", "svc.>", 2)]
    assert first_route(routes, "svc.orders.new") is routes[0]
    assert first_route(routes, "svc.users.new") is routes[1]
    assert first_route(routes, "other") is None
    assert queue_group(routes[0], "b") == "jmsbridge.b"
    assert queue_group(nats_route("g", "x", natsQueueGroup="workers"), "b") == "workers"


def test_a_request_goes_with_the_reply_queue_a_correlation_and_its_deadline() -> None:
    route = nats_route("r", "svc.>", timeoutSeconds=5)
    message = NatsMessage("svc.a", b"hello", "_INBOX.x", {"jms.count": "3", "jmsbridge.types": "count=int"})
    sent = to_jms(message, route, "b", KEY, now_ms=1_000, reply_to=REPLIES, correlation_id="nats-1")
    assert (sent.body_type, sent.body) == (BodyType.TEXT, "hello")
    assert (sent.reply_to, sent.correlation_id, sent.expiration) == (REPLIES, "nats-1", 6_000)
    assert sent.destination == Destination(DestinationKind.QUEUE, "svc")
    assert sent.properties["count"].value == 3 and sent.properties["count"].type.value == "int"
    assert sent.properties["NatsSubject"] == Property.string("svc.a")
    assert sent.properties["JmsBridgeOrigin"] == Property.string("b")


def test_a_one_way_message_has_no_reply_queue_and_keeps_its_own_expiration() -> None:
    route = nats_route("r", "svc.>", send={"timeToLiveMs": 500, "priority": 7})
    sent = to_jms(NatsMessage("svc.a", b"\xff\x00"), route, "b", KEY, now_ms=1_000, reply_to=REPLIES)
    assert (sent.body_type, sent.body) == (BodyType.BYTES, b"\xff\x00")  # not UTF-8: bytes as they are
    assert (sent.reply_to, sent.correlation_id) == (None, None)
    assert (sent.expiration, sent.priority) == (1_500, 7)


def test_a_destination_from_a_header_and_what_cannot_go() -> None:
    to_header = {"fromHeader": "to", "allowed": "topic://prices|queue://svc"}
    route = nats_route("r", "svc.>", jmsDestination=to_header)
    sent = to_jms(NatsMessage("svc.a", b"x", headers={"to": "topic://prices"}), route, "b", KEY, 0)
    assert sent.destination == Destination(DestinationKind.TOPIC, "prices")
    with pytest.raises(SoftFailure) as missing:
        to_jms(NatsMessage("svc.a", b"x"), route, "b", KEY, 0)
    assert missing.value.reason is SoftFailureReason.NO_DESTINATION
    with pytest.raises(SoftFailure) as bad_name:
        to_jms(
            NatsMessage("svc.a", b"x", headers={"jms.not-a-name": "1"}), nats_route("q", "svc.>"), "b", KEY, 0
        )
    assert bad_name.value.reason is SoftFailureReason.CONVERSION_FAILED


def test_an_answer_becomes_nats_headers_or_a_soft_failure_when_a_header_cannot() -> None:
    message = JmsMessage(
        Destination(DestinationKind.QUEUE, "ID:replies-1"),
        body="re: hello",
        correlation_id="nats-1",
        properties={"count": Property.of(3)},
    )
    data, headers = answer(message, Format.NATIVE, "b", KEY)
    assert data == b"re: hello"
    assert headers["jms.count"] == "3" and "count=long" in headers["jmsbridge.types"]
    multi_line = JmsMessage(message.destination, body="x", properties={"note": Property.string("a\nb")})
    with pytest.raises(SoftFailure, match="format envelope carries it"):
        answer(multi_line, Format.NATIVE, "b", KEY)
    data, headers = answer(multi_line, Format.ENVELOPE, "b", KEY)  # the envelope carries it in the payload
    assert b"a\nb" in data


def test_a_request_is_found_by_either_id_once_and_expires_whole() -> None:
    table = InFlight()
    first, second = Request("_INBOX.1", "r", 10.0, 0.0), Request("_INBOX.2", "r", 20.0, 0.0)
    table.add("nats-1", first)
    table.also("ID:m-1", first)
    table.add("nats-2", second)
    table.also("ID:m-2", second)
    assert table.take("ID:m-1") is first
    assert table.take("nats-1") is None  # answered: both of its keys are gone
    assert len(table) == 1
    assert table.expired(15.0) == []
    assert table.expired(20.0) == [second]
    assert table.take("ID:m-2") is None and len(table) == 0


def test_the_way_back_of_a_jms_request_travels_in_its_reply_subject() -> None:
    back = WayBack(Destination(DestinationKind.QUEUE, "ID:host-1:2:1:1"), "c-1", "ask")
    subject = reply_subject("b", back, KEY, int(NOW) + 30)
    assert subject.startswith("_JMSBRIDGE.b.reply.") and subject.count(".") == 4  # <mac>.<token>
    assert way_back(subject, "b", KEY, NOW) == back
    with pytest.raises(ValueError, match="unsigned"):
        way_back("_JMSBRIDGE.b.reply.not-base64!", "b", KEY, NOW)


def test_a_nats_answer_goes_to_the_requester_with_the_correlation_it_expects() -> None:
    back = WayBack(Destination(DestinationKind.QUEUE, "ID:host-1:2:1:1"), "c-1", "ask")
    message = NatsMessage("_JMSBRIDGE.b.reply.x", b"re: hi", headers={"jms.n": "1"})
    sent = nats_answer_to_jms(message, back, Format.NATIVE, "b")
    assert (sent.destination, sent.correlation_id, sent.body) == (back.destination, "c-1", "re: hi")
    assert sent.properties["n"].value == "1" and sent.reply_to is None


def test_a_jms_message_on_a_jms_to_nats_route_becomes_a_nats_message_or_request() -> None:
    route = Route(
        name="ask",
        spec=JmsBridgeRouteSpec.model_validate(
            {"bridgeRef": {"name": "b"}, "direction": "jmsToNats", "natsSubject": "svc.ask"}
        ),
    )
    requester = Destination(DestinationKind.QUEUE, "ID:req-1")
    message = JmsMessage(
        Destination(DestinationKind.QUEUE, "ask"),
        body="hi",
        message_id="ID:m-1",
        reply_to=requester,
        properties={"n": Property.of(1)},
    )
    entry = journal_entry(message)
    published = to_nats(entry, route, "b", KEY, NOW)
    assert (published.subject, published.data) == ("svc.ask", b"hi")
    assert published.headers["jms.n"] == "1" and published.headers["jmsbridge.origin"] == "b"
    assert published.reply is not None
    assert way_back(published.reply, "b", KEY, NOW) == WayBack(
        requester, "ID:m-1", "ask"
    )  # no JMSCorrelationID
    with pytest.raises(ValueError, match="expired"):  # no time to live: the longest wait, then no more
        way_back(published.reply, "b", KEY, NOW + LONGEST_WAIT_SECONDS + CLOCK_SKEW_SECONDS + 1)
    one_way = to_nats(journal_entry(dataclasses.replace(message, reply_to=None)), route, "b", KEY, NOW)
    assert one_way.reply is None


def test_jms_to_nats_subjects_take_no_wildcards() -> None:
    spec = {"bridgeRef": {"name": "b"}, "direction": "jmsToNats", "natsSubject": "svc.>"}
    with pytest.raises(ValueError, match="wildcards"):
        JmsBridgeRouteSpec.model_validate(spec)


def test_a_message_this_bridge_published_from_a_destination_is_a_loop_back_to_it() -> None:
    out = Route(
        name="out",
        spec=JmsBridgeRouteSpec.model_validate(
            {"bridgeRef": {"name": "b"}, "direction": "jmsToNats", "natsSubject": "svc.a"}
        ),
    )
    svc = Destination(DestinationKind.QUEUE, "svc")
    sent = to_nats(journal_entry(JmsMessage(svc, body="x")), out, "b", KEY, NOW)
    published = NatsMessage(sent.subject, sent.data, headers=sent.headers)  # as a subscription gets it
    assert nats_loop_mark(published, svc, "b", KEY) is LoopMark.LOOP
    assert nats_loop_mark(published, Destination(DestinationKind.QUEUE, "other"), "b", KEY) is LoopMark.NONE
    assert nats_loop_mark(published, svc, "another-bridge", KEY) is LoopMark.NONE
    assert nats_loop_mark(NatsMessage("svc.a", b"x"), svc, "b", KEY) is LoopMark.NONE
