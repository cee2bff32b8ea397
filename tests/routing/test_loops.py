"""The JMS loop mark cannot be forged to make the egress drop a message (pure: ingress writes, egress reads).

Any JMS producer may set the properties the ingress marks its messages with: `JmsBridgeOrigin` naming the
bridge and `KafkaTopic` (or `NatsSubject`) naming where the route writes. Without the MAC the ingress
sets (`JmsBridgeOriginMac`) such a message is published like any other, and the bridge says once that it
saw such a mark; what the ingress itself sent from that topic or subject is still a loop.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest

from bridge_job.config import JmsBridgeRoute
from bridge_job.egress.converting import Action, Egress
from bridge_job.formats import KafkaRecord
from bridge_job.formats.journal import JournalEntry
from bridge_job.ingress.converting import Ingress, IngressAction, IngressRecord, KafkaSource
from bridge_job.message import BodyType, Destination, DestinationKind, JmsMessage, Property
from bridge_job.nats.message import NatsMessage
from bridge_job.nats_service.converting import to_jms
from bridge_job.routing.loops import (
    KAFKA_TOPIC_PROPERTY,
    ORIGIN_MAC_PROPERTY,
    ORIGIN_PROPERTY,
    loop_mark,
    signed,
)
from bridge_job.signing import LoopMark, bridge_key, mac
from testbed.builders import config, route

NOW = 1_700_000_000_000
OUT = Destination(DestinationKind.QUEUE, "out")


def pair() -> Any:
    """Routes both ways on bridge `orders`: topic `t` -> queue `out` -> topic `t`."""
    egress = route("out", "t", match={"address": "out"})
    ingress = route("in", "t", direction="kafkaToJms", jmsDestination={"queue": "out"})
    return config(egress, ingress)


def nats_pair() -> Any:
    """Routes both ways on bridge `orders`: subject `svc.a` -> queue `out` -> subject `svc.a`."""

    def a_route(name: str, **spec: Any) -> JmsBridgeRoute:
        return JmsBridgeRoute.model_validate(
            {
                "apiVersion": "jmsbridge.dev/v1alpha1",
                "kind": "JmsBridgeRoute",
                "metadata": {"name": name},
                "spec": {"bridgeRef": {"name": "orders"}, "natsSubject": "svc.a", **spec},
            }
        )

    egress = a_route("out", direction="jmsToNats", match={"address": "out"})
    ingress = a_route("in", direction="natsToJms", jmsDestination={"queue": "out"})
    return config(egress, ingress, nats={"servers": ["nats://127.0.0.1:4222"]})


def journalled(message: JmsMessage) -> JournalEntry:
    """A message sent to queue `out`, as the ingest journals it when the broker delivers it."""
    return JournalEntry.of(dataclasses.replace(message, message_id="ID:1"), partition=0, offset=3)


def from_kafka(cfg: Any, value: bytes) -> JmsMessage:
    """What the bridge's ingress sends to queue `out` for a record of topic `t`."""
    outcome = Ingress(cfg).handle(IngressRecord(KafkaRecord(value, []), KafkaSource("t", 0, 9, NOW)), NOW)
    assert outcome.action is IngressAction.SEND and outcome.message is not None, outcome
    return outcome.message


def claiming(body: str, **properties: str) -> JmsMessage:
    """A JMS producer's message to queue `out` that claims the bridge's mark for topic `t`."""
    mark = {ORIGIN_PROPERTY: "orders", KAFKA_TOPIC_PROPERTY: "t"} | properties
    return JmsMessage(OUT, body=body, properties={k: Property.string(v) for k, v in mark.items()})


def test_what_the_ingress_sent_from_the_topic_is_a_loop() -> None:
    cfg = pair()
    sent = from_kafka(cfg, b"from kafka")
    assert ORIGIN_MAC_PROPERTY in sent.properties
    assert Egress(cfg).handle(journalled(sent)).action is Action.LOOP


def test_what_the_ingress_sent_from_a_nats_subject_is_a_loop() -> None:
    cfg = nats_pair()
    ingress = next(r for r in cfg.routes if r.name == "in")
    sent = to_jms(NatsMessage("svc.a", b"from nats"), ingress, "orders", bridge_key(), NOW)
    assert Egress(cfg).handle(journalled(sent)).action is Action.LOOP
    copied = dataclasses.replace(sent, body="another body")  # the mark copied onto another message
    assert Egress(cfg).handle(journalled(copied)).action is Action.NATS


def test_a_forged_mark_without_a_mac_is_published_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    egress = Egress(pair())
    with caplog.at_level(logging.WARNING, "jmsbridge.signing"):
        assert egress.handle(journalled(claiming("drop me"))).action is Action.PUBLISH
        assert egress.handle(journalled(claiming("and me"))).action is Action.PUBLISH
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1, warned  # rate-limited: a flood of forgeries is not a flood of lines
    assert "not dropped as loops" in warned[0] and "message ID:1 from queue://out" in warned[0]
    assert egress.loops.forged.seen_total == 2


@pytest.mark.parametrize(
    "forged_mac",
    [
        "AAAAAAAAAAAAAAAAAAAAAA",  # made up
        mac(b"a key of the attacker's", b"jms-origin", b"orders", b"t", b"drop me"),
        "",
    ],
)
def test_a_forged_mark_with_a_wrong_mac_is_published(forged_mac: str) -> None:
    forged = claiming("drop me", **{ORIGIN_MAC_PROPERTY: forged_mac})
    assert Egress(pair()).handle(journalled(forged)).action is Action.PUBLISH


def test_a_genuine_mac_does_not_vouch_for_another_body_or_topic() -> None:
    """A JMS producer that reads the queue copies a genuine message's mark onto its own."""
    cfg = pair()
    genuine = from_kafka(cfg, b"from kafka")
    assert (
        Egress(cfg).handle(journalled(dataclasses.replace(genuine, body="drop me"))).action is Action.PUBLISH
    )
    to_u = config(route("out", "u", match={"address": "out"}))
    retopiced = genuine.properties | {KAFKA_TOPIC_PROPERTY: Property.string("u")}
    moved = dataclasses.replace(genuine, properties=retopiced)
    assert Egress(to_u).handle(journalled(moved)).action is Action.PUBLISH


@pytest.mark.parametrize(
    ("body_type", "body"),
    [
        (BodyType.TEXT, "text, ünïcode"),
        (BodyType.TEXT, ""),
        (BodyType.TEXT, None),
        (BodyType.BYTES, b"\xff\x00 bytes"),
        (BodyType.BYTES, b""),
        (BodyType.MESSAGE, None),
    ],
)
def test_the_mac_covers_the_body_as_the_journal_holds_it(
    body_type: BodyType, body: str | bytes | None
) -> None:
    """Text as UTF-8, bytes as they are, none as empty: what the ingress signs is what the egress reads."""
    message = dataclasses.replace(claiming("x"), body_type=body_type, body=body)
    entry = journalled(signed(message, KAFKA_TOPIC_PROPERTY, bridge_key()))
    assert loop_mark(entry, KAFKA_TOPIC_PROPERTY, "t", "orders", bridge_key()) is LoopMark.LOOP
    assert loop_mark(entry, KAFKA_TOPIC_PROPERTY, "u", "orders", bridge_key()) is LoopMark.NONE
    assert loop_mark(entry, KAFKA_TOPIC_PROPERTY, "t", "billing", bridge_key()) is LoopMark.NONE
    assert loop_mark(entry, KAFKA_TOPIC_PROPERTY, "t", "orders", b"another key") is LoopMark.FORGED
