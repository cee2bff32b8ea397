"""The loop mark cannot be forged to make the bridge drop a record (pure: egress writes, ingress reads).

A producer to the bridge's topics, or a NATS client, writes the headers a loop mark has: `jmsbridge.origin`
naming the bridge and `jms.JMSDestination` naming the destination the route sends to. Without the MAC the
bridge writes (`jmsbridge.origin.mac`) the record is delivered like any other, and the bridge says once
that it saw such a mark; what the bridge itself wrote from that destination is still a loop.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bridge_job.egress.converting import Action, Egress
from bridge_job.formats import KafkaRecord, native
from bridge_job.formats.journal import JournalEntry
from bridge_job.ingress.converting import Ingress, IngressAction, IngressRecord, KafkaSource
from bridge_job.message import Destination, DestinationKind, JmsMessage
from bridge_job.nats.message import NatsMessage
from bridge_job.nats_service.converting import nats_loop_mark
from bridge_job.signing import LoopMark, mac
from testbed.builders import config, route

NOW = 1_700_000_000_000
OUT = Destination(DestinationKind.QUEUE, "out")
MARK = [("jmsbridge.origin", b"orders"), ("jms.JMSDestination", b"queue://out")]  # bridge `orders`


def pair(fmt: str = "native") -> Any:
    """Routes both ways on bridge `orders`: queue `out` -> topic `t` -> queue `out`."""
    egress = route("out", "t", match={"address": "out"}, format=fmt)
    ingress = route("in", "t", direction="kafkaToJms", jmsDestination={"queue": "out"}, format=fmt)
    return config(egress, ingress)


def written(cfg: Any, body: str = "from jms") -> KafkaRecord:
    """What the bridge's egress writes to Kafka for a message taken from queue `out`."""
    message = JmsMessage(OUT, body=body, message_id="ID:1")
    outcome = Egress(cfg).handle(JournalEntry(native.encode(message), 0, 3, NOW))
    assert outcome.action is Action.PUBLISH and outcome.record is not None, outcome
    return outcome.record


def ingress(cfg: Any, record: KafkaRecord, ingress: Ingress | None = None) -> IngressAction:
    read = IngressRecord(record, KafkaSource("t", 0, 9, NOW))
    return (ingress or Ingress(cfg)).handle(read, NOW).action


@pytest.mark.parametrize("fmt", ["native", "envelope"])  # the formats that name the JMS destination
def test_what_the_bridge_wrote_from_the_destination_is_still_a_loop(fmt: str) -> None:
    cfg = pair(fmt)
    record = written(cfg)
    assert record.header("jmsbridge.origin.mac") is not None
    assert ingress(cfg, record) is IngressAction.LOOP


def test_a_forged_mark_without_a_mac_is_delivered_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    cfg = pair()
    reader = Ingress(cfg)
    with caplog.at_level(logging.WARNING, "jmsbridge.signing"):
        assert ingress(cfg, KafkaRecord(b"drop me", MARK), reader) is IngressAction.SEND
        assert ingress(cfg, KafkaRecord(b"and me", MARK), reader) is IngressAction.SEND
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1, warned  # rate-limited: a flood of forgeries is not a flood of lines
    assert "not dropped as loops" in warned[0] and "record t/0@9" in warned[0]
    assert reader.loops.forged.seen_total == 2


@pytest.mark.parametrize(
    "forged_mac",
    [
        b"AAAAAAAAAAAAAAAAAAAAAA",  # made up
        mac(b"a key of the attacker's", b"origin", b"orders", b"queue://out", b"drop me").encode(),
        b"",
        b"\xff\xfe",  # not even text
    ],
)
def test_a_forged_mark_with_a_wrong_mac_is_delivered(forged_mac: bytes) -> None:
    record = KafkaRecord(b"drop me", [*MARK, ("jmsbridge.origin.mac", forged_mac)])
    assert ingress(pair(), record) is IngressAction.SEND


def test_a_genuine_mac_does_not_vouch_for_another_value_or_destination() -> None:
    """A replicator, or an attacker who reads the topic, copies a genuine record's mark onto its own."""
    cfg = pair()
    genuine = written(cfg)
    other_value = KafkaRecord(b"drop me", genuine.headers, genuine.key)
    assert ingress(cfg, other_value) is IngressAction.SEND
    retargeted = route("in", "t", direction="kafkaToJms", jmsDestination={"queue": "payments"})
    headers = [(k, b"queue://payments" if k == "jms.JMSDestination" else v) for k, v in genuine.headers]
    assert ingress(config(retargeted), KafkaRecord(genuine.value, headers)) is IngressAction.SEND


def test_the_bridges_answers_to_kafka_requesters_carry_the_mark_too() -> None:
    """An answer on the reply queue goes to the topic its JMSCorrelationID names (routing/replies.py)."""
    requests = route(
        "ask", "t", direction="kafkaToJms", jmsDestination={"queue": "svc"}, reply={"topics": ["r"]}
    )
    jms = {
        "connectionFactory": {"className": "org.apache.activemq.ActiveMQConnectionFactory"},
        "sources": [{"queue": "replies"}],
        "replyQueue": "replies",
    }
    cfg = config(requests, jms=jms)
    answer = JmsMessage(Destination(DestinationKind.QUEUE, "replies"), body="re", correlation_id="r/c-1")
    outcome = Egress(cfg).handle(JournalEntry(native.encode(answer), 0, 4, NOW))
    assert outcome.action is Action.PUBLISH and outcome.record is not None, outcome
    mark = native.loop_mark(
        outcome.record, Destination(DestinationKind.QUEUE, "replies"), "orders", Egress(cfg).key
    )
    assert mark is LoopMark.LOOP


def test_a_nats_message_with_a_forged_mark_is_no_loop() -> None:
    key = Egress(pair()).key
    headers = {k: v.decode() for k, v in MARK}
    assert nats_loop_mark(NatsMessage("svc.a", b"x", headers=headers), OUT, "orders", key) is LoopMark.FORGED
    wrong = headers | {"jmsbridge.origin.mac": "AAAAAAAAAAAAAAAAAAAAAA"}
    assert nats_loop_mark(NatsMessage("svc.a", b"x", headers=wrong), OUT, "orders", key) is LoopMark.FORGED
    record = native.signed(KafkaRecord(b"x", MARK), "orders", key)
    genuine = {k: v.decode() for k, v in record.headers}
    assert nats_loop_mark(NatsMessage("svc.a", b"x", headers=genuine), OUT, "orders", key) is LoopMark.LOOP
    assert nats_loop_mark(NatsMessage("svc.a", b"y", headers=genuine), OUT, "orders", key) is LoopMark.FORGED
