"""Which routes a bridge takes, and why it refuses the others (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from jmsbridge_operator.acceptance import judge_routes

from bridge_job.config import JmsBridge
from bridge_job.config.validation import address_problem, addresses_overlap
from testbed.resources import simple_bridge
from tests.operator.helpers import route


def judged(*routes: dict[str, Any], bridge: dict[str, Any] | None = None) -> dict[str, tuple[bool, str, str]]:
    model = JmsBridge.model_validate(bridge or simple_bridge())
    judgement = judge_routes("simple", model, list(routes), namespace="apps")
    return {name: (v.accepted, v.reason, v.message) for name, v in judgement.verdicts.items()}


def created(body: dict[str, Any], when: str) -> dict[str, Any]:
    body["metadata"]["creationTimestamp"] = when
    return body


def test_accepted_routes_are_ordered_by_order_then_name() -> None:
    model = JmsBridge.model_validate(simple_bridge())
    ingress: dict[str, Any] = {"direction": "kafkaToJms", "jmsDestination": {"queue": "q"}}
    routes = [route("b", order=5), route("a", order=5, **ingress), route("c", order=1)]
    judgement = judge_routes("simple", model, routes)
    assert [r.metadata.name for r in judgement.accepted] == ["c", "a", "b"]
    assert judgement.verdicts["b"].position == 3


def test_unknown_bridge() -> None:
    judgement = judge_routes("ghost", None, [route("r", "ghost")], namespace="apps")
    verdict = judgement.verdicts["r"]
    assert (verdict.accepted, verdict.reason) == (False, "BridgeNotFound")
    assert "JmsBridge ghost not found in namespace apps" in verdict.message


def test_duplicate_order_the_older_route_keeps_it() -> None:
    older = created(route("zz-old", order=10), "2026-01-01T00:00:00Z")
    newer = created(route("aa-new", order=10, topic="other"), "2026-01-02T00:00:00Z")
    verdicts = judged(newer, older)
    assert verdicts["zz-old"][:2] == (True, "Accepted")
    assert verdicts["aa-new"][:2] == (False, "DuplicateOrder")
    assert "order 10 is already taken by route zz-old" in verdicts["aa-new"][2]


def test_same_order_in_the_other_direction_is_fine() -> None:
    ingress = route("in", order=10, direction="kafkaToJms", jmsDestination={"queue": "q"})
    assert all(accepted for accepted, _, _ in judged(route("out", order=10), ingress).values())


@pytest.mark.parametrize(
    ("match", "message"),
    [
        ({"address": "in.*.x"}, "matches none of the bridge's sources"),  # sources have 2 segments
        ({"address": "in.ord*"}, "`*` and `>` stand for whole dot-separated segments"),
        ({"address": "in.>.x"}, "`>` must be the last segment"),
        ({"address": "elsewhere"}, "matches none of the bridge's sources (queue in.orders, queue in.prices)"),
        ({"destinationType": "topic"}, "the bridge consumes no topic"),
    ],
)
def test_invalid_match(match: dict[str, Any], message: str | None) -> None:
    verdict = judged(route("r", match=match))["r"]
    assert verdict[:2] == (False, "InvalidMatch")
    if message:
        assert message in verdict[2]


@pytest.mark.parametrize("address", ["in.orders", "in.*", "in.>", ">", "*.prices"])
def test_matching_addresses_are_accepted(address: str) -> None:
    assert judged(route("r", match={"address": address, "destinationType": "queue"}))["r"][0]


def test_kafka_to_jms_matches_its_source_topics() -> None:
    ok = route(
        "in",
        direction="kafkaToJms",
        jmsDestination={"queue": "q"},
        topic="acks.eu",
        match={"address": "acks.*"},
    )
    bad = route(
        "bad", order=20, direction="kafkaToJms", jmsDestination={"queue": "q"}, match={"address": "x"}
    )
    typed = route(
        "typed",
        order=30,
        direction="kafkaToJms",
        jmsDestination={"queue": "q"},
        match={"destinationType": "queue"},
    )
    verdicts = judged(ok, bad, typed)
    assert verdicts["in"][0]
    assert verdicts["bad"][:2] == (False, "InvalidMatch")
    assert verdicts["typed"][2] == "match.destinationType applies to jmsToKafka and jmsToNats routes only"


def test_invalid_route_spec_names_the_field() -> None:
    bad = route("r", kafkaTopic="no spaces allowed", key={"header": "a", "property": "b"})
    verdict = judged(bad)["r"]
    assert verdict[:2] == (False, "InvalidSpec")
    assert "spec.kafkaTopic" in verdict[2] and "spec.key" in verdict[2]


def test_dead_letter_needs_the_bridge_topic() -> None:
    verdict = judged(route("r", onSoftFailure="deadLetter"))["r"]
    assert verdict == (
        False,
        "InvalidSpec",
        "onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic",
    )
    with_topic = simple_bridge()
    with_topic["spec"]["routing"] = {"deadLetterTopic": "dlq"}
    assert judged(route("r", onSoftFailure="deadLetter"), bridge=with_topic)["r"][0]


def test_a_kafka_topic_pattern_takes_whole_segments() -> None:
    ingress: dict[str, Any] = {"direction": "kafkaToJms", "jmsDestination": {"queue": "q"}}
    verdict = judged(route("r", topic="events.a*", **ingress))["r"]
    assert verdict == (
        False,
        "InvalidSpec",
        "kafkaTopic 'events.a*': `*` and `>` stand for whole dot-separated segments",
    )
    assert judged(route("r", topic="events.*", **ingress))["r"][0]


def test_a_request_route_needs_the_bridge_reply_queue() -> None:
    requests: dict[str, Any] = {"direction": "kafkaToJms", "jmsDestination": {"queue": "svc"}}
    requests["reply"] = {"topics": ["answers"]}
    verdict = judged(route("r", **requests))["r"]
    assert verdict == (
        False,
        "InvalidSpec",
        "reply needs the bridge's spec.jms.replyQueue, the queue JMS services answer on",
    )
    with_queue = simple_bridge()
    jms = with_queue["spec"]["jms"]
    jms["sources"] = [*jms["sources"], {"queue": "replies"}]
    jms["replyQueue"] = "replies"
    assert judged(route("r", **requests), bridge=with_queue)["r"][0]


def test_a_nats_route_needs_the_bridge_nats_servers() -> None:
    """Refused alone, at its direction: the bridge and its other routes carry on."""
    nats_route = route("n", direction="natsToJms", natsSubject="svc.>", jmsDestination={"queue": "q"})
    del nats_route["spec"]["kafkaTopic"]
    verdicts = judged(nats_route, route("r"))
    assert verdicts["n"] == (
        False,
        "InvalidSpec",
        "direction natsToJms needs the bridge's spec.nats, the NATS servers it talks to",
    )
    assert verdicts["r"][0]
    with_nats = simple_bridge()
    with_nats["spec"]["nats"] = {"servers": ["nats://127.0.0.1:4222"]}
    assert judged(nats_route, bridge=with_nats)["n"][0]


def test_invalid_bridge_holds_its_routes_without_blaming_them() -> None:
    judgement = judge_routes("simple", None, [route("r")], bridge_invalid=True)
    verdict = judgement.verdicts["r"]
    assert (verdict.reason, verdict.stalls) == ("BridgeInvalid", False)


def test_wildcards() -> None:
    assert address_problem("a.*.c") is None and address_problem("a.>") is None
    assert addresses_overlap("a.*.c", "a.b.c") and not addresses_overlap("a.*.c", "a.b.d")
    assert addresses_overlap("a.>", "a.b.c") and addresses_overlap("a.>", "a")
    assert addresses_overlap("a.*", "*.b") and not addresses_overlap("a.*", "a")
