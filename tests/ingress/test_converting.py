"""Kafka -> JMS conversion (pure): routing, destinations, loops, overrides, requests and their replies."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from bridge_job.config import DEFAULT_REPLY_TIMEOUT_SECONDS, Format, JobConfig
from bridge_job.egress.converting import Action, Egress
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord, jsonmode, native
from bridge_job.formats.codecs import registered
from bridge_job.formats.journal import JournalEntry
from bridge_job.ingress.converting import (
    Ingress,
    IngressAction,
    IngressOutcome,
    IngressRecord,
    KafkaSource,
)
from bridge_job.ingress.source import place_new, read_topics
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    JmsMessage,
    Property,
    PropertyType,
)
from bridge_job.routing.failures import SoftFailureReason
from bridge_job.routing.pending import PendingRequest, pending_record, tombstone
from bridge_job.signing import bridge_key
from testbed.builders import config, route
from tests.support.registered import IDS, KAFKA, Registered

NOW = 1_700_000_000_000
TARGET = Destination(DestinationKind.QUEUE, "out")


def ingress_route(name: str = "in", topic: str = "t", **spec: Any) -> Any:
    body: dict[str, Any] = {"direction": "kafkaToJms", "jmsDestination": {"queue": "out"}} | spec
    return route(name, topic, **body)


def handle(
    cfg: JobConfig,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None = None,
    key: bytes | None = None,
) -> IngressOutcome:
    record = IngressRecord(KafkaRecord(value, headers or [], key), KafkaSource("t", 2, 41, NOW - 5))
    return Ingress(cfg).handle(record, NOW)


def sent(outcome: IngressOutcome) -> JmsMessage:
    assert outcome.action is IngressAction.SEND, outcome
    assert outcome.message is not None
    return outcome.message


def test_a_plain_record_is_text_when_utf8_else_bytes_with_its_coordinates() -> None:
    cfg = config(ingress_route())
    text = sent(handle(cfg, "grüße".encode(), key=b"k-1"))
    assert (text.destination, text.body_type, text.body) == (TARGET, BodyType.TEXT, "grüße")
    assert text.properties["KafkaTopic"] == Property.string("t")
    assert text.properties["KafkaPartition"] == Property(PropertyType.LONG, 2)
    assert text.properties["KafkaOffset"] == Property(PropertyType.LONG, 41)
    assert text.properties["KafkaTimestamp"] == Property(PropertyType.LONG, NOW - 5)
    assert text.properties["KafkaKey"] == Property.string("k-1")
    assert text.properties["JmsBridgeOrigin"] == Property.string("orders")
    assert text.properties["_AMQ_DUPL_ID"] == Property.string("orders:t:2:41")
    binary = sent(handle(cfg, b"\xff\xfe", key=b"\xff"))
    assert (binary.body_type, binary.body) == (BodyType.BYTES, b"\xff\xfe")
    assert "KafkaKey" not in binary.properties


def test_native_records_keep_typed_properties_and_go_to_the_route_destination() -> None:
    original = JmsMessage(
        Destination(DestinationKind.TOPIC, "elsewhere"),
        body=b"\x00",
        body_type=BodyType.BYTES,
        correlation_id="c",
        priority=8,
        delivery_mode=DeliveryMode.NON_PERSISTENT,
        redelivered=True,
        properties={"n": Property(PropertyType.SHORT, 5), "f": Property(PropertyType.FLOAT, 0.25)},
    )
    record = native.encode(original)
    message = sent(handle(config(ingress_route()), record.value, record.headers))
    assert message.destination == TARGET
    assert (message.body_type, message.body, message.correlation_id) == (BodyType.BYTES, b"\x00", "c")
    assert (message.priority, message.delivery_mode, message.redelivered) == (
        8,
        DeliveryMode.NON_PERSISTENT,
        False,
    )
    assert message.properties["n"] == Property(PropertyType.SHORT, 5)
    assert message.properties["f"] == Property(PropertyType.FLOAT, 0.25)


def test_the_json_format_decodes_the_document() -> None:
    record = jsonmode.encode(JmsMessage(TARGET, body="hi", properties={"x": Property.of(3)}))
    message = sent(handle(config(ingress_route(format="json")), record.value, record.headers))
    assert (message.body, message.properties["x"]) == ("hi", Property.of(3))


def test_send_overrides_delivery_mode_priority_and_time_to_live() -> None:
    overrides = {"deliveryMode": "nonPersistent", "priority": 9, "timeToLiveMs": 60_000}
    message = sent(handle(config(ingress_route(send=overrides)), b"x"))
    assert (message.delivery_mode, message.priority, message.expiration) == (
        DeliveryMode.NON_PERSISTENT,
        9,
        NOW + 60_000,
    )
    assert sent(handle(config(ingress_route(send={"timeToLiveMs": 0})), b"x")).expiration == 0


def test_destination_from_a_header_and_the_reply_header_is_not_passed_on() -> None:
    cfg = config(ingress_route(jmsDestination={"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"}))
    message = sent(handle(cfg, b"answer", [("jms.JMSReplyTo", b"queue://ID:temp-1")]))
    assert message.destination == Destination(DestinationKind.QUEUE, "ID:temp-1")
    assert message.reply_to is None


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ([], "header jms.JMSReplyTo is not set"),
        ([("jms.JMSReplyTo", b"nowhere")], "queue://NAME or topic://NAME"),
    ],
)
def test_a_missing_or_bad_destination_header_is_a_soft_failure(
    headers: list[tuple[str, bytes]], error: str
) -> None:
    cfg = config(
        ingress_route(
            jmsDestination={"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"}, onSoftFailure="skip"
        )
    )
    outcome = handle(cfg, b"answer", headers)
    assert outcome.action is IngressAction.SKIP and outcome.failure is not None
    assert outcome.failure.reason.value == "NoDestination" and error in outcome.failure.error


def test_a_reply_to_a_destination_outside_allowed_follows_the_policy_and_is_not_sent() -> None:
    """A record on a reply route names any destination it likes: `allowed` keeps it to the requesters'
    temporary queues (security issue 43)."""
    cfg = config(
        ingress_route(jmsDestination={"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"}),
        routing={"onSoftFailure": "deadLetter", "deadLetterTopic": "dlq"},
    )
    outcome = handle(cfg, b"rm -rf", [("jms.JMSReplyTo", b"queue://admin.commands")])
    assert outcome.action is IngressAction.DEAD_LETTER and outcome.message is None
    assert outcome.dead_letter is not None
    assert outcome.dead_letter.header("jmsbridge.deadletter.reason") == b"DestinationNotAllowed"
    error = outcome.dead_letter.header("jmsbridge.deadletter.error") or b""
    assert b"'queue://admin.commands' is outside the route's jmsDestination.allowed: queue://ID:.*" in error


def signed_headers(origin: str, destination: bytes, value: bytes) -> list[tuple[str, bytes]]:
    """The loop mark as a bridge with this process's key writes it."""
    headers = [("jmsbridge.origin", origin.encode()), ("jms.JMSDestination", destination)]
    return native.signed(KafkaRecord(value, headers), origin, bridge_key()).headers


def test_a_record_this_bridge_took_from_the_target_is_a_loop() -> None:
    cfg = config(ingress_route())
    from_target = signed_headers("orders", b"queue://out", b"x")
    assert handle(cfg, b"x", from_target).action is IngressAction.LOOP
    from_elsewhere = signed_headers("orders", b"queue://in", b"x")
    assert handle(cfg, b"x", from_elsewhere).action is IngressAction.SEND
    other_bridge = signed_headers("billing", b"queue://out", b"x")
    assert handle(cfg, b"x", other_bridge).action is IngressAction.SEND


def test_egress_does_not_send_an_ingress_message_back_to_its_topic() -> None:
    cfg = config(route("out", "t"), ingress_route())
    message = sent(handle(cfg, b"x"))  # what ingress sent to queue://out, now journalled from there
    received = dataclasses.replace(message, message_id="ID:1")  # as the broker delivers it
    entry = JournalEntry(native.encode(received), 0, 0, NOW)
    assert Egress(cfg).handle(entry).action is Action.LOOP
    elsewhere = config(route("out", "u"), ingress_route())
    assert Egress(elsewhere).handle(entry).action is Action.PUBLISH


def test_match_headers_pick_the_route_and_no_match_is_a_soft_failure() -> None:
    cfg = config(
        ingress_route("eu", order=1, match={"headers": {"region": "eu"}}, jmsDestination={"queue": "eu"}),
        ingress_route("us", order=2, match={"headers": {"region": "us"}}, jmsDestination={"queue": "us"}),
        routing={"onSoftFailure": "skip"},
    )
    assert sent(handle(cfg, b"x", [("region", b"us")])).destination.name == "us"
    assert sent(handle(cfg, b"x", [("jms.region", b"eu")])).destination.name == "eu"
    none = handle(cfg, b"x", [("region", b"asia")])
    assert none.action is IngressAction.SKIP and none.failure is not None
    assert none.failure.reason.value == "NoRoute"


def test_an_illegal_property_name_is_dead_lettered_with_its_reason() -> None:
    cfg = config(ingress_route(), routing={"onSoftFailure": "deadLetter", "deadLetterTopic": "dlq"})
    outcome = handle(cfg, b"x", [("jms.not-an-identifier", b"1")])
    assert outcome.action is IngressAction.DEAD_LETTER and outcome.dead_letter is not None
    letter = outcome.dead_letter
    assert letter.header("jmsbridge.deadletter.reason") == b"ConversionFailed"
    assert letter.header("jmsbridge.deadletter.source") == b"t/2"
    assert letter.header("jmsbridge.deadletter.offset") == b"41"
    assert letter.header("jmsbridge.deadletter.route") == b"in"
    assert letter.value == b"x"


def requests_config() -> JobConfig:
    jms = {
        "connectionFactory": {"className": "org.apache.activemq.ActiveMQConnectionFactory"},
        "sources": [{"queue": "orders.in"}, {"queue": "replies"}],
        "replyQueue": "replies",
    }
    return config(ingress_route(reply={"topics": ["answers"]}), route("out", "t"), jms=jms)


def test_a_request_names_its_reply_topic_in_the_correlation_id() -> None:
    cfg = requests_config()
    by_header = sent(
        handle(cfg, b"q", [("jmsbridge.replyTopic", b"answers"), ("jms.JMSCorrelationID", b"c1")])
    )
    assert by_header.reply_to == Destination(DestinationKind.QUEUE, "replies")
    assert by_header.correlation_id == "answers/c1"
    assert (
        sent(handle(cfg, b"q", [("jmsbridge.replyTopic", b"answers")], key=b"k")).correlation_id
        == "answers/k"
    )
    assert sent(handle(cfg, b"q", [("jmsbridge.replyTopic", b"answers")])).correlation_id == "answers/t:2:41"
    assert sent(handle(cfg, b"q")).reply_to is None  # no reply topic: a one-way message
    refused = handle(cfg, b"q", [("jmsbridge.replyTopic", b"elsewhere")])
    assert refused.failure is not None and refused.failure.reason.value == "ReplyTopicRefused"


def test_the_answer_on_the_reply_queue_goes_to_the_topic_it_names() -> None:
    cfg = requests_config()
    replies = Destination(DestinationKind.QUEUE, "replies")
    answer = native.encode(JmsMessage(replies, body="a", message_id="ID:9", correlation_id="answers/c1"))
    outcome = Egress(cfg).handle(JournalEntry(answer, 0, 0, NOW))
    assert (outcome.action, outcome.topic, outcome.route) == (Action.PUBLISH, "answers", "in")
    assert outcome.record is not None
    assert outcome.record.key == b"c1" and outcome.record.header("jms.JMSCorrelationID") == b"c1"
    for correlation in ("no-topic", "elsewhere/c1"):
        stray = native.encode(JmsMessage(replies, body="a", message_id="ID:9", correlation_id=correlation))
        failed = Egress(cfg).handle(JournalEntry(stray, 0, 0, NOW))
        assert failed.action is Action.FAIL and failed.failure is not None
        assert failed.failure.reason.value == "NoRoute"


def test_new_partitions_are_placed_before_they_are_read() -> None:
    start = {"a:0": 5}
    low = {"a:0": 0, "a:1": 2, "b:0": 3, "c:0": 1}
    high = {"a:0": 9, "a:1": 7, "b:0": 8, "c:0": 6}
    # A partition added to a topic being read starts at its beginning; a new topic at its route's choice.
    assert place_new(start, low, high, earliest=["c"]) == {"a:1": 2, "b:0": 8, "c:0": 1}
    assert place_new({}, {"ev.x:0": 1}, {"ev.x:0": 4}, earliest=["ev.*"]) == {"ev.x:0": 1}
    # A topic a pattern in effect finds later was created since: read from its start, whatever the route says.
    assert place_new({"ev.x:0": 4}, {"ev.y:0": 0}, {"ev.y:0": 3}, earliest=[]) == {"ev.y:0": 3}
    assert place_new({"/ev.*": 0}, {"ev.y:0": 0}, {"ev.y:0": 3}, earliest=[]) == {"ev.y:0": 0}


def test_a_pattern_reads_every_topic_it_matches() -> None:
    cfg = config(ingress_route("named", "t", order=1), ingress_route("events", "ev.*", order=2))
    existing = ["t", "ev.a", "ev.b", "ev.a.deep", "other", "__consumer_offsets"]
    assert read_topics(cfg, existing) == ["ev.a", "ev.b", "t"]
    with pytest.raises(BridgeStopped, match="topic t, read by a kafkaToJms route, does not exist"):
        read_topics(cfg, ["ev.a"])
    ingress = Ingress(cfg)
    record = IngressRecord(KafkaRecord(b"x"), KafkaSource("ev.b", 0, 0, NOW))
    assert Ingress(cfg).route(record) is not None and ingress.table.routes_of("ev.b")[0].name == "events"
    assert ingress.table.routes_of("ev.a.deep") == ()


def message_id_requests_config(policy: str = "fail", **reply: Any) -> JobConfig:
    jms = {
        "connectionFactory": {"className": "org.apache.activemq.ActiveMQConnectionFactory"},
        "sources": [{"queue": "orders.in"}, {"queue": "replies"}],
        "replyQueue": "replies",
    }
    spec = {"topics": ["answers"], "correlation": "messageId"} | reply
    requests = ingress_route(reply=spec, onSoftFailure=policy)
    return config(requests, route("out", "t"), jms=jms, bridgeId="b")


def test_a_message_id_request_keeps_the_requester_correlation_id_and_is_remembered() -> None:
    cfg = message_id_requests_config(timeoutSeconds=30)
    outcome = handle(cfg, b"q", [("jmsbridge.replyTopic", b"answers"), ("jms.JMSCorrelationID", b"c1")])
    message = sent(outcome)
    assert message.reply_to == Destination(DestinationKind.QUEUE, "replies")
    assert message.correlation_id == "c1"  # the service answers with the message id: nothing to carry
    assert outcome.request == PendingRequest("answers", "c1", NOW + 30_000, "in")
    keyed = handle(cfg, b"q", [("jmsbridge.replyTopic", b"answers")], key=b"k")
    assert keyed.request is not None and keyed.request.correlation_id == "k"
    assert keyed.request.deadline_ms == NOW + 30_000
    assert handle(cfg, b"q").request is None  # no reply topic: a one-way message
    default = message_id_requests_config()
    outcome = handle(default, b"q", [("jmsbridge.replyTopic", b"answers")], key=b"k")
    assert outcome.request is not None
    assert outcome.request.deadline_ms == NOW + DEFAULT_REPLY_TIMEOUT_SECONDS * 1000
    assert handle(requests_config(), b"q", [("jmsbridge.replyTopic", b"answers")]).request is None


def answer_entry(correlation: str | None, taken_ms: int = NOW) -> JournalEntry:
    replies = Destination(DestinationKind.QUEUE, "replies")
    message = JmsMessage(replies, body="a", message_id="ID:answer", correlation_id=correlation)
    return JournalEntry(native.encode(message), 0, 0, taken_ms)


def test_a_message_id_answer_goes_to_its_pending_request_and_tombstones_it() -> None:
    cfg = message_id_requests_config("skip")
    entry = pending_record("ID:req-1", PendingRequest("answers", "c1", NOW + 1_000, "in")).value
    asked: list[str] = []

    def lookup(message_id: str) -> bytes | None:
        asked.append(message_id)
        return entry if message_id == "ID:req-1" else None

    egress = Egress(cfg, pending=lookup)
    outcome = egress.handle(answer_entry("ID:req-1"))
    assert (outcome.action, outcome.topic, outcome.route) == (Action.PUBLISH, "answers", "in")
    assert outcome.record is not None
    assert outcome.record.key == b"c1" and outcome.record.header("jms.JMSCorrelationID") == b"c1"
    assert outcome.also == (("b.jms-bridge.pending", tombstone("ID:req-1")),)
    late = egress.handle(answer_entry("ID:req-1", taken_ms=NOW + 1_001))  # taken by the journal too late
    assert late.action is Action.SKIP and late.failure is not None
    assert late.failure.reason is SoftFailureReason.REPLY_EXPIRED and "1 ms after" in late.failure.error
    assert late.also == outcome.also  # expired: forgotten too
    unknown = egress.handle(answer_entry("ID:other"))  # no route known: the bridge's policy (fail)
    assert (unknown.action, unknown.route) == (Action.FAIL, None) and unknown.failure is not None
    assert unknown.failure.reason is SoftFailureReason.UNKNOWN_REQUEST and unknown.also == ()
    assert asked == ["ID:req-1", "ID:req-1", "ID:other"]
    # a correlation-id answer on the same reply queue needs no lookup
    assert egress.handle(answer_entry("answers/c9")).action is Action.PUBLISH and len(asked) == 3


def test_an_expired_answer_follows_its_route_policy() -> None:
    cfg = message_id_requests_config("fail")
    entry = pending_record("ID:req-1", PendingRequest("answers", "c1", NOW - 1, "in")).value
    outcome = Egress(cfg, pending=lambda _: entry).handle(answer_entry("ID:req-1"))
    assert (outcome.action, outcome.route) == (Action.FAIL, "in")


def test_without_a_message_id_route_no_pending_request_is_looked_up() -> None:
    def lookup(message_id: str) -> bytes | None:
        raise AssertionError("looked up")

    outcome = Egress(requests_config(), pending=lookup).handle(answer_entry("ID:req-1"))
    assert outcome.failure is not None and outcome.failure.reason is SoftFailureReason.NO_ROUTE


def test_a_reply_to_a_jms_requester_may_carry_the_request_message_id_as_correlation_id() -> None:
    cfg = config(
        ingress_route(
            jmsDestination={"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"},
            send={"correlation": "messageId"},
        ),
        bridgeId="b",
    )
    headers = [("jms.JMSReplyTo", b"queue://ID:temp-1"), ("jms.JMSMessageID", b"ID:req-7")]
    message = sent(handle(cfg, b"answer", [*headers, ("jms.JMSCorrelationID", b"theirs")]))
    assert message.correlation_id == "ID:req-7"
    skip = config(
        ingress_route(
            jmsDestination={"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"},
            send={"correlation": "messageId"},
            onSoftFailure="skip",
        )
    )
    missing = handle(skip, b"answer", [("jms.JMSReplyTo", b"queue://ID:temp-1")])
    assert missing.action is IngressAction.SKIP and missing.failure is not None
    assert "jms.JMSMessageID" in missing.failure.error


@pytest.mark.parametrize("fmt", [Format.AVRO, Format.JSON_SCHEMA], ids=["avro", "jsonSchema"])
def test_a_registered_record_comes_back_and_one_that_does_not_decode_is_a_soft_failure(fmt: Format) -> None:
    cfg = config(ingress_route(format=fmt.value, onSoftFailure="skip"), kafka=KAFKA)
    message = JmsMessage(
        TARGET, body="hello", message_id="ID:9", properties={"n": Property(PropertyType.INT, 3)}
    )
    good = registered(fmt).encode(message, None, IDS[fmt])
    ingress = Ingress(cfg, Registered())
    source = KafkaSource("t", 2, 41, NOW - 5)
    got = sent(ingress.handle(IngressRecord(good, source), NOW))
    assert got.body == "hello" and got.properties["n"] == Property(PropertyType.INT, 3)
    outcome = ingress.handle(IngressRecord(KafkaRecord(b'{"plain": "json"}'), source), NOW)
    assert outcome.action is IngressAction.SKIP and outcome.failure is not None
    assert outcome.failure.reason is SoftFailureReason.CONVERSION_FAILED
    wire = "not in the schema registry's wire format (a zero byte, then a 4-byte schema id)"
    assert outcome.failure.error == f"format {fmt.value}: value: {wire}"
